// Builds without CUDA kernels: the host API of GPU PEs says so.
#include "gpu_launch.hpp"

namespace gpucomm::coll::detail {

bool gpu_kernels_built() {
  return false;
}
cudaError_t preload_kernels() {
  return cudaErrorNotSupported;
}
cudaError_t launch(const DeviceHandle&, const CollHandle&, const Call&, unsigned, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t launch_alone_copy(void*, const void*, uint64_t, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t launch_alone_convert(DataType, void*, const void*, uint64_t, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t preload_alone() {
  return cudaErrorNotSupported;
}
cudaError_t launch_alltoallv_inline(const DeviceHandle&, const CollHandle&, const Call&, const uint64_t*,
                                    const uint64_t*, const uint64_t*, const uint64_t*, unsigned, cudaStream_t) {
  return cudaErrorNotSupported;
}

}  // namespace gpucomm::coll::detail
