#pragma once
// Order-preserving phase matchers: each probe, in order, takes the earliest unused compatible
// target. A "phase" is one half of a batch: new messages against the PRQ (probes are messages,
// targets receives) or new receives against the UMQ (probes are receives, targets messages).
//
// Both matchers fill result[i] (global memory, one int per probe) with the index of the probe's
// target or -1, and set bit t of `taken` (shared memory) for every target t taken.
//
// Warp matcher (the "direct path" up to 64 targets, tiles of 64 beyond): each lane holds two
// targets; for each open probe (broadcast by shuffles) two ballots give the compatible targets
// and the lowest free one wins. Exact because tiles are visited in target order and a probe
// matched in an earlier tile never looks at a later one.
//
// Block matcher (ballot bit-matrix): targets in tiles of 1024 = 32 rows of 32. Scan warps build
// for a window of probes a matrix in shared memory, one 32-bit ballot per (probe, row); one
// reduce warp walks the probes in order, lane r owning row r's mask of free targets: the lowest
// lane whose vote survives its mask wins and takes its lowest bit. Windows are double-buffered
// so that the scan of window k+1 overlaps the reduce of window k (pipelining). Tiles beyond the
// first see only the probes still open (multi-pass), which keeps the result exact.
#include "gpucomm/base/coop.cuh"
#include "gpucomm/matching/envelope.hpp"
#include "gpucomm/matching/job.hpp"

