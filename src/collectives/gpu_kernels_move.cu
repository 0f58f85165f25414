// Kernels of the operations that move data (broadcast, allgather, alltoall, alltoallv, barrier),
// one per element size.
#include "gpu_kernels.cuh"

namespace gpucomm::coll::detail {

KernelFn movement_kernel_for(size_t elem) {
  switch (elem) {
    case 1:
      return movement_kernel<uint8_t>;
    case 2:
      return movement_kernel<uint16_t>;
    case 4:
      return movement_kernel<uint32_t>;
    default:
      return movement_kernel<uint64_t>;
  }
}

InlineKernelFn alltoallv_inline_kernel_for(size_t elem) {
  switch (elem) {
    case 1:
      return alltoallv_inline_kernel<uint8_t>;
    case 2:
      return alltoallv_inline_kernel<uint16_t>;
    case 4:
      return alltoallv_inline_kernel<uint32_t>;
    default:
      return alltoallv_inline_kernel<uint64_t>;
  }
}

cudaError_t preload_move() {
  for (size_t elem : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
    if (cudaError_t e = load_kernels(movement_kernel_for(elem), alltoallv_inline_kernel_for(elem)); e != cudaSuccess)
      return e;
  }
  return cudaSuccess;
}

}  // namespace gpucomm::coll::detail
