// Topology detection through the CUDA runtime, NVML (NVLink counts) and sysfs (NUMA, PCIe).
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <climits>
#include <cstdio>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/topology/topology.hpp"
#include "nvml_links.hpp"
#include "pci_path.hpp"

namespace gpucomm::topology {
namespace {

constexpr const char* kSysfs = "/sys";

std::string cuda_error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

// CUDA failures once devices were found are real errors.
void check(cudaError_t e, const std::string& call) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();  // clear it so later calls do not report it again
  raise(Errc::cuda, call, cuda_error_text(e));
}

std::string host_name() {
  std::string over = env::get_string("GPUCOMM_HOSTNAME", "");
  if (!over.empty()) return over;
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string format_uuid(const cudaUUID_t& u) {
  // nvidia-smi form: GPU-8-4-4-4-12 hex digits.
  std::string s = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(u.bytes[i]));
    s += hex;
  }
  return s;
}

// Number of visible devices, or 0 with t->cuda_status saying why there are none.
int count_devices(Topology* t) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0) {
    t->cuda_status = "ok";
    return n;
  }
  (void)cudaGetLastError();
  if (e == cudaSuccess || e == cudaErrorNoDevice) {
    t->cuda_status = "no device";
  } else if (e == cudaErrorInsufficientDriver && t->driver_version == 0) {
    t->cuda_status = "no driver";
  } else {
    // An old driver, a stub library, a driver/library mismatch: report it and carry on with
    // host-memory PEs rather than fail here.
    t->cuda_status = "cudaGetDeviceCount failed: " + cuda_error_text(e);
    GPUCOMM_LOG(warn, "topology: " << t->cuda_status << "; no GPU is used");
  }
  return 0;
}

Gpu describe_gpu(int i) {
  Gpu g;
  g.index = i;
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, i), "cudaGetDeviceProperties(" + std::to_string(i) + ")");
  g.name = p.name;
  g.uuid = format_uuid(p.uuid);
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.sm_count = p.multiProcessorCount;
  g.memory_bytes = p.totalGlobalMem;
  g.l2_bytes = p.l2CacheSize > 0 ? static_cast<uint64_t>(p.l2CacheSize) : 0;
  char bus[32] = {};
  check(cudaDeviceGetPCIBusId(bus, sizeof bus, i), "cudaDeviceGetPCIBusId(" + std::to_string(i) + ")");
  g.pci_bus_id = detail::normalize_bus_id(bus);
  if (g.pci_bus_id.empty()) g.pci_bus_id = bus;
  g.numa_node = detail::read_numa_node(kSysfs, g.pci_bus_id);
  g.cpu_affinity = detail::read_cpu_list(kSysfs, g.pci_bus_id);
  return g;
}

int p2p_attribute(cudaDeviceP2PAttr attr, const char* name, int src, int dst) {
  int v = 0;
  check(cudaDeviceGetP2PAttribute(&v, attr, src, dst), std::string("cudaDeviceGetP2PAttribute(") + name + ", " +
                                                           std::to_string(src) + ", " + std::to_string(dst) + ")");
  return v;
}

Link describe_link(const Topology& t, const detail::NvlinkTable& nv, const std::vector<std::string>& paths, int src,
                   int dst) {
  Link l;
  l.src = src;
  l.dst = dst;
  int can = 0;
  check(cudaDeviceCanAccessPeer(&can, src, dst),
        "cudaDeviceCanAccessPeer(" + std::to_string(src) + ", " + std::to_string(dst) + ")");
  l.peer_access = can != 0;
  l.native_atomics = p2p_attribute(cudaDevP2PAttrNativeAtomicSupported, "NativeAtomicSupported", src, dst) != 0;
  l.performance_rank = p2p_attribute(cudaDevP2PAttrPerformanceRank, "PerformanceRank", src, dst);

  std::string pcie = detail::classify_pcie_path(paths[src], paths[dst], t.gpus[src].numa_node, t.gpus[dst].numa_node);
  if (pcie.empty()) pcie = "PCIe";
  if (nv.available) {
    l.source = "nvml";
    l.nvlinks = nv.direct(src, dst);
    if (l.nvlinks == 0 && l.peer_access) l.nvlinks = nv.via_switch(src, dst);
  } else {
    l.source = "p2p";
  }
  if (l.nvlinks > 0) {
    l.type = LinkType::nvlink;
    l.label = "NV" + std::to_string(l.nvlinks);
  } else if (!nv.available && l.peer_access && l.native_atomics) {
    // Without NVML: native peer atomics are offered over NVLink, not over PCIe.
    l.type = LinkType::nvlink;
    l.label = "NV";
  } else {
    l.type = l.peer_access ? LinkType::pcie : LinkType::none;
    l.label = pcie;
  }
  return l;
}

}  // namespace

const Link* Topology::link(int src, int dst) const {
  int n = static_cast<int>(gpus.size());
  if (src < 0 || dst < 0 || src >= n || dst >= n || src == dst) return nullptr;
  // links holds the ordered pairs row by row, skipping the diagonal.
  size_t at = static_cast<size_t>(src) * static_cast<size_t>(n - 1) + static_cast<size_t>(dst < src ? dst : dst - 1);
  return at < links.size() ? &links[at] : nullptr;
}

std::string cuda_version_string(int version) {
  if (version <= 0) return "no driver";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

const char* link_type_name(LinkType t) noexcept {
  switch (t) {
    case LinkType::none:
      return "none";
    case LinkType::pcie:
      return "pcie";
    case LinkType::nvlink:
      return "nvlink";
  }
  return "?";
}

Topology detect() {
  Topology t;
  t.host = host_name();
  check(cudaRuntimeGetVersion(&t.runtime_version), "cudaRuntimeGetVersion");
  // Without a driver this succeeds and reports 0.
  if (cudaDriverGetVersion(&t.driver_version) != cudaSuccess) {
    (void)cudaGetLastError();
    t.driver_version = 0;
  }
  int n = count_devices(&t);
  for (int i = 0; i < n; ++i) t.gpus.push_back(describe_gpu(i));
  if (n == 0) {
    t.nvml_note = "no GPU to query";
    return t;
  }

  std::vector<std::string> bus_ids, paths;
  for (const auto& g : t.gpus) {
    bus_ids.push_back(g.pci_bus_id);
    paths.push_back(detail::device_path(kSysfs, g.pci_bus_id));
  }
  detail::NvlinkTable nv = detail::query_nvlinks(bus_ids);
  t.nvml_available = nv.available;
  t.nvml_note = nv.available ? "NVLink counts from NVML" : nv.note + "; link types from CUDA P2P attributes only";
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d)
      if (s != d) t.links.push_back(describe_link(t, nv, paths, s, d));
  }
  return t;
}

}  // namespace gpucomm::topology
