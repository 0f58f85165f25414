#pragma once
// Operations of the warp-parallel queue (see warp_queue.hpp and docs/MATCHING.md).
//
// Protocol. Tickets t = 0, 1, 2, ... name queue positions; slot = t mod capacity.
//   Producer warp (n = number of active lanes, 1..32): the leader lane loads write_reserve w
//     (relaxed) and read_commit r (acquire); if w + n - r > capacity the queue is full; else it
//     CASes write_reserve from w to w + n (relaxed). Each active lane writes its element to slot
//     (w + its rank) and then stores stamp[slot] = ticket + 1 with release.
//   Consumer warp: the leader loads read_reserve r and write_reserve w; n = min(w - r, wanted);
//     it CASes read_reserve from r to r + n. Lane k < n waits until stamp[slot(r + k)] equals
//     r + k + 1 (acquire), then reads the element. After __syncwarp the leader waits until
//     read_commit equals r (consumers commit in ticket order), issues a release fence and stores
//     read_commit = r + n with release, which hands the slots back to producers.
// The acquire load of read_commit by producers pairs with that release: no producer overwrites a
// slot before its previous element was read. The release stamp pairs with the consumer's acquire:
// no consumer reads an element before it is written. Stamps carry the ticket, so a stale stamp
// from an earlier lap never passes for a fresh one.

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/matching/warp_queue.hpp"

