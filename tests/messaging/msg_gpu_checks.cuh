#pragma once
// What the messaging GPU tests share: a failure report the kernels fill (count and first
// failure), the byte pattern of messages, which threads act for a cooperation level, and the
// message sizes across every protocol threshold; what a kernel that failed left behind.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/messenger.hpp"

namespace msg_checks {

using namespace gpucomm;

// What the kernels report: a failure count and the first failure.
struct Report {
  unsigned long long failures;
  int line, a, b;
  unsigned long long x, y;
};

__device__ inline void report(Report* r, int line, int a, int b, unsigned long long x, unsigned long long y) {
  if (atomicAdd(&r->failures, 1ull) == 0) {
    r->line = line;
    r->a = a;
    r->b = b;
    r->x = x;
    r->y = y;
  }
}
#define DCHECK(rep, cond, a, b, x, y)                       \
  do {                                                      \
    if (!(cond)) report(rep, __LINE__, (a), (b), (x), (y)); \
  } while (0)

__device__ inline uint8_t pat(uint32_t key, uint64_t i) {
  uint64_t x = (key + i) * 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17) ^ i);
}

// Which threads of a block act for a cooperation level: thread 0, warp 0, or all.
__device__ inline bool acts(coop::Thread) {
  return threadIdx.x == 0;
}
__device__ inline bool acts(coop::Warp) {
  return threadIdx.x < 32;
}
__device__ inline bool acts(coop::Block) {
  return true;
}

template <class C>
__device__ inline void fill(C c, char* b, size_t n, uint32_t key) {
  for (size_t i = coop::thread_rank(c); i < n; i += coop::size(c)) b[i] = static_cast<char>(pat(key, i));
  coop::sync(c);
}
// Counts the group's wrong bytes (the first one reported).
template <class C>
__device__ inline void check_bytes(C c, Report* rep, const char* b, size_t n, uint32_t key, int tag) {
  for (size_t i = coop::thread_rank(c); i < n; i += coop::size(c)) {
    const uint8_t want = pat(key, i);
    DCHECK(rep, static_cast<uint8_t>(b[i]) == want, tag, 0, i, want);
  }
  coop::sync(c);
}

// Sizes across every protocol threshold (defaults: LL <= 20, inline <= 24, one slot <= 192,
// chunked eager <= 2048, rendezvous over several 256 KiB chunks).
constexpr int kSizes = 13;
__constant__ size_t c_sizes[kSizes] = {0, 1, 8, 20, 21, 24, 25, 192, 193, 2048, 2049, 70000, 600000};
constexpr size_t kMaxBytes = 600000;

// Why a kernel that ended with `e` failed: the messaging record of the failure where there is one
// (it names the call and the argument), else CUDA's error; empty when it did not fail.
inline std::string kernel_failure(cudaError_t e, gpucomm::msg::Messenger& m) {
  if (e == cudaSuccess) return {};
  try {
    m.check_device();
  } catch (const gpucomm::Error& err) {
    return err.what();
  }
  return cudaGetErrorString(e);
}

}  // namespace msg_checks
