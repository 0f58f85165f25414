#include "gpucomm/patterns/fabric.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <numeric>
#include <tuple>

#include "gpucomm/core/error.hpp"

namespace gpucomm::patterns {

namespace {

bool same_switch(const topology::Link& l) {
  return l.type == topology::LinkType::nvlink ||
         (l.type == topology::LinkType::pcie && (l.label == "PIX" || l.label == "PXB"));
}

int find(std::vector<int>& parent, int x) {
  while (parent[static_cast<size_t>(x)] != x)
    x = parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
  return x;
}

}  // namespace

ResourceId Fabric::add_resource(std::string name, double gbps, double contention, bool link) {
  names_.push_back(std::move(name));
  gbps_.push_back(gbps);
  contention_.push_back(contention);
  link_.push_back(link ? 1 : 0);
  return static_cast<ResourceId>(names_.size() - 1);
}

double Fabric::nvlink_gbps(const topology::Link& l) const {
  const int links = l.nvlinks > 0 ? l.nvlinks : model_.nvlink_links_if_unknown;
  return links * model_.nvlink_gbps_per_link;
}

Fabric::Fabric(topology::Topology topo, std::vector<PeInfo> pes, CostModel model)
    : topo_(std::move(topo)), pes_(std::move(pes)), model_(model) {
  const int ngpu = static_cast<int>(topo_.gpus.size());
  for (size_t r = 0; r < pes_.size(); ++r) {
    if (pes_[r].device >= ngpu) {
      raise(Errc::invalid_argument, "patterns::Fabric",
            "rank " + std::to_string(r) + " drives GPU " + std::to_string(pes_[r].device) + ", the topology has " +
                std::to_string(ngpu));
    }
  }
  // Switch groups: GPUs joined by NVLink or by one PCIe switch.
  std::vector<int> parent(static_cast<size_t>(ngpu));
  std::iota(parent.begin(), parent.end(), 0);
  for (const auto& l : topo_.links)
    if (same_switch(l)) parent[static_cast<size_t>(find(parent, l.src))] = find(parent, l.dst);
  gpu_group_.resize(static_cast<size_t>(ngpu));
  std::vector<int> group_size(static_cast<size_t>(ngpu), 0), group_nvlink(static_cast<size_t>(ngpu), 0);
  for (int g = 0; g < ngpu; ++g) {
    gpu_group_[static_cast<size_t>(g)] = find(parent, g);
    ++group_size[static_cast<size_t>(gpu_group_[static_cast<size_t>(g)])];
  }
  for (const auto& l : topo_.links) {
    if (l.type == topology::LinkType::nvlink)
      group_nvlink[static_cast<size_t>(gpu_group_[static_cast<size_t>(l.src)])] = 1;
  }
  // Order: socket, then group (by its first GPU), then index.
  std::vector<int> order(static_cast<size_t>(ngpu));
  std::iota(order.begin(), order.end(), 0);
  auto numa = [&](int g) { return std::max(0, topo_.gpus[static_cast<size_t>(g)].numa_node); };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::tuple(numa(a), gpu_group_[static_cast<size_t>(a)], a) <
           std::tuple(numa(b), gpu_group_[static_cast<size_t>(b)], b);
  });
  gpu_rank_in_order_.resize(static_cast<size_t>(ngpu));
  for (int i = 0; i < ngpu; ++i) gpu_rank_in_order_[static_cast<size_t>(order[static_cast<size_t>(i)])] = i;

  const double pc = model_.pcie_contention;
  for (int g = 0; g < ngpu; ++g) {
    const std::string p = "gpu" + std::to_string(g);
    double nv = 0;
    for (const auto& l : topo_.links)
      if (l.src == g && l.type == topology::LinkType::nvlink) nv = std::max(nv, nvlink_gbps(l));
    nvl_out_.push_back(add_resource(p + ".nvlink.out", nv, 1.0, true));
    nvl_in_.push_back(add_resource(p + ".nvlink.in", nv, 1.0, true));
    pcie_up_.push_back(add_resource(p + ".pcie.up", model_.pcie_gbps, pc, true));
    pcie_down_.push_back(add_resource(p + ".pcie.down", model_.pcie_gbps, pc, true));
    hbm_.push_back(add_resource(p + ".memory", model_.hbm_copy_gbps, 1.0, false));
  }
  sw_up_.assign(static_cast<size_t>(ngpu), UINT32_MAX);
  sw_down_.assign(static_cast<size_t>(ngpu), UINT32_MAX);
  for (int g = 0; g < ngpu; ++g) {
    const int grp = gpu_group_[static_cast<size_t>(g)];
    if (grp != g || group_size[static_cast<size_t>(g)] < 2 || group_nvlink[static_cast<size_t>(g)]) continue;
    sw_up_[static_cast<size_t>(g)] =
        add_resource("switch" + std::to_string(g) + ".up", model_.switch_uplink_gbps, pc, true);
    sw_down_[static_cast<size_t>(g)] =
        add_resource("switch" + std::to_string(g) + ".down", model_.switch_uplink_gbps, pc, true);
  }
  for (size_t r = 0; r < pes_.size(); ++r)
    cpu_copy_.push_back(add_resource("rank" + std::to_string(r) + ".cpu", model_.host_copy_gbps, 1.0, false));
  int max_numa = 0;
  for (const auto& g : topo_.gpus) max_numa = std::max(max_numa, g.numa_node);
  if (max_numa > 0) {
    has_xsocket_ = true;
    xsocket_ = static_cast<ResourceId>(names_.size());
    for (int s = 0; s <= max_numa; ++s) {
      add_resource("socket" + std::to_string(s) + ".out", model_.xsocket_gbps, pc, true);
      add_resource("socket" + std::to_string(s) + ".in", model_.xsocket_gbps, pc, true);
    }
  }
}

