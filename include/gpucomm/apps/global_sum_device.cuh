#pragma once
// Global Sum's local reduce on the GPU, the same in every GPU model (docs/APPS.md): each block sums
// a grid-stride share of the input in a fixed order, the last block to finish sums the blocks'
// partial sums in block order and hands the PE's local sum to the model's exchange, which runs in
// that block, in the same kernel (or, in the CPU-controlled model, after the kernel).
#include <cstddef>
#include <cstdint>

#include "gpucomm/base/ordering_device.cuh"

namespace gpucomm::apps::device {

inline constexpr int kReduceThreads = 256;

// Scratch of the local reduce: one partial sum per block and the count of finished blocks (zero
// between launches; the last block resets it).
struct ReduceScratch {
  double* partials;    // [gridDim.x]
  unsigned* finished;  // one counter
};

// Called by every thread of every block. Returns true in every thread of the last block to finish,
// with the PE's local sum in `*local` (a __shared__ variable of that block); false elsewhere.
__device__ inline bool local_reduce(const double* x, uint64_t n, ReduceScratch s, double* local) {
  __shared__ double part[kReduceThreads];
  __shared__ bool last;
  double v = 0;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    v += x[i];
  part[threadIdx.x] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    s.partials[blockIdx.x] = part[0];
    // Release the partial to the last block; acquire the others' when this block is the last.
    const unsigned done = mem::fetch_add<mem::kDevice>(s.finished, 1u, mem::acq_rel);
    last = done + 1 == gridDim.x;
    if (last) {
      double sum = 0;
      for (unsigned b = 0; b < gridDim.x; ++b) sum += s.partials[b];  // after the acquire above
      *local = sum;
      mem::store<mem::kDevice>(s.finished, 0u, mem::relaxed);  // ready for the next launch
    }
  }
  __syncthreads();
  return last;
}

// Blocks for n elements: enough to cover the input four elements per thread, at most `max_blocks`.
inline unsigned reduce_blocks(uint64_t n, unsigned max_blocks) {
  const uint64_t per_block = 4ull * kReduceThreads;
  uint64_t b = (n + per_block - 1) / per_block;
  if (b < 1) b = 1;
  return static_cast<unsigned>(b < max_blocks ? b : max_blocks);
}

}  // namespace gpucomm::apps::device
