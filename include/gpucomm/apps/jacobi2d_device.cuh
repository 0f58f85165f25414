#pragma once
// Jacobi 2-D's compute on the GPU, the same in every GPU model (docs/APPS.md): the 5-point update
// of a grid-stride share of the PE's interior points, each operation rounded on its own
// (__dadd_rn, __dmul_rn: no fused multiply-add), so the grid equals the CPU reference
// (apps::jacobi_point) bit for bit; and the block's largest |new - old|.
#include <cstdint>

#include "gpucomm/base/ordering_device.cuh"

namespace gpucomm::apps::device {

inline constexpr int kJacobiThreads = 256;

__device__ inline double jacobi_point(double up, double down, double left, double right) {
  return __dmul_rn(0.25, __dadd_rn(__dadd_rn(__dadd_rn(up, down), left), right));
}

// Called by every thread of a block: updates the interior points i = block, block + blocks, ... (in
// units of the block's threads) of the n x n interior of `in` (row pitch n + 2) into `out`.
// Returns the block's largest |out - in| in every thread of the block.
__device__ inline double jacobi_update(const double* in, double* out, uint64_t n, unsigned block, unsigned blocks) {
  __shared__ double part[kJacobiThreads];
  const uint64_t w = n + 2;
  double res = 0;
  for (uint64_t k = block * static_cast<uint64_t>(blockDim.x) + threadIdx.x; k < n * n;
       k += static_cast<uint64_t>(blocks) * blockDim.x) {
    const uint64_t i = k / n + 1, c = k % n + 1;
    const double* mid = in + i * w + c;
    const double v = jacobi_point(mid[-static_cast<int64_t>(w)], mid[w], mid[-1], mid[1]);
    out[i * w + c] = v;
    res = fmax(res, fabs(__dsub_rn(v, *mid)));
  }
  part[threadIdx.x] = res;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) part[threadIdx.x] = fmax(part[threadIdx.x], part[threadIdx.x + stride]);
    __syncthreads();
  }
  res = part[0];
  __syncthreads();  // part is reused by the next call
  return res;
}

// Blocks for n x n points: four points per thread, at most `max_blocks`.
inline unsigned jacobi_blocks(uint64_t n, unsigned max_blocks) {
  const uint64_t per_block = 4ull * kJacobiThreads;
  uint64_t b = (n * n + per_block - 1) / per_block;
  if (b < 1) b = 1;
  return static_cast<unsigned>(b < max_blocks ? b : max_blocks);
}

}  // namespace gpucomm::apps::device
