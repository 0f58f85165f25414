// Reduction kernels of the integer types (the reduction is a run-time argument).
#include "gpu_kernels.cuh"

namespace gpucomm::coll::detail {

KernelFn reduction_kernel_int(DataType dt) {
  switch (dt) {
    case DataType::i32:
      return reduction_kernel<DataType::i32>;
    case DataType::i64:
      return reduction_kernel<DataType::i64>;
    case DataType::u32:
      return reduction_kernel<DataType::u32>;
    case DataType::u64:
      return reduction_kernel<DataType::u64>;
    default:
      return nullptr;
  }
}

cudaError_t preload_int() {
  for (DataType dt : {DataType::i32, DataType::i64, DataType::u32, DataType::u64}) {
    if (cudaError_t e = load_kernels(reduction_kernel_int(dt)); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace gpucomm::coll::detail
