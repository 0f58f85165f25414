// A stand-in for libnvidia-ml.so.1 (built with that soname) describing three GPUs:
// GPU 0 and GPU 1 joined by 18 NVLinks, GPU 2 with 4 links to an NVSwitch and 2 to a GPU that
// the test does not list. Layouts follow nvml.h; only what gpucomm calls is provided.
#include <charconv>
#include <cstdio>
#include <cstring>

namespace {
struct PciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
const char* const kGpus[] = {"00000000:1B:00.0", "00000000:43:00.0", "00000000:9A:00.0"};
const char* const kHiddenGpu = "00000000:C1:00.0";
const char* const kSwitch = "00000000:05:00.0";
int g_initialized = 0;

// Which device a link of GPU g reaches; nullptr when the link is down.
const char* far_end(long g, unsigned link) {
  if (g == 0 && link < 18) return kGpus[1];
  if (g == 1 && link < 18) return kGpus[0];
  if (g == 2 && link < 4) return kSwitch;
  if (g == 2 && link >= 4 && link < 6) return kHiddenGpu;
  return nullptr;
}
long index_of(void* dev) {
  return reinterpret_cast<long>(dev) - 1;
}
// Splits a bus id DOMAIN:BUS:DEVICE.FUNCTION (hex fields) into its fields; false when `text` is
// not one.
bool parse_bus_id(const char* text, unsigned (&field)[4]) {
  const char separator[3] = {':', ':', '.'};
  const char* p = text;
  const char* const last = text + std::strlen(text);
  for (int i = 0; i < 4; ++i) {
    auto [stop, ec] = std::from_chars(p, last, field[i], 16);
    if (ec != std::errc()) return false;
    if (i == 3) return stop == last;
    if (stop == last || *stop != separator[i]) return false;
    p = stop + 1;
  }
  return false;
}
}  // namespace

extern "C" {
int nvmlInit_v2() {
  ++g_initialized;
  return 0;
}
int nvmlShutdown() {
  return g_initialized-- > 0 ? 0 : 1;
}
const char* nvmlErrorString(int) {
  return "fake";
}

int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** dev) {
  if (!g_initialized) return 1;
  unsigned field[4] = {};  // domain, bus, device, function
  if (!parse_bus_id(bus, field)) return 2;
  const unsigned buses[] = {0x1b, 0x43, 0x9a, 0xc1};
  for (long i = 0; i < 4; ++i) {
    if (field[0] == 0 && field[1] == buses[i] && field[2] == 0 && field[3] == 0) {
      *dev = reinterpret_cast<void*>(i + 1);
      return 0;
    }
  }
  return 6;  // NVML_ERROR_NOT_FOUND
}

int nvmlDeviceGetNvLinkState(void* dev, unsigned link, int* active) {
  if (link >= 18) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *active = far_end(index_of(dev), link) ? 1 : 0;
  return 0;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* dev, unsigned link, PciInfo* pci) {
  const char* far = far_end(index_of(dev), link);
  if (!far) return 3;  // NVML_ERROR_NOT_SUPPORTED
  std::memset(pci, 0, sizeof *pci);
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", far + 4);
  std::snprintf(pci->busId, sizeof pci->busId, "%s", far);
  return 0;
}

int nvmlDeviceGetNvLinkRemoteDeviceType(void* dev, unsigned link, int* type) {
  const char* far = far_end(index_of(dev), link);
  if (!far) return 3;
  *type = far == kSwitch ? 2 : 0;  // NVML_NVLINK_DEVICE_TYPE_SWITCH / _GPU
  return 0;
}
}