int Fabric::gpu_of(int pe) const {
  return pes_.at(static_cast<size_t>(pe)).device;
}

Path Fabric::path(Endpoint src, Endpoint dst, int owner) const {
  Path p;
  const int gs = src.device ? gpu_of(src.pe) : -1, gd = dst.device ? gpu_of(dst.pe) : -1;
  auto push = [&](ResourceId r) {
    if (r != UINT32_MAX) p.resources.push_back(r);
  };
  if (gs < 0 && gd < 0) {  // a CPU copy, by the owner's CPU
    p.local = true;
    p.gbps = model_.host_copy_gbps;
    push(cpu_copy_.at(static_cast<size_t>(owner >= 0 ? owner : src.pe)));
    return p;
  }
  if ((src.device && gs < 0) || (dst.device && gd < 0)) {  // a GPU the topology does not list
    p.gbps = model_.pcie_gbps;
    p.local = src == dst;
    return p;
  }
  if (gs >= 0 && gs == gd) {
    p.local = true;
    p.gbps = model_.hbm_copy_gbps;
    push(hbm_[static_cast<size_t>(gs)]);
    return p;
  }
  const auto su = static_cast<size_t>(gs), du = static_cast<size_t>(gd);
  if (gs < 0) {  // host to GPU
    p.gbps = model_.pcie_gbps;
    push(sw_down_[static_cast<size_t>(gpu_group_[du])]);
    push(pcie_down_[du]);
    return p;
  }
  if (gd < 0) {  // GPU to host
    p.gbps = model_.pcie_gbps;
    push(pcie_up_[su]);
    push(sw_up_[static_cast<size_t>(gpu_group_[su])]);
    return p;
  }
  const topology::Link* l = topo_.link(gs, gd);
  if (l && l->type == topology::LinkType::nvlink) {
    p.gbps = nvlink_gbps(*l);
    push(nvl_out_[su]);
    push(nvl_in_[du]);
    return p;
  }
  p.gbps = model_.pcie_gbps;
  push(pcie_up_[su]);
  const int grp_s = gpu_group_[su], grp_d = gpu_group_[du];
  if (grp_s != grp_d) {
    push(sw_up_[static_cast<size_t>(grp_s)]);
    push(sw_down_[static_cast<size_t>(grp_d)]);
    const int ns = topo_.gpus[su].numa_node, nd = topo_.gpus[du].numa_node;
    if (has_xsocket_ && ns >= 0 && nd >= 0 && ns != nd) {
      push(xsocket_ + static_cast<ResourceId>(2 * ns));
      push(xsocket_ + static_cast<ResourceId>(2 * nd + 1));
      p.gbps = std::min(p.gbps, model_.xsocket_gbps);
    }
  }
  push(pcie_down_[du]);
  return p;
}

