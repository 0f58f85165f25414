#pragma once
// Ordered (stable) compaction for warps and blocks: ballot + popc inside a warp, per-warp totals
// in shared memory across a block. Blocks must have a multiple of 32 threads.
#include "gpucomm/base/coop.cuh"
#include "gpucomm/matching/envelope.hpp"

namespace gpucomm::matching::detail {

// Number of group threads before this one with `pred` set; `total` gets the group's count.
__device__ __forceinline__ uint32_t exclusive_count(coop::Warp, bool pred, uint32_t& total, uint32_t*) {
  const uint32_t b = __ballot_sync(0xffffffffu, pred);
  total = __popc(b);
  return __popc(b & coop::lanemask_lt());
}

// `sums`: 32 words of shared memory. Contains two __syncthreads.
__device__ __forceinline__ uint32_t exclusive_count(coop::Block, bool pred, uint32_t& total, uint32_t* sums) {
  const uint32_t b = __ballot_sync(0xffffffffu, pred);
  const uint32_t w = coop::warp_id(), nw = blockDim.x >> 5;
  if (coop::lane_id() == 0) sums[w] = __popc(b);
  __syncthreads();
  uint32_t before = 0, all = 0;
  for (uint32_t k = 0; k < nw; ++k) {
    const uint32_t x = sums[k];
    all += x;
    before += k < w ? x : 0;
  }
  __syncthreads();  // sums is reused by the next call
  total = all;
  return before + __popc(b & coop::lanemask_lt());
}

// Calls emit(i, position) for each i < n with pred(i), positions dense and in index order.
// Returns the count. Every thread of the group must call it with the same n.
template <class Coop, class Pred, class Emit>
__device__ __forceinline__ uint32_t ordered_emit(Coop c, uint32_t n, uint32_t* sums, Pred pred, Emit emit) {
  uint32_t base = 0;
  for (uint32_t start = 0; start < n; start += coop::size(c)) {
    const uint32_t i = start + coop::thread_rank(c);
    const bool p = i < n && pred(i);
    uint32_t total;
    const uint32_t pos = exclusive_count(c, p, total, sums);
    if (p) emit(i, base + pos);
    base += total;
  }
  return base;
}

// Removes the entries whose bit is set in `taken` (one bit per entry), keeping the order, in
// place. Safe because an entry only moves to a lower index and each chunk is read before any
// thread writes it (sync between the read and the write).
template <class Coop>
__device__ __forceinline__ uint32_t compact_untaken(Coop c, Envelope* q, uint32_t n, const uint32_t* taken,
                                                    uint32_t* sums) {
  uint32_t base = 0;
  for (uint32_t start = 0; start < n; start += coop::size(c)) {
    const uint32_t i = start + coop::thread_rank(c);
    const bool keep = i < n && !((taken[i >> 5] >> (i & 31)) & 1u);
    Envelope e{};
    if (keep) e = q[i];
    uint32_t total;
    const uint32_t pos = exclusive_count(c, keep, total, sums);
    coop::sync(c);
    if (keep && base + pos != i) q[base + pos] = e;
    base += total;
  }
  coop::sync(c);
  return base;
}

}  // namespace gpucomm::matching::detail

namespace gpucomm::matching::detail {

// Exclusive prefix sum of x over the block; `total` gets the block's sum. `sums`: 32 words of
// shared memory. Contains two __syncthreads.
__device__ __forceinline__ uint32_t exclusive_sum(coop::Block, uint32_t x, uint32_t& total, uint32_t* sums) {
  const uint32_t lane = coop::lane_id(), w = coop::warp_id(), nw = blockDim.x >> 5;
  uint32_t inc = x;
  for (int d = 1; d < 32; d <<= 1) {
    const uint32_t y = __shfl_up_sync(0xffffffffu, inc, d);
    if (lane >= static_cast<uint32_t>(d)) inc += y;
  }
  if (lane == 31) sums[w] = inc;
  __syncthreads();
  uint32_t before = 0, all = 0;
  for (uint32_t k = 0; k < nw; ++k) {
    const uint32_t s = sums[k];
    all += s;
    before += k < w ? s : 0;
  }
  __syncthreads();
  total = all;
  return before + inc - x;
}

}  // namespace gpucomm::matching::detail
