#pragma once
// What this node offers for communication: its GPUs, how each ordered pair of GPUs is
// connected (NVLink with its link count, a PCIe path, or no peer access), and where each GPU
// sits relative to the CPUs (NUMA node, CPU affinity). Plain data, filled by detect().
#include <cstdint>
#include <string>
#include <vector>

namespace gpucomm::topology {

struct Gpu {
  int index = 0;  // CUDA runtime device index (after CUDA_VISIBLE_DEVICES)
  std::string name;
  std::string pci_bus_id;  // lowercase "dddd:bb:dd.f", the form /sys/bus/pci/devices uses
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it
  int cc_major = 0;        // compute capability
  int cc_minor = 0;
  int sm_count = 0;
  uint64_t memory_bytes = 0;
  uint64_t l2_bytes = 0;
  int numa_node = -1;        // -1: unknown
  std::string cpu_affinity;  // CPU list ("0-47,96-143"); empty when unreadable
};

enum class LinkType { none, pcie, nvlink };

// How data moves from GPU `src` to GPU `dst`.
struct Link {
  int src = 0;
  int dst = 0;
  bool peer_access = false;     // cudaDeviceCanAccessPeer(src, dst)
  bool native_atomics = false;  // cudaDevP2PAttrNativeAtomicSupported
  int performance_rank = -1;    // cudaDevP2PAttrPerformanceRank; lower is faster; -1 unknown
  // nvlink: NVLink (direct or through NVSwitch); pcie: peer access over PCIe; none: no peer access.
  LinkType type = LinkType::none;
  int nvlinks = 0;  // active NVLink links between the two (0 when unknown)
  // nvidia-smi topo style: "NV18", "NV" (NVLink, count unknown), "PIX", "PXB", "PHB", "NODE",
  // "SYS", or "PCIe" where the PCIe path could not be read.
  std::string label;
  // Where the link type comes from: "nvml", or "p2p" (CUDA P2P attributes only, NVML missing).
  std::string source;
};

struct Topology {
  std::string host;
  int driver_version = 0;   // cudaDriverGetVersion, 0 without a driver
  int runtime_version = 0;  // cudaRuntimeGetVersion (the statically linked runtime)
  // "ok", "no driver", "no device", or the CUDA error that stopped detection.
  std::string cuda_status;
  bool nvml_available = false;
  std::string nvml_note;  // why NVML is missing, or what it was used for
  std::vector<Gpu> gpus;
  std::vector<Link> links;  // every ordered pair src != dst, sorted by (src, dst)

  // The link from src to dst, or nullptr for src == dst or out-of-range indices.
  const Link* link(int src, int dst) const;
};

// Inspects this machine. Never fails for a missing driver or GPU: that gives zero GPUs and
// cuda_status says why. CUDA failures after devices were found raise gpucomm::Error (Errc::cuda).
Topology detect();

// "13.0" for 13000; "no driver" for 0.
std::string cuda_version_string(int version);
const char* link_type_name(LinkType t) noexcept;

// One JSON object (compact, UTF-8) with keys host, cuda, nvml, gpus, links.
std::string to_json(const Topology& t);
// A readable report: a GPU table and a matrix of the pairs like `nvidia-smi topo -m`.
std::string to_text(const Topology& t);

}  // namespace gpucomm::topology