namespace gpucomm::matching {

// Shared memory of one warp running the warp matcher: the taken bitmask of up to 2048 targets.
struct WarpMatchShared {
  uint32_t taken[kWarpMaxTargets / 32];
};

inline constexpr uint32_t kMatrixWindow = 128;  // probes per matrix window
inline constexpr uint32_t kMatrixStride = 33;   // words per matrix column, padded against bank conflicts
inline constexpr uint32_t kTileTargets = 1024;  // targets per tile (32 rows of 32)

// Shared memory of one block running the block matcher (about 42 KB).
struct BlockMatchShared {
  uint32_t matrix[2][kMatrixWindow * kMatrixStride];
  uint32_t taken[kBlockMaxTargets / 32];
  uint32_t open_cols[2][kMatrixWindow / 32];  // per 32 columns of a window: probes still open
  uint32_t sums[32];
  uint32_t open;  // probes without a target so far
};

namespace detail {

template <bool kProbesAreRecvs>
__device__ __forceinline__ bool fits(const Envelope& probe, const Envelope& target) {
  return kProbesAreRecvs ? compatible(probe, target) : compatible(target, probe);
}

__device__ __forceinline__ Envelope shfl_envelope(const Envelope& e, int src) {
  Envelope r;
  r.comm = __shfl_sync(0xffffffffu, e.comm, src);
  r.src = __shfl_sync(0xffffffffu, e.src, src);
  r.tag = __shfl_sync(0xffffffffu, e.tag, src);
  r.handle = 0;
  return r;
}

__device__ __forceinline__ uint32_t low_bits(uint32_t n) {
  return n >= 32 ? 0xffffffffu : (1u << n) - 1u;
}

}  // namespace detail

// Warp matcher; all 32 lanes call it. nt <= kWarpMaxTargets, `taken` holds ceil(nt/32) words.
template <bool kProbesAreRecvs>
__device__ void match_phase(coop::Warp, const Envelope* probes, uint32_t np, const Envelope* targets, uint32_t nt,
                            int32_t* result, uint32_t* taken) {
  const uint32_t lane = coop::lane_id();
  for (uint32_t i = lane; i < np; i += 32) result[i] = -1;
  for (uint32_t w = lane; w < (nt + 31) / 32; w += 32) taken[w] = 0;
  __syncwarp();
  uint32_t open = np;
  for (uint32_t tile = 0; tile < nt && open > 0; tile += 64) {
    const bool ok0 = tile + lane < nt, ok1 = tile + 32 + lane < nt;
    Envelope t0{}, t1{};
    if (ok0) t0 = targets[tile + lane];
    if (ok1) t1 = targets[tile + 32 + lane];
    const uint32_t valid0 = __ballot_sync(0xffffffffu, ok0), valid1 = __ballot_sync(0xffffffffu, ok1);
    uint32_t free0 = valid0, free1 = valid1;  // warp-uniform
    for (uint32_t pbase = 0; pbase < np && (free0 | free1); pbase += 32) {
      const uint32_t i = pbase + lane;
      Envelope p{};
      int32_t r = -1;
      if (i < np) {
        p = probes[i];
        r = result[i];
      }
      uint32_t want = __ballot_sync(0xffffffffu, i < np && r < 0);
      int32_t mine = -1;
      while (want && (free0 | free1)) {
        const int c = __ffs(want) - 1;
        want &= want - 1;
        const Envelope q = detail::shfl_envelope(p, c);
        const uint32_t b0 = __ballot_sync(0xffffffffu, ok0 && detail::fits<kProbesAreRecvs>(q, t0)) & free0;
        const uint32_t b1 = __ballot_sync(0xffffffffu, ok1 && detail::fits<kProbesAreRecvs>(q, t1)) & free1;
        if (b0 | b1) {
          int j;
          if (b0) {
            j = __ffs(b0) - 1;
            free0 &= ~(1u << j);
          } else {
            j = __ffs(b1) - 1;
            free1 &= ~(1u << j);
            j += 32;
          }
          if (static_cast<int>(lane) == c) mine = static_cast<int32_t>(tile) + j;
        }
      }
      const uint32_t got = __ballot_sync(0xffffffffu, mine >= 0);
      if (mine >= 0) result[i] = mine;
      open -= __popc(got);
    }
    if (lane == 0) {
      taken[tile / 32] = valid0 & ~free0;
      if (tile + 32 < nt) taken[tile / 32 + 1] = valid1 & ~free1;
    }
  }
  __syncwarp();
}

// Block matcher; every thread of the block calls it (blockDim.x a multiple of 32, at most 1024).
// nt <= kBlockMaxTargets. Up to 64 targets (or in a one-warp block) it runs the warp matcher on
// warp 0 (direct path).
template <bool kProbesAreRecvs>
__device__ void match_phase(coop::Block, const Envelope* probes, uint32_t np, const Envelope* targets, uint32_t nt,
                            int32_t* result, BlockMatchShared& s) {
  const uint32_t lane = coop::lane_id(), warp = coop::warp_id(), nwarps = blockDim.x >> 5;
  // Direct path; also the whole phase for a one-warp block (no warp left to scan).
  if (nt <= kDirectMaxTargets || nwarps < 2) {
    if (warp == 0) match_phase<kProbesAreRecvs>(coop::Warp{}, probes, np, targets, nt, result, s.taken);
    __syncthreads();
    return;
  }
  for (uint32_t i = threadIdx.x; i < np; i += blockDim.x) result[i] = -1;
  for (uint32_t w = threadIdx.x; w < (nt + 31) / 32; w += blockDim.x) s.taken[w] = 0;
  if (threadIdx.x == 0) s.open = np;
  const uint32_t nwin = (np + kMatrixWindow - 1) / kMatrixWindow;

  for (uint32_t tile = 0; tile < nt; tile += kTileTargets) {
    __syncthreads();  // results, s.open and s.taken of the previous tile are visible
    if (s.open == 0) break;
    __syncthreads();  // everyone has read s.open before the reduce warp changes it

    // Reduce warp state: lane r owns row r of the tile (targets tile + 32r .. tile + 32r + 31).
    const uint32_t row_first = tile + lane * 32;
    const uint32_t row_valid = row_first < nt ? detail::low_bits(nt - row_first) : 0u;
    uint32_t free = row_valid;
    uint32_t matched = 0;  // warp-uniform in the reduce warp
    const uint32_t rows = (nt - tile + 31) / 32 < 32 ? (nt - tile + 31) / 32 : 32;

    for (uint32_t k = 0; k <= nwin; ++k) {
      if (warp > 0 && k < nwin) {
        // Scan window k into matrix[k & 1]: column c holds, for row r, the ballot of row r's
        // targets that fit probe k*W + c (0 for probes already matched in earlier tiles).
        uint32_t* mat = s.matrix[k & 1];
        const uint32_t p0 = k * kMatrixWindow;
        const uint32_t cols = np - p0 < kMatrixWindow ? np - p0 : kMatrixWindow;
        for (uint32_t row = warp - 1; row < rows; row += nwarps - 1) {
          const uint32_t ti = tile + row * 32 + lane;
          const bool tok = ti < nt;
          Envelope t{};
          if (tok) t = targets[ti];
          for (uint32_t c0 = 0; c0 < cols; c0 += 32) {
            const bool pok = c0 + lane < cols;
            Envelope p{};
            bool open = false;
            if (pok) {
              p = probes[p0 + c0 + lane];
              open = result[p0 + c0 + lane] < 0;
            }
            uint32_t want = __ballot_sync(0xffffffffu, open);
            if (row == 0 && lane == 0) s.open_cols[k & 1][c0 / 32] = want;  // the reduce warp skips closed columns
            uint32_t mine = 0;
            while (want) {
              const int c = __ffs(want) - 1;
              want &= want - 1;
              const Envelope q = detail::shfl_envelope(p, c);
              const uint32_t v = __ballot_sync(0xffffffffu, tok && detail::fits<kProbesAreRecvs>(q, t));
              if (static_cast<int>(lane) == c) mine = v;
            }
            if (pok) mat[(c0 + lane) * kMatrixStride + row] = mine;
          }
        }
      }
      if (warp == 0 && k >= 1) {
        // Reduce window k-1 from matrix[(k-1) & 1]: probes in order, lowest row wins.
        const uint32_t* mat = s.matrix[(k - 1) & 1];
        const uint32_t p0 = (k - 1) * kMatrixWindow;
        const uint32_t cols = np - p0 < kMatrixWindow ? np - p0 : kMatrixWindow;
        // Only the open columns; the next column's votes load while this one is reduced.
        for (uint32_t chunk = 0; chunk * 32 < cols; ++chunk) {
          const uint32_t* base = mat + static_cast<size_t>(chunk) * 32 * kMatrixStride;
          uint32_t m = s.open_cols[(k - 1) & 1][chunk];
          int c = m ? __ffs(m) - 1 : -1;
          uint32_t v = (c >= 0 && lane < rows) ? base[c * kMatrixStride + lane] : 0u;
          while (c >= 0) {
            m &= m - 1;
            const int cn = m ? __ffs(m) - 1 : -1;
            const uint32_t vn = (cn >= 0 && lane < rows) ? base[cn * kMatrixStride + lane] : 0u;
            const uint32_t mv = v & free;
            const uint32_t bidders = __ballot_sync(0xffffffffu, mv != 0);
            if (bidders) {
              const uint32_t w = __ffs(bidders) - 1;
              if (lane == w) {
                const uint32_t bit = __ffs(mv) - 1;
                free &= ~(1u << bit);
                result[p0 + chunk * 32 + c] = static_cast<int32_t>(tile + w * 32 + bit);
              }
              ++matched;
            }
            c = cn;
            v = vn;
          }
        }
      }
      __syncthreads();
    }
    if (warp == 0) {
      if (lane < rows) s.taken[tile / 32 + lane] = row_valid & ~free;
      if (lane == 0) s.open -= matched;
    }
  }
  __syncthreads();
}

}  // namespace gpucomm::matching
