#pragma once
// Himeno's iteration on the GPU, the same in every GPU model (include/gpucomm/apps/himeno.hpp):
// one thread per (k, j) column sweeps a chunk of i planes, keeping the five-point crosses of
// planes i - 1, i and i + 1 in registers, so that each plane adds five loads of p (the cross of
// i + 1) and four (the diagonals of i), beside the twelve coefficients; each operation rounded on
// its own, so p equals the CPU reference bit for bit. The block sums its threads' ss ss in a fixed
// order; the last block to finish sums the blocks' sums in a fixed order into the PE's gosa.
#include <cstdint>

#include "gpucomm/apps/himeno.hpp"
#include "gpucomm/base/ordering_device.cuh"

namespace gpucomm::apps::device {

// Blocks of 32 x 8 columns, 8 planes per thread, at least 2 blocks per SM (at most 128 registers;
// ptxas for sm_90 uses 72, no spills, so 3 blocks fit). The loads of the next plane (the cross
// above it, its diagonals and its twelve coefficients) are issued before this plane's arithmetic,
// as in Aliev-Panfilov's sweep (apps/aliev_panfilov_device.cuh), so that they do not wait behind it.
inline constexpr unsigned kHimenoBlockX = 32, kHimenoBlockY = 8, kHimenoPlanesPerThread = 8;
inline constexpr unsigned kHimenoThreads = kHimenoBlockX * kHimenoBlockY, kHimenoMinBlocksPerSm = 2;

inline dim3 himeno_grid(uint64_t n) {
  return dim3(static_cast<unsigned>((n + kHimenoBlockX - 1) / kHimenoBlockX),
              static_cast<unsigned>((n + kHimenoBlockY - 1) / kHimenoBlockY),
              static_cast<unsigned>((n + kHimenoPlanesPerThread - 1) / kHimenoPlanesPerThread));
}
inline uint64_t himeno_blocks(uint64_t n) {
  const dim3 g = himeno_grid(n);
  return static_cast<uint64_t>(g.x) * g.y * g.z;
}

// The five-point cross of one plane around a column, and the four diagonals of the centre plane.
struct HimenoCross {
  float c, yp, ym, xp, xm;
};
struct HimenoDiag {
  float yp_xp, ym_xp, yp_xm, ym_xm;
};

__device__ inline HimenoCross himeno_cross(const float* q, int64_t row) {
  return HimenoCross{q[0], q[row], q[-row], q[1], q[-1]};
}
__device__ inline HimenoDiag himeno_diag(const float* q, int64_t row) {
  return HimenoDiag{q[row + 1], q[1 - row], q[row - 1], q[-row - 1]};
}
__device__ inline HimenoCoef himeno_coef(const float* __restrict__ coef, uint64_t field, uint64_t q) {
  const float* f = coef + q;
  return HimenoCoef{f[0],         f[field],     f[2 * field], f[3 * field], f[4 * field],  f[5 * field],
                    f[6 * field], f[7 * field], f[8 * field], f[9 * field], f[10 * field], f[11 * field]};
}

// The sum of v over the block in a fixed order (each warp by shuffles, then the warps in order),
// valid in thread 0; `scratch` holds a double per warp. Every thread of the block calls it.
__device__ inline double himeno_block_sum(double v, double* scratch) {
  for (unsigned off = 16; off > 0; off /= 2) v = __dadd_rn(v, __shfl_down_sync(0xffffffffU, v, off));
  const unsigned t = threadIdx.x + threadIdx.y * blockDim.x, warps = (blockDim.x * blockDim.y + 31) / 32;
  if (t % 32 == 0) scratch[t / 32] = v;
  __syncthreads();
  double s = 0;
  if (t == 0)
    for (unsigned w = 0; w < warps; ++w) s = __dadd_rn(s, scratch[w]);
  __syncthreads();
  return s;
}

// One iteration over the PE's interior, this thread's column share (grid himeno_grid(n), blocks of
// kHimenoBlockX x kHimenoBlockY): p (ghost planes filled) into out; returns this thread's sum of
// ss ss (0 outside the interior).
__device__ inline double himeno_columns(const float* __restrict__ p, float* __restrict__ out,
                                        const float* __restrict__ coef, uint64_t n) {
  const uint64_t k = blockIdx.x * kHimenoBlockX + threadIdx.x + 1, j = blockIdx.y * kHimenoBlockY + threadIdx.y + 1;
  if (k > n || j > n) return 0.0;
  const uint64_t i0 = blockIdx.z * static_cast<uint64_t>(kHimenoPlanesPerThread) + 1;
  const uint64_t i1 = i0 + kHimenoPlanesPerThread - 1 < n ? i0 + kHimenoPlanesPerThread - 1 : n;
  const uint64_t w = n + 2, field = w * w * w;
  const auto row = static_cast<int64_t>(w), plane = row * row;
  uint64_t q = himeno_index(n, i0, j, k);
  HimenoCross below = himeno_cross(p + q - plane, row), mid = himeno_cross(p + q, row);
  // The next plane's loads, issued one plane ahead.
  HimenoCross next_above = himeno_cross(p + q + plane, row);
  HimenoDiag next_diag = himeno_diag(p + q, row);
  HimenoCoef next_coef = himeno_coef(coef, field, q);
  double gosa = 0;
  for (uint64_t i = i0; i <= i1; ++i, q += static_cast<uint64_t>(plane)) {
    const HimenoCross above = next_above;
    const HimenoDiag diag = next_diag;
    const HimenoCoef cf = next_coef;
    if (i < i1) {
      next_above = himeno_cross(p + q + 2 * plane, row);
      next_diag = himeno_diag(p + q + plane, row);
      next_coef = himeno_coef(coef, field, q + static_cast<uint64_t>(plane));
    }
    HimenoStencil s;
    s.c = mid.c;
    s.zp = above.c;
    s.yp = mid.yp;
    s.xp = mid.xp;
    s.zm = below.c;
    s.ym = mid.ym;
    s.xm = mid.xm;
    s.zp_yp = above.yp;
    s.zp_ym = above.ym;
    s.zm_yp = below.yp;
    s.zm_ym = below.ym;
    s.yp_xp = diag.yp_xp;
    s.ym_xp = diag.ym_xp;
    s.yp_xm = diag.yp_xm;
    s.ym_xm = diag.ym_xm;
    s.zp_xp = above.xp;
    s.zm_xp = below.xp;
    s.zp_xm = above.xm;
    s.zm_xm = below.xm;
    float ss = 0;
    out[q] = himeno_point<DeviceFp>(s, cf, ss);
    gosa = __dadd_rn(gosa, static_cast<double>(DeviceFp::mul(ss, ss)));
    below = mid;
    mid = above;
  }
  return gosa;
}

}  // namespace gpucomm::apps::device
