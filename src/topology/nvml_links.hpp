#pragma once
// NVLink counts between GPUs from NVML. NVML is loaded at run time (dlopen of
// libnvidia-ml.so.1), so gpucomm neither needs nvml.h to build nor the driver to load.
#include <string>
#include <vector>

namespace gpucomm::topology::detail {

struct NvlinkTable {
  bool available = false;  // NVML loaded and initialized
  std::string note;        // why NVML is not available
  // links[i][j]: active NVLink links of GPU i whose far end is GPU j.
  std::vector<std::vector<int>> links;
  // switch_links[i]: active NVLink links of GPU i whose far end is an NVSwitch (or a device
  // NVML cannot name, as seen from virtual machines whose switches the host manages).
  std::vector<int> switch_links;

  // Links from GPU a straight to GPU b.
  int direct(int a, int b) const;
  // Links a switched path between a and b can use: the fewer of the two GPUs' switch links.
  // Only meaningful where the two GPUs can reach each other (peer access).
  int via_switch(int a, int b) const;
};

// bus_ids: the GPUs in CUDA order, in normalize_bus_id() form.
NvlinkTable query_nvlinks(const std::vector<std::string>& bus_ids);

}  // namespace gpucomm::topology::detail