int Fabric::group(Endpoint e) const {
  if (!e.device) return -1 - pes_.at(static_cast<size_t>(e.pe)).node;
  const int g = gpu_of(e.pe);
  if (g < 0) return static_cast<int>(topo_.gpus.size()) + e.pe;  // an unlisted GPU: a group of its own
  return gpu_group_.at(static_cast<size_t>(g));
}

int Fabric::order(Endpoint e) const {
  const PeInfo& p = pes_.at(static_cast<size_t>(e.pe));
  const int ngpu = static_cast<int>(topo_.gpus.size());
  // Host memory (0), then GPUs by topological rank, then GPUs the topology does not list.
  const int gpu_rank = !e.device       ? 0
                       : p.device >= 0 ? gpu_rank_in_order_.at(static_cast<size_t>(p.device)) + 1
                                       : ngpu + 1;
  // node, then the rank above, then PE
  return (p.node * (ngpu + 2) + gpu_rank) * num_pes() + e.pe;
}

std::string Fabric::signature() const {
  std::string s = std::to_string(topo_.gpus.size()) + "g";
  for (const auto& l : topo_.links) s += l.label + ",";
  s += "|";
  for (const auto& p : pes_)
    s += std::to_string(p.node) + ":" + std::to_string(p.device) + (p.gpu_unlisted ? "g," : ",");
  char h[32];
  std::snprintf(h, sizeof h, "%016zx", std::hash<std::string>{}(s));
  return h;
}

topology::Topology nvlink_topology(int n, int links) {
  topology::Topology t;
  t.host = "synthetic";
  t.cuda_status = "ok";
  for (int i = 0; i < n; ++i) {
    topology::Gpu g;
    g.index = i;
    g.name = "synthetic";
    g.numa_node = 0;
    char bus[32];
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x10 + i);
    g.pci_bus_id = bus;
    t.gpus.push_back(g);
  }
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      topology::Link l;
      l.src = a;
      l.dst = b;
      l.peer_access = true;
      l.native_atomics = true;
      l.performance_rank = 0;
      l.type = topology::LinkType::nvlink;
      l.nvlinks = links;
      l.label = "NV" + std::to_string(links);
      l.source = "synthetic";
      t.links.push_back(l);
    }
  }
  return t;
}

topology::Topology pcie_tree_topology(int sockets, int switches_per_socket, int gpus_per_switch) {
  topology::Topology t = nvlink_topology(sockets * switches_per_socket * gpus_per_switch, 0);
  const int per_socket = switches_per_socket * gpus_per_switch;
  for (auto& g : t.gpus) g.numa_node = g.index / per_socket;
  for (auto& l : t.links) {
    l.type = topology::LinkType::pcie;
    l.nvlinks = 0;
    l.native_atomics = false;
    if (l.src / gpus_per_switch == l.dst / gpus_per_switch) {
      l.label = "PIX";
      l.performance_rank = 1;
    } else if (l.src / per_socket == l.dst / per_socket) {
      l.label = "NODE";
      l.performance_rank = 2;
    } else {
      l.label = "SYS";  // peer access across sockets, as some machines allow
      l.performance_rank = 3;
    }
  }
  return t;
}

std::vector<PeInfo> one_pe_per_gpu(const topology::Topology& t) {
  std::vector<PeInfo> pes;
  pes.reserve(t.gpus.size());
  for (size_t i = 0; i < t.gpus.size(); ++i) pes.push_back(PeInfo{0, static_cast<int>(i), false});
  return pes;
}

}  // namespace gpucomm::patterns
