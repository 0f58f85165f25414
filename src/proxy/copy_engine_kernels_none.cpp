// Builds without the CUDA language (GPUCOMM_ENABLE_CUDA=OFF): the copy-engine executor has no
// kernels, so its signals and atomics report that instead of running.
#include "copy_engine_kernels.hpp"

namespace gpucomm::proxy {

cudaError_t preload_copy_engine_kernels() {
  return cudaSuccess;
}
cudaError_t launch_signal_at(uint64_t*, uint64_t, SignalOp, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t launch_scatter(const ScatterWrite*, uint32_t, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t launch_atomic_at(AtomicOp, unsigned, void*, uint64_t, uint64_t, uint64_t*, cudaStream_t) {
  return cudaErrorNotSupported;
}

}  // namespace gpucomm::proxy
