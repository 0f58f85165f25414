#pragma once
// Device entry points of the order-preserving engines (MPI-compliant, no-unexpected,
// partitioned). Each runs one batch on one MatchJob; see docs/MATCHING.md for the semantics.
//
//   match_ordered(coop::Block{}, job, BlockMatchShared&)   ballot bit-matrix, queues to 64K
//   match_ordered(coop::Warp{},  job, WarpMatchShared&)    direct path / tiles of 64, to 2048
//   match_no_unexpected(coop, job, shared)                 receives always posted first
//   match_partitioned(coop::Warp{}, job, WarpMatchShared&) one (comm, source) queue per warp
//
// Every thread of the group calls them with the same job; the job's queues, sizes and outputs
// must not be touched by others meanwhile.
#include <type_traits>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/matching/compact_device.cuh"
#include "gpucomm/matching/job.hpp"
#include "gpucomm/matching/ordered_match_device.cuh"

namespace gpucomm::matching {
namespace detail {

// Every engine's shared memory has a taken bitmask; blocks also have 32 words for prefix sums.
template <class Shared>
__device__ __forceinline__ uint32_t* taken_of(Shared& s) {
  return s.taken;
}
template <class Shared>
__device__ __forceinline__ uint32_t* sums_of(Shared& s) {
  if constexpr (requires { s.sums; }) {
    return s.sums;
  } else {
    return nullptr;
  }
}

// True on every thread when pred(e) holds for some entry of q[0..n).
template <class Coop, class Shared, class Pred>
__device__ bool any_entry(Coop c, const Envelope* q, uint32_t n, Shared& s, Pred pred) {
  for (uint32_t start = 0; start < n; start += coop::size(c)) {
    const uint32_t i = start + coop::thread_rank(c);
    uint32_t t;
    exclusive_count(c, i < n && pred(q[i]), t, sums_of(s));
    if (t) return true;  // t is the same on every thread
  }
  return false;
}

// The two phases of a batch. `Phase` is called as phase(std::bool_constant<probes are
// receives>, probes, np, targets, nt, result, taken) and must fill result and taken.
template <class Coop, class Shared, class Phase>
__device__ void run_batch(Coop c, const MatchJob& job, Shared& s, bool no_unexpected, uint32_t max_targets,
                          Phase phase) {
  const bool leader = coop::thread_rank(c) == 0;
  uint32_t umq_n = *job.umq_size, prq_n = *job.prq_size;
  coop::sync(c);  // everyone has read the sizes before the leader rewrites them
  if (prq_n > max_targets || umq_n + job.n_msgs > max_targets) {
    if (leader) mem::fetch_or<mem::kDevice>(job.status, kStatusTooLong, mem::relaxed);
    if (leader) *job.n_matches = 0;
    coop::sync(c);
    return;
  }
  uint32_t status = 0;
  int32_t* res = job.scratch;
  uint32_t* taken = taken_of(s);
  uint32_t* sums = sums_of(s);

  // Phase 1: new messages against the posted receives.
  phase(std::false_type{}, job.msgs, job.n_msgs, job.prq, prq_n, res, taken);
  coop::sync(c);
  uint32_t nm = ordered_emit(
      c, job.n_msgs, sums, [&](uint32_t i) { return res[i] >= 0; },
      [&](uint32_t i, uint32_t pos) { job.matches[pos] = Match{job.msgs[i].handle, job.prq[res[i]].handle}; });
  coop::sync(c);  // matches have read their receives before compaction moves them
  prq_n = compact_untaken(c, job.prq, prq_n, taken, sums);
  const uint32_t umq_cap = job.umq_cap, umq_base = umq_n;
  const uint32_t late = ordered_emit(
      c, job.n_msgs, sums, [&](uint32_t i) { return res[i] < 0; },
      [&](uint32_t i, uint32_t pos) {
        if (umq_base + pos < umq_cap) job.umq[umq_base + pos] = job.msgs[i];
      });
  if (late && no_unexpected) status |= kStatusUnexpected;
  if (umq_base + late > umq_cap) {
    status |= kStatusUmqOverflow;
    umq_n = umq_cap;
  } else {
    umq_n = umq_base + late;
  }
  coop::sync(c);  // appended messages visible, scratch free again

  // Phase 2: new receives against the unexpected messages. With an empty UMQ (always, in
  // no-unexpected mode when the precondition holds) there is nothing to scan or compact.
  const bool scan = umq_n > 0 && job.n_recvs > 0;
  if (scan) {
    phase(std::true_type{}, job.recvs, job.n_recvs, job.umq, umq_n, res, taken);
    coop::sync(c);
    nm += ordered_emit(
        c, job.n_recvs, sums, [&](uint32_t i) { return res[i] >= 0; },
        [&](uint32_t i, uint32_t pos) { job.matches[nm + pos] = Match{job.umq[res[i]].handle, job.recvs[i].handle}; });
    coop::sync(c);
    umq_n = compact_untaken(c, job.umq, umq_n, taken, sums);
  }
  const uint32_t prq_cap = job.prq_cap, prq_base = prq_n;
  const uint32_t waiting = ordered_emit(
      c, job.n_recvs, sums, [&](uint32_t i) { return !scan || res[i] < 0; },
      [&](uint32_t i, uint32_t pos) {
        if (prq_base + pos < prq_cap) job.prq[prq_base + pos] = job.recvs[i];
      });
  if (prq_base + waiting > prq_cap) {
    status |= kStatusPrqOverflow;
    prq_n = prq_cap;
  } else {
    prq_n = prq_base + waiting;
  }
  if (leader) {
    *job.umq_size = umq_n;
    *job.prq_size = prq_n;
    *job.n_matches = nm;
    if (status) mem::fetch_or<mem::kDevice>(job.status, status, mem::relaxed);
  }
  coop::sync(c);
}

}  // namespace detail

// MPI-compliant matching: wildcards and non-overtaking, exactly the reference semantics.
__device__ inline void match_ordered(coop::Block b, const MatchJob& job, BlockMatchShared& s,
                                     bool no_unexpected = false) {
  detail::run_batch(b, job, s, no_unexpected, kBlockMaxTargets,
                    [&](auto recvs, const Envelope* p, uint32_t np, const Envelope* t, uint32_t nt, int32_t* r,
                        uint32_t*) { match_phase<decltype(recvs)::value>(b, p, np, t, nt, r, s); });
}

__device__ inline void match_ordered(coop::Warp w, const MatchJob& job, WarpMatchShared& s,
                                     bool no_unexpected = false) {
  detail::run_batch(w, job, s, no_unexpected, kWarpMaxTargets,
                    [&](auto recvs, const Envelope* p, uint32_t np, const Envelope* t, uint32_t nt, int32_t* r,
                        uint32_t* taken) { match_phase<decltype(recvs)::value>(w, p, np, t, nt, r, taken); });
}

// No-unexpected mode: the caller promises that receives are posted before their messages, so
// the UMQ stays empty and phase 2 reduces to appending. A message that finds no receive still
// gets the reference treatment (it joins the UMQ) and sets kStatusUnexpected.
template <class Coop, class Shared>
__device__ void match_no_unexpected(Coop c, const MatchJob& job, Shared& s) {
  match_ordered(c, job, s, true);
}

// Partitioned mode: one queue pair per (communicator, source), so no ANY_SOURCE anywhere; a warp
// matches one partition and a block holds many. A job with ANY_SOURCE is left unchanged and
// gets kStatusWildcard.
__device__ inline void match_partitioned(coop::Warp w, const MatchJob& job, WarpMatchShared& s) {
  const bool any =
      detail::any_entry(w, job.prq, *job.prq_size, s, [](const Envelope& e) { return e.src == kAnySource; }) ||
      detail::any_entry(w, job.recvs, job.n_recvs, s, [](const Envelope& e) { return e.src == kAnySource; });
  if (any) {
    if (coop::lane_id() == 0) {
      mem::fetch_or<mem::kDevice>(job.status, kStatusWildcard, mem::relaxed);
      *job.n_matches = 0;
    }
    __syncwarp();
    return;
  }
  match_ordered(w, job, s, false);
}

}  // namespace gpucomm::matching
