// Reduction kernels of the floating-point types (the reduction is a run-time argument).
#include "gpu_kernels.cuh"

namespace gpucomm::coll::detail {

KernelFn reduction_kernel_float(DataType dt) {
  switch (dt) {
    case DataType::f8e4m3:
      return reduction_kernel<DataType::f8e4m3>;
    case DataType::f8e5m2:
      return reduction_kernel<DataType::f8e5m2>;
    case DataType::f16:
      return reduction_kernel<DataType::f16>;
    case DataType::bf16:
      return reduction_kernel<DataType::bf16>;
    case DataType::f32:
      return reduction_kernel<DataType::f32>;
    case DataType::f64:
      return reduction_kernel<DataType::f64>;
    default:
      return nullptr;
  }
}

cudaError_t preload_float() {
  for (DataType dt :
       {DataType::f8e4m3, DataType::f8e5m2, DataType::f16, DataType::bf16, DataType::f32, DataType::f64}) {
    if (cudaError_t e = load_kernels(reduction_kernel_float(dt)); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace gpucomm::coll::detail
