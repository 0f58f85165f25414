#pragma once
// Loads kernels now, ahead of their first launch (what cudaFuncGetAttributes does). CUDA loads a
// kernel's code at its first launch by default (lazy loading), and that load may wait until the
// kernels already running have finished: a kernel that must start beside a running kernel that
// waits for it (a service block, a proxy's agent, a collective's peers) is loaded ahead with this.
// CUDA_MODULE_LOADING=EAGER loads everything at start instead.
// It also raises the device's per-thread stack limit to what the kernels need: a launch that needs
// more stack than the limit grows it first, and growing it waits for the running kernels (the same
// trap as the lazy load).
#include <cuda_runtime_api.h>

#include <cstddef>

namespace gpucomm {

template <class... Kernel>
inline cudaError_t load_kernels(Kernel*... kernels) {
  size_t stack = 0;
  for (const void* k : {reinterpret_cast<const void*>(kernels)...}) {
    cudaFuncAttributes a{};
    if (const cudaError_t e = cudaFuncGetAttributes(&a, k); e != cudaSuccess) return e;
    if (a.localSizeBytes > stack) stack = a.localSizeBytes;
  }
  size_t cur = 0;
  if (const cudaError_t e = cudaDeviceGetLimit(&cur, cudaLimitStackSize); e != cudaSuccess) return e;
  if (stack > cur) return cudaDeviceSetLimit(cudaLimitStackSize, stack);
  return cudaSuccess;
}

}  // namespace gpucomm
