#pragma once
// Host-called messaging on GPU PEs: the operations (op_list.hpp) become one kernel (a block
// running the device protocol) on a stream. Blocking calls launch it on the Messenger's stream and
// synchronize; stream-ordered calls and groups only enqueue it (CUDA graphs can capture them:
// everything the kernel needs travels in its parameters). Builds without CUDA kernels get
// launchers that return cudaErrorNotSupported (gpu_ops_none.cpp).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpucomm/base/handle.hpp"
#include "gpucomm/messaging/layout.hpp"
#include "op_list.hpp"

namespace gpucomm::msg::detail {

cudaError_t launch_ops(const DeviceHandle& h, const StateView& state, const OpList& ops, cudaStream_t s);
// Loads the kernel now (lazy loading could otherwise load it while another kernel of the process
// waits for messaging progress).
cudaError_t preload_ops();

}  // namespace gpucomm::msg::detail
