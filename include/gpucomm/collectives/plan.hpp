#pragma once
// How a collective's data is cut: the slice of each channel, the window of each round, the ring
// order of each channel. Shared by the algorithms (host and device) and the CPU reference, so
// that both fold every element in the same order (docs/COLLECTIVES.md, "Accumulation and
// determinism").
#include <cstdint>

#include "gpucomm/base/hd.hpp"
#include "gpucomm/collectives/numeric.hpp"
#include "gpucomm/collectives/types.hpp"

namespace gpucomm::coll {

// The sizes of a team workspace that a plan depends on.
struct Sizes {
  int n = 1;              // team size
  uint64_t slot = 0;      // per source and parity
  uint64_t ring = 0;      // ring region per parity
  uint64_t ll = 0;        // LL slot per source and parity
  uint32_t per_node = 0;  // hierarchical: members per node
};

struct Range {
  uint64_t lo = 0, hi = 0;
  GPUCOMM_HD uint64_t size() const { return hi - lo; }
};

// Channel c's slice of `count` elements: contiguous, 16-byte aligned boundaries.
GPUCOMM_HD Range channel_slice(uint64_t count, uint32_t channels, uint32_t c, size_t elem) {
  const uint64_t a = elem >= 16 ? 1 : 16 / elem;
  auto cut = [&](uint32_t i) -> uint64_t {
    if (i >= channels) return count;
    const uint64_t v = (count / channels) * i + (count % channels) * i / channels;
    const uint64_t r = (v + a - 1) / a * a;
    return r < count ? r : count;
  };
  return Range{cut(c), cut(c + 1)};
}

GPUCOMM_HD uint64_t align_down16(uint64_t b) {
  return b / 16 * 16;
}

// Bytes of accumulation type per element (hierarchical partials travel in it).
GPUCOMM_HD constexpr size_t acc_size(DataType t) {
  return t == DataType::f64 || t == DataType::i64 || t == DataType::u64 ? 8 : 4;
}

// Payload bytes of one LL slot (the first word is the header).
GPUCOMM_HD uint64_t ll_payload(const Sizes& s) {
  const uint64_t words = s.ll / 8;
  return words > 1 ? (words - 1) * 4 : 0;
}

// Sub-slots of the ring region per round: allreduce 2(n-1) steps, the others n-1 (broadcast: kChainSlots).
inline constexpr uint32_t kChainSlots = 8;
GPUCOMM_HD uint32_t ring_steps(CollOp op, int n) {
  const uint32_t m = n > 1 ? static_cast<uint32_t>(n - 1) : 1u;
  if (op == CollOp::allreduce) return 2 * m;
  if (op == CollOp::broadcast) return kChainSlots;
  return m;
}
GPUCOMM_HD uint64_t ring_sub_bytes(CollOp op, const Sizes& s) {
  return align_down16(s.ring / ring_steps(op, s.n));
}

// Hierarchical: elements of one shard. A slot holds three parts, each 16-byte aligned: the shard
// (storage type), its node partial (accumulation type), the result (storage type).
GPUCOMM_HD uint64_t hier_shard(DataType dt, const Sizes& s) {
  const uint64_t per = 2 * type_size(dt) + acc_size(dt);
  return s.slot > 32 ? (s.slot - 32) / per : 0;
}

// Elements one round moves: of the whole buffer (allreduce, reduce, broadcast), or of each
// block (allgather, reduce-scatter, alltoall, alltoallv: per pair). 0 when the workspace is too
// small for the algorithm (the host API refuses it then).
GPUCOMM_HD uint64_t window_elems(CollOp op, Algorithm a, DataType dt, const Sizes& s) {
  const uint64_t sz = type_size(dt), n = static_cast<uint64_t>(s.n);
  switch (a) {
    case Algorithm::oneshot:
      return s.slot / sz;
    case Algorithm::oneshot_ll:
      return ll_payload(s) / sz;
    case Algorithm::twoshot:
      return n * (align_down16(s.slot / 2) / sz);
    case Algorithm::ring:
    case Algorithm::multiring: {
      const uint64_t sub = ring_sub_bytes(op, s) / sz;
      if (op == CollOp::allreduce) return n * sub;
      if (op == CollOp::broadcast) return kChainSlots * sub;
      const uint64_t own = s.slot / sz;  // partials kept in this PE's own slot
      if (op == CollOp::reduce) return n * (sub < own ? sub : own);
      if (op == CollOp::reduce_scatter) return sub < own ? sub : own;
      return sub;  // allgather
    }
    case Algorithm::hierarchical:
      return (s.per_node ? s.per_node : 1) * hier_shard(dt, s);
    default:
      return 0;
  }
}

// Ring direction of a channel: even channels send to team rank + 1, odd ones to rank - 1.
GPUCOMM_HD bool ring_forward(uint32_t channel) {
  return (channel & 1u) == 0;
}
// Team rank at ring position `pos` (0..n-1) and back.
GPUCOMM_HD int ring_rank(int pos, int n, bool fwd) {
  const int p = ((pos % n) + n) % n;
  return fwd ? p : n - 1 - p;
}
GPUCOMM_HD int ring_pos(int rank, int n, bool fwd) {
  return fwd ? rank : n - 1 - rank;
}

// Chunk k (0..parts-1) of a window of `len` elements cut into parts of `part` elements.
GPUCOMM_HD Range part_range(uint64_t len, uint64_t part, uint64_t k) {
  const uint64_t lo = k * part < len ? k * part : len;
  const uint64_t hi = lo + part < len ? lo + part : len;
  return Range{lo, hi};
}

// Ring reduce-scatter core: chunk k's fold starts at ring position (k - o + 1) and ends at its
// owner, position (k - o) (o = 1: allreduce and reduce, whose owner of chunk k is position k - 1;
// o = 0: reduce-scatter, where position k owns chunk k). Partials are rounded to the storage type
// at every hop.
GPUCOMM_HD int ring_fold_start(int k, int o, int n) {
  return ((k - o + 1) % n + n) % n;
}

}  // namespace gpucomm::coll
