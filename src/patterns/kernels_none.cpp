// Builds without CUDA kernels (GPUCOMM_ENABLE_CUDA=OFF): the launchers say so.
#include "kernels.hpp"

namespace gpucomm::patterns::detail {

bool kernels_built() {
  return false;
}

cudaError_t preload_kernels() {
  return cudaErrorNotSupported;
}

cudaError_t launch_fused(const FusedBatch&, int, cudaStream_t) {
  return cudaErrorNotSupported;
}

cudaError_t launch_sync(const DeviceHandle&, const SyncOp*, uint32_t, uint32_t, uint64_t*, uint64_t*, bool,
                        cudaStream_t) {
  return cudaErrorNotSupported;
}

}  // namespace gpucomm::patterns::detail
