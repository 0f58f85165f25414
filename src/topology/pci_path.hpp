#pragma once
// PCI bus ids and what Linux sysfs says about a PCI device: its NUMA node, its local CPUs, and
// the chain of bridges above it (from which the PCIe path between two GPUs is classified).
#include <string>
#include <string_view>

namespace gpucomm::topology::detail {

// "0000:1B:00.0", "00000000:1b:00.0" or "1b:00.0" -> "0000:1b:00.0" (the sysfs form: lowercase,
// domain of at least 4 hex digits). Returns "" for text that is not a bus id.
std::string normalize_bus_id(std::string_view id);

// <sysfs_root>/bus/pci/devices/<bus_id>/numa_node; -1 when missing or unreadable.
int read_numa_node(const std::string& sysfs_root, const std::string& bus_id);
// <sysfs_root>/bus/pci/devices/<bus_id>/local_cpulist, trimmed; "" when unreadable.
std::string read_cpu_list(const std::string& sysfs_root, const std::string& bus_id);
// The resolved device folder, e.g. "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
// "" when unreadable.
std::string device_path(const std::string& sysfs_root, const std::string& bus_id);

// The PCIe path between two devices given their resolved sysfs folders, in nvidia-smi's terms:
//   PIX  both sit below one PCIe switch;        PXB  several switches, no host bridge;
//   PHB  the path crosses a host bridge;        NODE different host bridges, same NUMA node;
//   SYS  different host bridges across NUMA nodes (or NUMA unknown).
// Returns "" when a path is not a PCI device folder.
std::string classify_pcie_path(std::string_view path_a, std::string_view path_b, int numa_a, int numa_b);

}  // namespace gpucomm::topology::detail