namespace gpucomm::matching {
namespace detail {

// The scope of the queue's words: the block for a queue in shared memory, the GPU otherwise.
template <QueueScope S>
inline constexpr mem::Scope kQueueScope = S == QueueScope::block ? mem::kBlock : mem::kDevice;

__device__ __forceinline__ unsigned long long now_ns() {
  return mem::globaltimer();
}

__device__ __forceinline__ bool now_late(unsigned long long start, unsigned long long limit) {
  return now_ns() - start > limit;
}

__device__ __forceinline__ unsigned long long shfl64(unsigned long long v, int src) {
  const uint32_t lo = __shfl_sync(0xffffffffu, static_cast<uint32_t>(v), src);
  const uint32_t hi = __shfl_sync(0xffffffffu, static_cast<uint32_t>(v >> 32), src);
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

// Spins until ready() or the queue's timeout; returns false on timeout (and counts an error).
template <class T, QueueScope S, class Ready>
__device__ bool wait_until(const WarpQueue<T, S>& q, Ready ready) {
  const unsigned long long start = q.timeout_ns ? now_ns() : 0;
  uint32_t spins = 0;
  while (!ready()) {
    if (++spins > 64) __nanosleep(spins < 4096 ? 32 : 256);
    if (q.timeout_ns && (spins & 255) == 0 && now_ns() - start > q.timeout_ns) {
      mem::fetch_add<kQueueScope<S>>(&q.control->errors.value, 1ull, mem::relaxed);
      return false;
    }
  }
  return true;
}

}  // namespace detail

// Every active lane enqueues `item` (lanes in order), all or none. Returns the number enqueued
// (warp-uniform): 0 when the queue lacks room for all of them. All 32 lanes must call it.
template <class T, QueueScope S>
__device__ uint32_t try_enqueue(coop::Warp, const WarpQueue<T, S>& q, const T& item, bool active = true,
                                unsigned long long* ticket = nullptr) {
  const uint32_t lane = coop::lane_id();
  const uint32_t act = __ballot_sync(0xffffffffu, active);
  const uint32_t n = __popc(act);
  if (n == 0) return 0;
  unsigned long long first = 0, ok = 0;
  if (lane == 0) {
    constexpr mem::Scope Sc = detail::kQueueScope<S>;
    unsigned long long* wr = &q.control->write_reserve.value;
    unsigned long long w = mem::load<Sc>(wr, mem::relaxed);
    for (;;) {
      const unsigned long long r = mem::load<Sc>(&q.control->read_commit.value, mem::acquire);
      if (w + n - r > q.capacity) break;  // full
      const unsigned long long seen = mem::compare_exchange<Sc>(wr, w, w + n, mem::relaxed);
      if (seen == w) {
        first = w;
        ok = 1;
        break;
      }
      w = seen;
    }
  }
  ok = __shfl_sync(0xffffffffu, static_cast<uint32_t>(ok), 0);
  if (!ok) return 0;
  first = detail::shfl64(first, 0);
  if (active) {
    const unsigned long long t = first + __popc(act & coop::lanemask_lt());
    const uint32_t slot = static_cast<uint32_t>(t) & (q.capacity - 1);
    q.slots[slot] = item;
    mem::store<detail::kQueueScope<S>>(&q.stamps[slot], t + 1, mem::release);
    if (ticket) *ticket = t;
  }
  return n;
}

// Blocking enqueue: retries while the queue is full. Returns false (warp-uniform) after
// q.timeout_ns; lane 0 alone decides, so that the lanes never diverge around the collectives.
template <class T, QueueScope S>
__device__ bool enqueue(coop::Warp w, const WarpQueue<T, S>& q, const T& item, bool active = true,
                        unsigned long long* ticket = nullptr) {
  const unsigned long long start = q.timeout_ns ? detail::now_ns() : 0;
  for (uint32_t spins = 0;; ++spins) {
    if (try_enqueue(w, q, item, active, ticket) != 0 || __ballot_sync(0xffffffffu, active) == 0) return true;
    int late = 0;
    if (coop::lane_id() == 0 && q.timeout_ns && detail::now_late(start, q.timeout_ns)) {
      mem::fetch_add<detail::kQueueScope<S>>(&q.control->errors.value, 1ull, mem::relaxed);
      late = 1;
    }
    if (__shfl_sync(0xffffffffu, late, 0)) return false;
    if (spins > 16) __nanosleep(spins < 4096 ? 64 : 512);
  }
}

// Dequeues up to `max_items` (at most 32) elements: lane k < n gets one in `item` (and its
// ticket). Returns n (warp-uniform), 0 when the queue is empty. Returns n even if a wait timed
// out (the lane's item is then garbage and control->errors is nonzero). All lanes must call it.
template <class T, QueueScope S>
__device__ uint32_t try_dequeue(coop::Warp, const WarpQueue<T, S>& q, T& item, uint32_t max_items = 32,
                                unsigned long long* ticket = nullptr) {
  const uint32_t lane = coop::lane_id();
  if (max_items > 32) max_items = 32;
  unsigned long long first = 0, n = 0;
  if (lane == 0 && max_items > 0) {
    constexpr mem::Scope Sc = detail::kQueueScope<S>;
    unsigned long long* rr = &q.control->read_reserve.value;
    unsigned long long r = mem::load<Sc>(rr, mem::relaxed);
    for (;;) {
      const unsigned long long w = mem::load<Sc>(&q.control->write_reserve.value, mem::relaxed);
      if (w <= r) break;  // empty
      const unsigned long long k = w - r < max_items ? w - r : max_items;
      const unsigned long long seen = mem::compare_exchange<Sc>(rr, r, r + k, mem::relaxed);
      if (seen == r) {
        first = r;
        n = k;
        break;
      }
      r = seen;
    }
  }
  n = __shfl_sync(0xffffffffu, static_cast<uint32_t>(n), 0);
  if (n == 0) return 0;
  first = detail::shfl64(first, 0);
  if (lane < n) {
    const unsigned long long t = first + lane;
    const uint32_t slot = static_cast<uint32_t>(t) & (q.capacity - 1);
    detail::wait_until(q, [&] { return mem::load<detail::kQueueScope<S>>(&q.stamps[slot], mem::acquire) == t + 1; });
    item = q.slots[slot];
    if (ticket) *ticket = t;
  }
  __syncwarp();
  if (lane == 0) {
    unsigned long long* rc = &q.control->read_commit.value;
    detail::wait_until(q, [&] { return mem::load<detail::kQueueScope<S>>(rc, mem::relaxed) == first; });
    // The other lanes' reads of their slots were ordered before this lane by __syncwarp; the
    // fence makes them part of this release (a release store covers only this lane's own).
    mem::fence<detail::kQueueScope<S>>(mem::acq_rel);
    mem::store<detail::kQueueScope<S>>(rc, first + n, mem::release);
  }
  __syncwarp();
  return static_cast<uint32_t>(n);
}

// Elements enqueued and not yet dequeued (a snapshot; exact only when the queue is quiet).
template <class T, QueueScope S>
__device__ unsigned long long queue_size(const WarpQueue<T, S>& q) {
  return mem::load<detail::kQueueScope<S>>(&q.control->write_reserve.value, mem::relaxed) -
         mem::load<detail::kQueueScope<S>>(&q.control->read_reserve.value, mem::relaxed);
}

// Shared-memory queue: the block carves slots, stamps and control out of shared memory and
// calls this once (all threads) before use.
template <class T>
__device__ WarpQueue<T, QueueScope::block> make_shared_queue(coop::Block, T* slots, unsigned long long* stamps,
                                                             QueueControl* control, uint32_t capacity,
                                                             unsigned long long timeout_ns = 0) {
  for (uint32_t i = threadIdx.x; i < capacity; i += blockDim.x) stamps[i] = 0;
  if (threadIdx.x == 0) {
    control->write_reserve.value = control->read_reserve.value = control->read_commit.value = 0;
    control->errors.value = 0;
  }
  __syncthreads();
  return WarpQueue<T, QueueScope::block>{slots, stamps, control, capacity, timeout_ns};
}

}  // namespace gpucomm::matching
