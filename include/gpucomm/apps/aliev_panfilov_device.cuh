#pragma once
// Aliev-Panfilov's step on the GPU, the same in every GPU model (include/gpucomm/apps/aliev_panfilov.hpp):
// one thread per (x, y) column sweeps a chunk of z planes, keeping the centre and the plane below in
// registers (the thesis's plane sweep); each operation rounded on its own, so the result equals the
// CPU reference bit for bit.
#include <cstdint>

#include "gpucomm/apps/aliev_panfilov.hpp"

namespace gpucomm::apps::device {

struct DeviceFp {
  GPUCOMM_HD static double add(double x, double y) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(x, y);
#else
    return x + y;
#endif
  }
  GPUCOMM_HD static double sub(double x, double y) {
#if defined(__CUDA_ARCH__)
    return __dsub_rn(x, y);
#else
    return x - y;
#endif
  }
  GPUCOMM_HD static double mul(double x, double y) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(x, y);
#else
    return x * y;
#endif
  }
  GPUCOMM_HD static double div(double x, double y) {
#if defined(__CUDA_ARCH__)
    return __ddiv_rn(x, y);
#else
    return x / y;
#endif
  }
};

inline constexpr unsigned kApBlockX = 32, kApBlockY = 8, kApPlanesPerThread = 16;

inline dim3 ap_grid(uint64_t n) {
  return dim3(static_cast<unsigned>((n + kApBlockX - 1) / kApBlockX),
              static_cast<unsigned>((n + kApBlockY - 1) / kApBlockY),
              static_cast<unsigned>((n + kApPlanesPerThread - 1) / kApPlanesPerThread));
}

// One step over the PE's interior, this thread's column share (grid ap_grid(n), blocks of
// kApBlockX x kApBlockY): E_prev (ghost planes filled) into e_out; r in place.
__device__ inline void ap_step_columns(const double* __restrict__ prev, double* __restrict__ e_out,
                                       double* __restrict__ r, uint64_t n) {
  const uint64_t i = blockIdx.x * kApBlockX + threadIdx.x + 1, j = blockIdx.y * kApBlockY + threadIdx.y + 1;
  if (i > n || j > n) return;
  const uint64_t k0 = blockIdx.z * static_cast<uint64_t>(kApPlanesPerThread) + 1;
  const uint64_t k1 = k0 + kApPlanesPerThread - 1 < n ? k0 + kApPlanesPerThread - 1 : n;
  const auto w = static_cast<int64_t>(n + 2), plane = w * w;
  const int64_t xl = i == 1 ? 1 : -1, xr = i == n ? -1 : 1;  // no flux: the outside neighbour mirrored
  const int64_t yl = j == 1 ? w : -w, yr = j == n ? -w : w;
  uint64_t p = ap_index(n, i, j, k0);
  double below = prev[p - static_cast<uint64_t>(plane)], c = prev[p];
  for (uint64_t k = k0; k <= k1; ++k, p += static_cast<uint64_t>(plane)) {
    const double* q = prev + p;
    const double above = q[plane];
    double rr = r[p];
    e_out[p] = ap_point<DeviceFp>(c, q[xl], q[xr], q[yl], q[yr], below, above, rr);
    r[p] = rr;
    below = c;
    c = above;
  }
}

}  // namespace gpucomm::apps::device
