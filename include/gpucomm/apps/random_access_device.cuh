#pragma once
// RandomAccess on GPU PEs: the update generation every GPU model shares (docs/APPS.md). Thread i of
// the grid makes updates [i * kRaChunk, (i + 1) * kRaChunk) of the PE's step, jumping into the
// stream with ra_starts, so the updates are exactly the host models' (RaShape::start).
#include <cstdint>

#include "gpucomm/apps/random_access.hpp"

namespace gpucomm::apps::device {

inline constexpr uint64_t kRaChunk = 64;  // consecutive updates per thread (n / 4 is a multiple)
inline constexpr int kRaThreads = 256;

// Calls f(ran) for each of this thread's updates of `step` on PE `rank`.
template <class F>
__device__ void ra_updates(const RaShape& sh, int rank, uint64_t step, F&& f) {
  const uint64_t first = (static_cast<uint64_t>(rank) * static_cast<uint64_t>(sh.steps) + (step - 1)) * sh.per_step();
  const uint64_t chunks = (sh.per_step() + kRaChunk - 1) / kRaChunk;
  for (uint64_t c = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; c < chunks;
       c += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    uint64_t ran = ra_starts(first + c * kRaChunk);
    const uint64_t end = (c + 1) * kRaChunk < sh.per_step() ? (c + 1) * kRaChunk : sh.per_step();
    for (uint64_t u = c * kRaChunk; u < end; ++u) {
      ran = ra_next(ran);
      f(ran);
    }
  }
}

}  // namespace gpucomm::apps::device
