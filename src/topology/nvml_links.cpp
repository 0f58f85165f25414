#include "nvml_links.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "gpucomm/core/log.hpp"
#include "pci_path.hpp"

namespace gpucomm::topology::detail {
namespace {

// Minimal NVML declarations (no nvml.h on build machines). Types and values follow NVIDIA's
// nvml.h (NVML API version 12, e.g. the copy in NVIDIA's go-nvml, pkg/nvml/nvml.h), where
// nvmlPciInfo_t has had this layout since CUDA 9 (pynvml's c_nvmlPciInfo_t agrees).
using nvmlReturn_t = int;                    // enum nvmlReturn_enum; 0 is NVML_SUCCESS
using nvmlDevice_t = struct nvmlDevice_st*;  // opaque handle
using nvmlEnableState_t = int;               // enum: NVML_FEATURE_DISABLED 0, NVML_FEATURE_ENABLED 1
using nvmlIntNvLinkDeviceType_t = int;       // enum: GPU 0, IBMNPU 1, SWITCH 2, UNKNOWN 0xFF
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlEnableState_t kFeatureEnabled = 1;
constexpr nvmlIntNvLinkDeviceType_t kNvLinkDeviceSwitch = 2;
constexpr nvmlIntNvLinkDeviceType_t kNvLinkDeviceUnknown = 0xFF;
constexpr unsigned kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS

constexpr int kBusIdBufferSize = 32;        // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
constexpr int kBusIdLegacyBufferSize = 16;  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
struct nvmlPciInfo_t {
  char busIdLegacy[kBusIdLegacyBufferSize];  // "dddd:bb:dd.f"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // device id << 16 | vendor id
  unsigned int pciSubSystemId;
  char busId[kBusIdBufferSize];  // "dddddddd:bb:dd.f"
};
static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t must match nvml.h");

struct Nvml {
  bool loaded = false;
  std::string note;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*handle_by_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*remote_type)(nvmlDevice_t, unsigned, nvmlIntNvLinkDeviceType_t*) = nullptr;  // optional

  std::string describe(nvmlReturn_t r) const {
    std::string s = "NVML error " + std::to_string(r);
    if (error_string)
      if (const char* t = error_string(r)) s += " (" + std::string(t) + ")";
    return s;
  }
};

template <class F>
bool resolve(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(::dlsym(lib, name));
  return *fn != nullptr;
}

// Loaded once per process and never unloaded: the library keeps its own state across
// nvmlInit/nvmlShutdown pairs.
const Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* err = ::dlerror();
      n.note = std::string("libnvidia-ml.so.1 not loadable") + (err ? ": " + std::string(err) : "");
      return;
    }
    const char* missing = nullptr;
    if (!resolve(lib, "nvmlInit_v2", &n.init)) {
      missing = "nvmlInit_v2";
    } else if (!resolve(lib, "nvmlShutdown", &n.shutdown)) {
      missing = "nvmlShutdown";
    } else if (!resolve(lib, "nvmlDeviceGetHandleByPciBusId_v2", &n.handle_by_bus_id)) {
      missing = "nvmlDeviceGetHandleByPciBusId_v2";
    } else if (!resolve(lib, "nvmlDeviceGetNvLinkState", &n.link_state)) {
      missing = "nvmlDeviceGetNvLinkState";
    } else if (!resolve(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &n.remote_pci)) {
      missing = "nvmlDeviceGetNvLinkRemotePciInfo_v2";
    }
    if (missing) {
      n.note = std::string("libnvidia-ml.so.1 lacks ") + missing;
      return;
    }
    resolve(lib, "nvmlErrorString", &n.error_string);
    resolve(lib, "nvmlDeviceGetNvLinkRemoteDeviceType", &n.remote_type);
    n.loaded = true;
  });
  return n;
}

// Counts the active links of one GPU into table row `i`.
void count_links(const Nvml& n, nvmlDevice_t dev, int i, const std::vector<std::string>& bus_ids, NvlinkTable* t) {
  for (unsigned link = 0; link < kMaxNvLinks; ++link) {
    nvmlEnableState_t active = 0;
    // Links a GPU does not have answer "not supported" or "invalid argument": skip them.
    if (n.link_state(dev, link, &active) != kNvmlSuccess || active != kFeatureEnabled) continue;
    nvmlPciInfo_t remote{};
    if (n.remote_pci(dev, link, &remote) != kNvmlSuccess) continue;
    std::string far = normalize_bus_id(std::string_view(remote.busId, strnlen(remote.busId, sizeof remote.busId)));
    auto it = std::find(bus_ids.begin(), bus_ids.end(), far);
    if (it != bus_ids.end()) {
      ++t->links[i][static_cast<size_t>(it - bus_ids.begin())];
      continue;
    }
    // Not one of our GPUs: an NVSwitch, or a GPU (or NPU) this process does not see. Only the
    // former links our GPUs. A far end of unknown type is a switch unless NVML knows it as a GPU.
    nvmlIntNvLinkDeviceType_t type = kNvLinkDeviceUnknown;
    if (n.remote_type && n.remote_type(dev, link, &type) != kNvmlSuccess) type = kNvLinkDeviceUnknown;
    if (type == kNvLinkDeviceUnknown) {
      nvmlDevice_t other = nullptr;
      if (!far.empty() && n.handle_by_bus_id(far.c_str(), &other) == kNvmlSuccess) continue;
      type = kNvLinkDeviceSwitch;
    }
    if (type == kNvLinkDeviceSwitch) ++t->switch_links[i];
  }
}

bool in_range(const NvlinkTable& t, int a, int b) {
  return t.available && a >= 0 && b >= 0 && static_cast<size_t>(a) < t.links.size() &&
         static_cast<size_t>(b) < t.links.size();
}

}  // namespace

int NvlinkTable::direct(int a, int b) const {
  return in_range(*this, a, b) ? links[a][b] : 0;
}

int NvlinkTable::via_switch(int a, int b) const {
  return in_range(*this, a, b) ? std::min(switch_links[a], switch_links[b]) : 0;
}

NvlinkTable query_nvlinks(const std::vector<std::string>& bus_ids) {
  NvlinkTable t;
  const Nvml& n = nvml();
  if (!n.loaded) {
    t.note = n.note;
    return t;
  }
  nvmlReturn_t r = n.init();
  if (r != kNvmlSuccess) {
    t.note = "nvmlInit_v2 failed: " + n.describe(r);
    return t;
  }
  t.available = true;
  t.links.assign(bus_ids.size(), std::vector<int>(bus_ids.size(), 0));
  t.switch_links.assign(bus_ids.size(), 0);
  for (size_t i = 0; i < bus_ids.size(); ++i) {
    nvmlDevice_t dev = nullptr;
    r = n.handle_by_bus_id(bus_ids[i].c_str(), &dev);
    if (r != kNvmlSuccess) {
      GPUCOMM_LOG(warn, "topology: NVML does not know GPU " << i << " at " << bus_ids[i] << ": " << n.describe(r)
                                                            << "; its NVLinks are not counted");
      continue;
    }
    count_links(n, dev, static_cast<int>(i), bus_ids, &t);
  }
  n.shutdown();
  return t;
}

}  // namespace gpucomm::topology::detail
