// The kernel behind host-called messaging on GPU PEs (gpu_ops.hpp): one block runs an operation
// list (op_list.hpp) with the device protocol at block level.
#include "gpu_ops.hpp"
#include "gpucomm/messaging/device_backend_device.cuh"

namespace gpucomm::msg::detail {

namespace {

constexpr int kThreads = 512;

__global__ void __launch_bounds__(kThreads) ops_kernel(DeviceHandle h, StateView sv, OpList list) {
  // Earlier stream work (copies, kernels) is complete; this fence puts its writes ahead of what
  // the block publishes.
  mem::fence<mem::kSystem>(mem::seq_cst);
  run_ops(dev::DeviceBackend(h, sv, false), coop::Block{}, sv, list);
  // Statuses and received data are visible to later stream work and to the host.
  mem::fence<mem::kSystem>(mem::acq_rel);
}

}  // namespace

cudaError_t launch_ops(const DeviceHandle& h, const StateView& state, const OpList& ops, cudaStream_t s) {
  ops_kernel<<<1, kThreads, 0, s>>>(h, state, ops);
  return cudaGetLastError();
}

cudaError_t preload_ops() {
  cudaFuncAttributes a{};
  return cudaFuncGetAttributes(&a, ops_kernel);
}

}  // namespace gpucomm::msg::detail
