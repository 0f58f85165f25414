// Builds without CUDA kernels: host-called messaging on GPU PEs is unavailable (host-memory PEs
// run the protocol on the host and need no kernel).
#include "gpu_ops.hpp"

namespace gpucomm::msg::detail {

cudaError_t launch_ops(const DeviceHandle&, const StateView&, const OpList&, cudaStream_t) {
  return cudaErrorNotSupported;
}
cudaError_t preload_ops() {
  return cudaSuccess;
}

}  // namespace gpucomm::msg::detail
