#pragma once
// Loads kernels now, ahead of their first launch (what cudaFuncGetAttributes does). CUDA loads a
// kernel's code at its first launch by default (lazy loading), and that load may wait until the
// kernels already running have finished: a kernel that must start beside a running kernel that
// waits for it (a service block, a proxy's agent, a collective's peers) is loaded ahead with this.
// CUDA_MODULE_LOADING=EAGER loads everything at start instead.
#include <cuda_runtime_api.h>

namespace gpucomm {

template <class... Kernel>
inline cudaError_t load_kernels(Kernel*... kernels) {
  cudaFuncAttributes a{};
  for (const void* k : {reinterpret_cast<const void*>(kernels)...})
    if (const cudaError_t e = cudaFuncGetAttributes(&a, k); e != cudaSuccess) return e;
  return cudaSuccess;
}

}  // namespace gpucomm
