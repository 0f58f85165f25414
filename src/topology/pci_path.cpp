#include "pci_path.hpp"

#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace gpucomm::topology::detail {
namespace {

bool parse_hex(std::string_view s, unsigned long max, unsigned long* out) {
  if (s.empty() || s.size() > 8) return false;
  unsigned long v = 0;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    v = v * 16 + static_cast<unsigned long>(std::isdigit(static_cast<unsigned char>(c))
                                                ? c - '0'
                                                : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
  }
  if (v > max) return false;
  *out = v;
  return true;
}

std::string read_trimmed(const std::string& file) {
  std::ifstream in(file);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string device_file(const std::string& sysfs_root, const std::string& bus_id, const char* name) {
  return sysfs_root + "/bus/pci/devices/" + bus_id + "/" + name;
}

std::vector<std::string_view> split_path(std::string_view p) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t next = p.find('/', pos);
    if (next == std::string_view::npos) next = p.size();
    if (next > pos) parts.push_back(p.substr(pos, next - pos));
    pos = next + 1;
  }
  return parts;
}

// The host bridge ("pci0000:00") and the PCI devices below it, the device itself last.
struct PciChain {
  std::string_view host_bridge;
  std::vector<std::string_view> devices;
};

bool parse_chain(std::string_view path, PciChain* out) {
  auto parts = split_path(path);
  size_t i = 0;
  while (i < parts.size() && !(parts[i].starts_with("pci") && parts[i].find(':') != std::string_view::npos)) ++i;
  if (i == parts.size()) return false;
  out->host_bridge = parts[i];
  out->devices.clear();
  for (++i; i < parts.size(); ++i) {
    if (normalize_bus_id(parts[i]).empty()) return false;
    out->devices.push_back(parts[i]);
  }
  return !out->devices.empty();
}

}  // namespace

std::string normalize_bus_id(std::string_view id) {
  // [domain:]bus:device.function
  size_t dot = id.rfind('.');
  if (dot == std::string_view::npos) return {};
  size_t c2 = id.rfind(':', dot);
  if (c2 == std::string_view::npos) return {};
  size_t c1 = c2 == 0 ? std::string_view::npos : id.rfind(':', c2 - 1);
  std::string_view dom = c1 == std::string_view::npos ? std::string_view("0") : id.substr(0, c1);
  std::string_view bus =
      id.substr(c1 == std::string_view::npos ? 0 : c1 + 1, c2 - (c1 == std::string_view::npos ? 0 : c1 + 1));
  std::string_view dev = id.substr(c2 + 1, dot - c2 - 1);
  std::string_view fn = id.substr(dot + 1);
  unsigned long d, b, v, f;
  if (!parse_hex(dom, 0xffffffffUL, &d) || !parse_hex(bus, 0xff, &b) || !parse_hex(dev, 0x1f, &v) ||
      !parse_hex(fn, 7, &f))
    return {};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lx:%02lx:%02lx.%lx", d, b, v, f);
  return buf;
}

int read_numa_node(const std::string& sysfs_root, const std::string& bus_id) {
  std::string s = read_trimmed(device_file(sysfs_root, bus_id, "numa_node"));
  if (s.empty()) return -1;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (*end || v < -1 || v > INT_MAX) return -1;
  return static_cast<int>(v);
}

std::string read_cpu_list(const std::string& sysfs_root, const std::string& bus_id) {
  return read_trimmed(device_file(sysfs_root, bus_id, "local_cpulist"));
}

std::string device_path(const std::string& sysfs_root, const std::string& bus_id) {
  std::string link = sysfs_root + "/bus/pci/devices/" + bus_id;
  char* resolved = ::realpath(link.c_str(), nullptr);
  if (!resolved) return {};
  std::string out(resolved);
  std::free(resolved);
  return out;
}

std::string classify_pcie_path(std::string_view path_a, std::string_view path_b, int numa_a, int numa_b) {
  PciChain a, b;
  if (!parse_chain(path_a, &a) || !parse_chain(path_b, &b)) return {};
  if (a.host_bridge != b.host_bridge) return numa_a >= 0 && numa_a == numa_b ? "NODE" : "SYS";
  // Bridges above each device (the device itself excluded) and how many of them both share.
  size_t above_a = a.devices.size() - 1, above_b = b.devices.size() - 1, common = 0;
  while (common < above_a && common < above_b && a.devices[common] == b.devices[common]) ++common;
  if (common == 0) return "PHB";
  // Below the last shared bridge each side passes one downstream port of the same switch
  // (PIX), or further bridges of other switches (PXB).
  return above_a - common <= 1 && above_b - common <= 1 ? "PIX" : "PXB";
}

}  // namespace gpucomm::topology::detail
