// Builds without the CUDA language (GPUCOMM_ENABLE_CUDA=OFF): GPU PEs have no kernels, so their
// one-sided operations report that instead of running.
#include "gpu_kernels.hpp"

namespace gpucomm::detail {

bool gpu_kernels_built() {
  return false;
}
cudaError_t preload_kernels() {
  return cudaSuccess;
}
cudaError_t launch_copy(void*, const void*, size_t, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t launch_signal(const DeviceHandle&, uint64_t*, uint64_t, SignalOp, int, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t launch_wait(const DeviceHandle&, uint64_t*, Cmp, uint64_t, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t launch_barrier(const DeviceHandle&, const TeamHandle&, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t launch_atomic(const DeviceHandle&, AtomicOp, unsigned, void*, uint64_t, uint64_t, int, uint64_t*,
                          cudaStream_t) {
  return cudaErrorNotSupported;
}

}  // namespace gpucomm::detail
