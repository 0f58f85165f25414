#pragma once
// Multi-matrix-vector's compute (include/gpucomm/apps/mmv.hpp), the same in every model: a warp
// multiplies one vector at a time, lane i computing product element i from row i of the matrix in
// shared memory and the vector's elements broadcast by shuffles.
#include <cstdint>

#include "gpucomm/apps/mmv.hpp"

namespace gpucomm::apps::device {

inline constexpr int kMmvThreads = 256;        // 8 warps: 8 vectors per block and pass
inline constexpr int kMmvPitch = kMmvDim + 1;  // shared-memory row pitch: lane i's row in its own bank

// The matrix from global memory into shared memory (every thread of the block takes part).
__device__ inline void mmv_load_matrix(const float* matrix, float* smem) {
  for (int j = static_cast<int>(threadIdx.x); j < kMmvDim * kMmvDim; j += static_cast<int>(blockDim.x))
    smem[(j / kMmvDim) * kMmvPitch + j % kMmvDim] = matrix[j];
  __syncthreads();
}

// This block's share of the batch: vector v goes to warp (v mod the grid's warps). Plain loads:
// the persistent kernel's thread 0 acquired the batch number and the block synchronized since, so
// the batch written before the number is what these loads see (the acquire also drops stale L1
// lines of the last batch, which used the same addresses).
// `corrupt` is added to element 0 of vector 0 (tests).
__device__ inline void mmv_batch(const float* smem, const float* in, float* out, uint64_t vectors, float corrupt) {
  const unsigned lane = threadIdx.x % 32;
  const uint64_t warps = static_cast<uint64_t>(gridDim.x) * (blockDim.x / 32);
  for (uint64_t v = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; v < vectors; v += warps) {
    const float x = in[v * kMmvDim + lane];
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < kMmvDim; ++k)
      acc = __fadd_rn(acc, __fmul_rn(smem[lane * kMmvPitch + k], __shfl_sync(~0u, x, k)));
    out[v * kMmvDim + lane] = v == 0 && lane == 0 ? __fadd_rn(acc, corrupt) : acc;
  }
}

}  // namespace gpucomm::apps::device
