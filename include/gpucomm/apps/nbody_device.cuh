#pragma once
// N-Body's compute on the GPU, the same in every GPU model (docs/APPS.md): the interactions of a
// grid-stride share of the PE's bodies with a held block, in the block's index order, and the
// integration. Every operation is rounded on its own (__dadd_rn, __dsub_rn, __dmul_rn, __dsqrt_rn,
// __ddiv_rn: no fused multiply-add), in the order of the host code (apps::nbody_accumulate,
// apps::nbody_integrate), so the positions equal the CPU reference bit for bit.
#include <cstdint>

#include "gpucomm/apps/nbody.hpp"

namespace gpucomm::apps::device {

inline constexpr int kNbodyThreads = 256;

// Called by every thread of a block: for own bodies i = (block + c * blocks) * blockDim.x +
// threadIdx.x (c = 0, 1, ...) below nb, adds to acc[3 * i ..] the interactions with the held
// block's nb bodies, which the block reads through shared memory in tiles of blockDim.x bodies.
__device__ inline void nbody_accumulate(const double* own, const double* held, double* acc, uint64_t nb, unsigned block,
                                        unsigned blocks) {
  __shared__ double tile[kNbodyThreads * kNbodyStride];
  for (uint64_t base = static_cast<uint64_t>(block) * blockDim.x; base < nb;
       base += static_cast<uint64_t>(blocks) * blockDim.x) {
    const uint64_t i = base + threadIdx.x;
    const bool mine = i < nb;
    double xi = 0, yi = 0, zi = 0, ax = 0, ay = 0, az = 0;
    if (mine) {
      xi = own[i * kNbodyStride];
      yi = own[i * kNbodyStride + 1];
      zi = own[i * kNbodyStride + 2];
      ax = acc[3 * i];
      ay = acc[3 * i + 1];
      az = acc[3 * i + 2];
    }
    for (uint64_t t0 = 0; t0 < nb; t0 += blockDim.x) {
      const uint64_t tn = nb - t0 < blockDim.x ? nb - t0 : blockDim.x;
      __syncthreads();  // the previous tile is read
      for (uint64_t e = threadIdx.x; e < tn * kNbodyStride; e += blockDim.x) tile[e] = held[t0 * kNbodyStride + e];
      __syncthreads();
      if (mine) {
        for (uint64_t j = 0; j < tn; ++j) {
          const double* b = tile + j * kNbodyStride;
          const double dx = __dsub_rn(b[0], xi), dy = __dsub_rn(b[1], yi), dz = __dsub_rn(b[2], zi);
          const double d2 =
              __dadd_rn(__dadd_rn(__dadd_rn(__dmul_rn(dx, dx), __dmul_rn(dy, dy)), __dmul_rn(dz, dz)), kNbodyEps2);
          const double s = __ddiv_rn(b[3], __dmul_rn(d2, __dsqrt_rn(d2)));
          ax = __dadd_rn(ax, __dmul_rn(dx, s));
          ay = __dadd_rn(ay, __dmul_rn(dy, s));
          az = __dadd_rn(az, __dmul_rn(dz, s));
        }
      }
    }
    if (mine) {
      acc[3 * i] = ax;
      acc[3 * i + 1] = ay;
      acc[3 * i + 2] = az;
    }
  }
}

// Integrates the own bodies i = thread + k * threads (k = 0, 1, ...) below nb: v += a * dt, then
// x += v * dt; zeroes acc; copies the positions into `history` (nb x 3, this step's row).
__device__ inline void nbody_integrate(double* own, double* vel, double* acc, double* history, uint64_t nb,
                                       uint64_t thread, uint64_t threads) {
  for (uint64_t i = thread; i < nb; i += threads) {
    for (int c = 0; c < 3; ++c) {
      const double v = __dadd_rn(vel[3 * i + c], __dmul_rn(acc[3 * i + c], kNbodyDt));
      const double x = __dadd_rn(own[i * kNbodyStride + c], __dmul_rn(v, kNbodyDt));
      vel[3 * i + c] = v;
      own[i * kNbodyStride + c] = x;
      acc[3 * i + c] = 0;
      history[3 * i + c] = x;
    }
  }
}

// Blocks for nb own bodies: one body per thread, at most `max_blocks`.
inline unsigned nbody_blocks(uint64_t nb, unsigned max_blocks) {
  uint64_t b = (nb + kNbodyThreads - 1) / kNbodyThreads;
  if (b < 1) b = 1;
  return static_cast<unsigned>(b < max_blocks ? b : max_blocks);
}

}  // namespace gpucomm::apps::device
