#pragma once
// Barriers over all PEs of the job, from one group per PE (exactly one thread, warp or block
// of each PE calls, and no other barrier of the same kind runs on that PE meanwhile). Each
// barrier also completes the group's earlier puts (quiet). Every PE must be reachable.
//
// barrier_master: store-only, two phases. Each PE stores its epoch into its own arrival slot on
//   PE 0 (release); PE 0 polls the slots (acquire), then stores the epoch into every PE's release
//   word (release); the others poll that word (acquire). No atomics; 2 hops of latency.
// Notifications to a PE a proxy serves become signal descriptors on that PE's control block (the
// quiet before them completes the earlier entries, so the order holds on that path too).
// barrier_dissemination: ceil(log2 n) rounds; in round k PE i atomically increments the round-k
//   counter of PE i + 2^k (release; a posted `red`, no reply awaited) and waits until its own
//   round-k counter reaches the epoch (acquire). 1 hop per round.
#include "gpucomm/device/rma_device.cuh"

namespace gpucomm::device {

namespace detail {
__device__ inline DeviceControl* control_of(const DeviceHandle& h, int pe, DeviceOp op) {
  return reinterpret_cast<DeviceControl*>(peer_base(h, pe, op, nullptr) - kDeviceControlBytes);
}
// This PE's own control block (always mapped).
__device__ inline DeviceControl* own_control(const DeviceHandle& h) {
  return reinterpret_cast<DeviceControl*>(h.heap_base - kDeviceControlBytes);
}
// Sets or adds to a word of `pe`'s control block: directly, or through the proxy that serves pe.
__device__ inline void notify(const DeviceHandle& h, int pe, size_t field_offset, uint64_t value, SignalOp op, DeviceOp dop,
                              bool relaxed_after_fence = false) {
  if (via_proxy(h, pe)) {
    proxy_signal_at(h, kControlOffset + static_cast<int64_t>(field_offset), value, op, pe);
    return;
  }
  auto* word = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(control_of(h, pe, dop)) + field_offset);
  if (op == SignalOp::set) store_release_sys(word, value);
  else if (relaxed_after_fence) add_relaxed_sys(word, value);
  else add_release_sys(word, value);
}
// The PE's own epoch counter: volatile, so that whichever SM runs the next barrier reads the
// value the previous one wrote (L1 is not coherent between SMs).
__device__ inline uint64_t bump_epoch(uint64_t* counter) {
  volatile uint64_t* v = counter;
  const uint64_t e = *v + 1;
  *v = e;
  return e;
}
}  // namespace detail

template <class Coop>
__device__ inline void barrier_master(Coop c, const DeviceHandle& h) {
  constexpr DeviceOp op = DeviceOp::barrier_master;
  quiet(c, h);
  if (h.size == 1) return;
  DeviceControl* mine = detail::own_control(h);
  uint64_t epoch = 0;
  if (detail::leader(c)) epoch = detail::bump_epoch(&mine->master_epoch);
  epoch = detail::broadcast(c, epoch);
  if (h.size > DeviceControl::kMaxPes)
    detail::fail(h, DeviceFault::bad_argument, op, -1, nullptr, Cmp::lt, static_cast<uint64_t>(h.size - 1), DeviceControl::kMaxPes, 0);
  const int t = coop::thread_rank(c), n = coop::size(c);
  if (h.rank == 0) {
    for (int r = 1 + t; r < h.size; r += n) detail::wait(h, &mine->arrive[r], Cmp::ge, epoch, op, r);
    coop::sync(c);
    for (int r = 1 + t; r < h.size; r += n) detail::notify(h, r, offsetof(DeviceControl, release), epoch, SignalOp::set, op);
  } else if (detail::leader(c)) {
    detail::notify(h, 0, offsetof(DeviceControl, arrive) + sizeof(uint64_t) * static_cast<size_t>(h.rank), epoch, SignalOp::set, op);
    detail::wait(h, &mine->release, Cmp::ge, epoch, op, 0);
  }
  coop::sync(c);
}

template <class Coop>
__device__ inline void barrier_dissemination(Coop c, const DeviceHandle& h) {
  constexpr DeviceOp op = DeviceOp::barrier_dissemination;
  quiet(c, h);
  if (h.size == 1) return;
  if (detail::leader(c)) {
    DeviceControl* mine = detail::own_control(h);
    const uint64_t epoch = detail::bump_epoch(&mine->diss_epoch);
    for (int round = 0, dist = 1; dist < h.size; ++round, dist <<= 1) {
      const int to = (h.rank + dist) % h.size;
      const int from = ((h.rank - dist) % h.size + h.size) % h.size;
      // Round 0 follows quiet's fence (fence + relaxed write is a release pattern); later rounds
      // release what this PE acquired in the round before.
      detail::notify(h, to, offsetof(DeviceControl, diss) + sizeof(uint64_t) * static_cast<size_t>(round), 1, SignalOp::add, op,
                     round == 0);
      detail::wait(h, &mine->diss[round], Cmp::ge, epoch, op, from);
    }
  }
  coop::sync(c);
}

// The default barrier: dissemination (one hop per round, the lowest latency for small jobs), or
// the store-only master barrier where some path cannot add (kHandleSetSignalsOnly).
template <class Coop>
__device__ inline void barrier_all(Coop c, const DeviceHandle& h) {
  if (h.flags & kHandleSetSignalsOnly)
    barrier_master(c, h);
  else
    barrier_dissemination(c, h);
}

}  // namespace gpucomm::device
