// The topology as a readable report: a GPU table, a link matrix like `nvidia-smi topo -m`
// and one line per ordered pair with the CUDA peer attributes.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "gpucomm/topology/topology.hpp"

namespace gpucomm::topology {
namespace {

using Row = std::vector<std::string>;

// Left-aligned columns separated by two spaces; trailing blanks trimmed.
void write_table(std::ostringstream& os, const std::vector<Row>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  }
  for (const auto& r : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << '\n';
  }
}

std::string bytes_text(uint64_t b) {
  char buf[32];
  if (b >= (1ULL << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / static_cast<double>(1ULL << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(b) / static_cast<double>(1ULL << 20));
  }
  return buf;
}

std::string yes_no(bool b) {
  return b ? "yes" : "no";
}

void write_gpus(std::ostringstream& os, const Topology& t) {
  std::vector<Row> rows{{"GPU", "Name", "Bus id", "CC", "SMs", "Memory", "L2", "NUMA", "CPU affinity", "UUID"}};
  for (const auto& g : t.gpus) {
    rows.push_back({std::to_string(g.index), g.name, g.pci_bus_id,
                    std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor), std::to_string(g.sm_count),
                    bytes_text(g.memory_bytes), bytes_text(g.l2_bytes),
                    g.numa_node >= 0 ? std::to_string(g.numa_node) : "N/A",
                    g.cpu_affinity.empty() ? "N/A" : g.cpu_affinity, g.uuid});
  }
  write_table(os, rows);
}

void write_matrix(std::ostringstream& os, const Topology& t) {
  int n = static_cast<int>(t.gpus.size());
  Row header{""};
  for (int j = 0; j < n; ++j) header.push_back("GPU" + std::to_string(j));
  std::vector<Row> rows{header};
  for (int i = 0; i < n; ++i) {
    Row r{"GPU" + std::to_string(i)};
    for (int j = 0; j < n; ++j) {
      const Link* l = t.link(i, j);
      r.push_back(i == j ? "X" : l ? l->label : "?");
    }
    rows.push_back(r);
  }
  write_table(os, rows);
  os << "\n  X = self, NV# = NVLink with # links (NV = NVLink, count unknown), PIX = one PCIe switch,\n"
        "  PXB = several PCIe switches, PHB = PCIe host bridge, NODE = host bridges of one NUMA node,\n"
        "  SYS = across NUMA nodes, PCIe = PCIe path unknown\n";
}

void write_pairs(std::ostringstream& os, const Topology& t) {
  std::vector<Row> rows{{"Pair", "Type", "Peer access", "Native atomics", "P2P rank", "From"}};
  for (const auto& l : t.links) {
    rows.push_back({"GPU" + std::to_string(l.src) + " -> GPU" + std::to_string(l.dst),
                    std::string(link_type_name(l.type)) + (l.nvlinks > 0 ? " x" + std::to_string(l.nvlinks) : ""),
                    yes_no(l.peer_access), yes_no(l.native_atomics),
                    l.performance_rank >= 0 ? std::to_string(l.performance_rank) : "N/A", l.source});
  }
  write_table(os, rows);
}

}  // namespace

std::string to_text(const Topology& t) {
  std::ostringstream os;
  os << "Host: " << t.host << '\n';
  os << "CUDA driver: " << cuda_version_string(t.driver_version)
     << ", runtime: " << cuda_version_string(t.runtime_version) << " (" << t.cuda_status << ")\n";
  os << "NVML: " << (t.nvml_available ? "" : "not used: ") << t.nvml_note << '\n';
  if (t.gpus.empty()) {
    os << "GPUs: none (" << t.cuda_status << ")\n";
    return os.str();
  }
  os << "GPUs: " << t.gpus.size() << "\n\n";
  write_gpus(os, t);
  if (t.gpus.size() > 1) {
    os << "\nGPU links:\n\n";
    write_matrix(os, t);
    os << "\nPeer attributes:\n\n";
    write_pairs(os, t);
  }
  return os.str();
}

}  // namespace gpucomm::topology
