#pragma once
// What the GPU models of the application suite share (docs/APPS.md): the grid barrier of the
// persistent kernels (every block of a cooperative launch resident), the number of blocks such a
// kernel may have on this GPU, and zeroed device allocations. Only for .cu files.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/device/gpucomm_device.cuh"

namespace gpucomm::apps::device {

// Every block of the (co-resident) grid: a device-scope counter bar[0] and generation bar[1] (zero
// at the first launch; the last block to arrive resets the counter), waited on with the library's
// timed wait (GPUCOMM_TIMEOUT names the word).
__device__ inline void grid_barrier(const DeviceHandle& h, uint32_t* bar) {
  mem::fence<mem::kDevice>(mem::acq_rel);
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t* count = bar;
    uint32_t* gen = bar + 1;
    const uint32_t g = mem::load<mem::kDevice>(gen, mem::acquire);
    if (mem::fetch_add<mem::kDevice>(count, 1u, mem::acq_rel) == gridDim.x - 1) {
      mem::store<mem::kDevice>(count, 0u, mem::relaxed);
      mem::store<mem::kDevice>(gen, g + 1, mem::release);
    } else {
      gpucomm::device::wait_until(coop::Thread{}, h, gen, Cmp::ne, g);
    }
  }
  __syncthreads();
}

// The most blocks of `threads` threads that are resident at once on GPU `dev` for every kernel of
// `kernels` (at most `max_per_sm` per SM).
inline unsigned resident_blocks(int dev, std::initializer_list<const void*> kernels, int threads, int max_per_sm) {
  int sms = 0, per_sm = max_per_sm;
  GPUCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  for (const void* k : kernels) {
    int n = 0;
    GPUCOMM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, threads, 0));
    per_sm = n < per_sm ? n : per_sm;
  }
  return static_cast<unsigned>(per_sm * sms);
}

// `count` zeroed elements of device memory (cudaFree releases them).
template <class T>
T* device_alloc(size_t count) {
  void* q = nullptr;
  GPUCOMM_CUDA_CHECK(cudaMalloc(&q, count * sizeof(T)));
  GPUCOMM_CUDA_CHECK(cudaMemset(q, 0, count * sizeof(T)));
  return static_cast<T*>(q);
}

// The times (us) of steps [warmup, steps) from CUDA events recorded between consecutive steps
// (ev[0] before the first step, ev[s + 1] after step s).
inline std::vector<double> event_step_us(const std::vector<cudaEvent_t>& ev, int warmup, int steps) {
  std::vector<double> out;
  for (int it = warmup; it < steps; ++it) {
    float ms = 0;
    GPUCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[static_cast<size_t>(it)], ev[static_cast<size_t>(it) + 1]));
    out.push_back(static_cast<double>(ms) * 1000.0);
  }
  return out;
}

// The times (us) of steps [warmup, steps) from global-timer stamps (ns) a persistent kernel wrote
// into device memory: times[0] before the first step, times[s + 1] after step s.
inline std::vector<double> timer_step_us(const uint64_t* device_times, int warmup, int steps) {
  std::vector<uint64_t> t(static_cast<size_t>(steps) + 1);
  GPUCOMM_CUDA_CHECK(cudaMemcpy(t.data(), device_times, t.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  std::vector<double> out;
  for (int it = warmup; it < steps; ++it)
    out.push_back(static_cast<double>(t[static_cast<size_t>(it) + 1] - t[static_cast<size_t>(it)]) / 1000.0);
  return out;
}

}  // namespace gpucomm::apps::device
