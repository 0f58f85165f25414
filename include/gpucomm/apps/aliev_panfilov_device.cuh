#pragma once
// Aliev-Panfilov's step on the GPU, the same in every GPU model (include/gpucomm/apps/aliev_panfilov.hpp):
// one thread per (x, y) column sweeps a chunk of z planes, keeping the centre and the plane below in
// registers (the thesis's plane sweep); each operation rounded on its own, so the result equals the
// CPU reference bit for bit.
#include <cstdint>

#include "gpucomm/apps/aliev_panfilov.hpp"

namespace gpucomm::apps::device {

// Blocks of 32 x 8 columns, 8 planes per thread, at least 4 blocks per SM (64 registers), and the
// loads of E_prev's next plane and of R issued kApLookahead planes ahead: measured on an H200 at
// 256^3 this takes a step from 52% to 79% of the copy-bandwidth roofline (docs/APPS.md); without the
// look-ahead each plane's loads wait behind the previous plane's arithmetic.
inline constexpr unsigned kApBlockX = 32, kApBlockY = 8, kApPlanesPerThread = 8, kApMinBlocksPerSm = 4;
inline constexpr int kApLookahead = 4;

inline dim3 ap_grid(uint64_t n) {
  return dim3(static_cast<unsigned>((n + kApBlockX - 1) / kApBlockX),
              static_cast<unsigned>((n + kApBlockY - 1) / kApBlockY),
              static_cast<unsigned>((n + kApPlanesPerThread - 1) / kApPlanesPerThread));
}

// One step over the PE's interior, this thread's column share (grid ap_grid(n), blocks of
// kApBlockX x kApBlockY): E_prev (ghost planes filled) into e_out; r in place. The plane above and R
// come kApLookahead planes ahead in registers, the x and y neighbours one plane ahead.
__device__ inline void ap_step_columns(const double* __restrict__ prev, double* __restrict__ e_out,
                                       double* __restrict__ r, uint64_t n) {
  constexpr int D = kApLookahead;
  const uint64_t i = blockIdx.x * kApBlockX + threadIdx.x + 1, j = blockIdx.y * kApBlockY + threadIdx.y + 1;
  if (i > n || j > n) return;
  const uint64_t k0 = blockIdx.z * static_cast<uint64_t>(kApPlanesPerThread) + 1;
  const uint64_t k1 = k0 + kApPlanesPerThread - 1 < n ? k0 + kApPlanesPerThread - 1 : n;
  const auto w = static_cast<int64_t>(n + 2), plane = w * w;
  const int64_t xl = i == 1 ? 1 : -1, xr = i == n ? -1 : 1;  // no flux: the outside neighbour mirrored
  const int64_t yl = j == 1 ? w : -w, yr = j == n ? -w : w;
  uint64_t p = ap_index(n, i, j, k0);
  const double* q = prev + p;
  double below = q[-plane], c = q[0];
  double nxl = q[xl], nxr = q[xr], nyl = q[yl], nyr = q[yr];  // the next plane's neighbours
  double next_above[D], next_r[D];                            // planes k + 1 + d and k + d
#pragma unroll
  for (int d = 0; d < D; ++d) {
    const bool inside = k0 + d <= k1;
    next_above[d] = inside ? q[(d + 1) * plane] : 0.0;
    next_r[d] = inside ? r[p + d * plane] : 0.0;
  }
  for (uint64_t k = k0; k <= k1; ++k, p += static_cast<uint64_t>(plane)) {
    q = prev + p;
    const double above = next_above[0], xl_v = nxl, xr_v = nxr, yl_v = nyl, yr_v = nyr;
    double rr = next_r[0];
#pragma unroll
    for (int d = 0; d + 1 < D; ++d) {
      next_above[d] = next_above[d + 1];
      next_r[d] = next_r[d + 1];
    }
    if (k + D <= k1) {
      next_above[D - 1] = q[(D + 1) * plane];
      next_r[D - 1] = r[p + D * plane];
    }
    if (k < k1) {
      const double* q_next = q + plane;
      nxl = q_next[xl];
      nxr = q_next[xr];
      nyl = q_next[yl];
      nyr = q_next[yr];
    }
    e_out[p] = ap_point<DeviceFp>(c, xl_v, xr_v, yl_v, yr_v, below, above, rr);
    r[p] = rr;
    below = c;
    c = above;
  }
}

}  // namespace gpucomm::apps::device
