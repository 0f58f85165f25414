#include "device_select.hpp"

#include <cuda_runtime_api.h>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/runtime/devices.hpp"

namespace gpucomm {

int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

}  // namespace gpucomm

namespace gpucomm::detail {

int select_device(const std::string& mode, int local_rank) {
  if (mode != "auto" && mode != "gpu" && mode != "host")
    raise_arg("Runtime", "GPUCOMM_DEVICE", "'" + mode + "' is not auto, gpu or host");
  if (mode == "host") return -1;
  int count = cuda_device_count();
  if (count == 0) {
    if (mode == "gpu") {
      raise(Errc::unsupported, "Runtime",
            "GPUCOMM_DEVICE=gpu, but no CUDA device is usable here (no GPU or no driver)");
    }
    return -1;
  }
  int64_t id = env::get_int("GPUCOMM_DEVICE_ID", -1);
  if (id < 0) id = (local_rank < 0 ? 0 : local_rank) % count;
  if (id >= count) {
    raise_arg("Runtime", "GPUCOMM_DEVICE_ID",
              std::to_string(id) + " is not below the " + std::to_string(count) + " visible GPUs");
  }
  return static_cast<int>(id);
}

void activate_device(int device) {
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaFree(nullptr);
  if (e != cudaSuccess)
    raise(Errc::cuda, "Runtime", "cannot use GPU " + std::to_string(device) + ": " + cudaGetErrorString(e));
}

}  // namespace gpucomm::detail
