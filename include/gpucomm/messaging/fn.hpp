#pragma once
// How the messaging protocol is compiled for both sides: GPUCOMM_MSG_FN marks the functions of
// the protocol (templates over a memory backend, docs/MESSAGING.md) as host-and-device functions
// under nvcc and plain inline functions elsewhere. A template instantiated with the device backend
// is only ever called from device code, the host backend only from host code. Also the few bit
// helpers the protocol needs on both sides, and the memory orders a backend maps to its own.
#include <cstdint>

#if defined(__CUDACC__)
#define GPUCOMM_MSG_FN __host__ __device__ inline
// The protocol's large entry points (templates only) stay out of line on the device: inlined at
// every call site of every cooperation level they would make kernels huge and slow to compile.
#define GPUCOMM_MSG_OUTLINE __host__ __device__ __noinline__
#else
#define GPUCOMM_MSG_FN inline
#define GPUCOMM_MSG_OUTLINE inline
#endif

namespace gpucomm::msg {

// Orders of the backend's atomic accesses (mapped to cuda::memory_order or std::memory_order).
enum class Ord : uint32_t { relaxed, acquire, release, acq_rel };

// Index of the lowest set bit (v != 0).
GPUCOMM_MSG_FN uint32_t lowest_bit(uint64_t v) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__ffsll(static_cast<long long>(v)) - 1);
#else
  return static_cast<uint32_t>(__builtin_ctzll(v));
#endif
}

// Index of the highest set bit (v != 0).
GPUCOMM_MSG_FN uint32_t highest_bit(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return 31u - static_cast<uint32_t>(__clz(v));
#else
  return 31u - static_cast<uint32_t>(__builtin_clz(v));
#endif
}

GPUCOMM_MSG_FN uint32_t popcount(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__popc(v));
#else
  return static_cast<uint32_t>(__builtin_popcount(v));
#endif
}

template <class T>
GPUCOMM_MSG_FN T min_of(T a, T b) {
  return a < b ? a : b;
}

}  // namespace gpucomm::msg
