#pragma once
// Barriers over all PEs of the job, from one group per PE (exactly one thread, warp or block
// of each PE calls, and no other barrier of the same kind runs on that PE meanwhile). Each
// barrier also completes the group's earlier puts (quiet). Every PE must be reachable.
//
// barrier_master: store-only, two phases. Each PE stores its epoch into its own arrival slot on
//   PE 0 (release); PE 0 polls the slots (acquire), then stores the epoch into every PE's release
//   word (release); the others poll that word (acquire). No atomics; 2 hops of latency.
// barrier_dissemination: ceil(log2 n) rounds; in round k PE i atomically increments the round-k
//   counter of PE i + 2^k (release; a posted `red`, no reply awaited) and waits until its own
//   round-k counter reaches the epoch (acquire). 1 hop per round.
#include "gpucomm/device/rma_device.cuh"

namespace gpucomm::device {

namespace detail {
__device__ inline DeviceControl* control_of(const DeviceHandle& h, int pe, DeviceOp op) {
  return reinterpret_cast<DeviceControl*>(peer_base(h, pe, op, nullptr) - kDeviceControlBytes);
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
  quiet(c);
  if (h.size == 1) return;
  DeviceControl* mine = detail::control_of(h, h.rank, op);
  uint64_t epoch = 0;
  if (detail::leader(c)) epoch = detail::bump_epoch(&mine->master_epoch);
  epoch = detail::broadcast(c, epoch);
  if (h.size > DeviceControl::kMaxPes)
    detail::fail(h, DeviceFault::bad_argument, op, -1, nullptr, Cmp::lt, static_cast<uint64_t>(h.size - 1), DeviceControl::kMaxPes, 0);
  const int t = coop::thread_rank(c), n = coop::size(c);
  if (h.rank == 0) {
    for (int r = 1 + t; r < h.size; r += n) detail::wait(h, &mine->arrive[r], Cmp::ge, epoch, op, r);
    coop::sync(c);
    for (int r = 1 + t; r < h.size; r += n) detail::store_release_sys(&detail::control_of(h, r, op)->release, epoch);
  } else if (detail::leader(c)) {
    detail::store_release_sys(&detail::control_of(h, 0, op)->arrive[h.rank], epoch);
    detail::wait(h, &mine->release, Cmp::ge, epoch, op, 0);
  }
  coop::sync(c);
}

template <class Coop>
__device__ inline void barrier_dissemination(Coop c, const DeviceHandle& h) {
  constexpr DeviceOp op = DeviceOp::barrier_dissemination;
  quiet(c);
  if (h.size == 1) return;
  if (detail::leader(c)) {
    DeviceControl* mine = detail::control_of(h, h.rank, op);
    const uint64_t epoch = detail::bump_epoch(&mine->diss_epoch);
    for (int round = 0, dist = 1; dist < h.size; ++round, dist <<= 1) {
      const int to = (h.rank + dist) % h.size;
      const int from = ((h.rank - dist) % h.size + h.size) % h.size;
      // Round 0 follows quiet's fence (fence + relaxed write is a release pattern); later rounds
      // release what this PE acquired in the round before.
      uint64_t* flag = &detail::control_of(h, to, op)->diss[round];
      if (round == 0) detail::add_relaxed_sys(flag, uint64_t(1));
      else detail::add_release_sys(flag, uint64_t(1));
      detail::wait(h, &mine->diss[round], Cmp::ge, epoch, op, from);
    }
  }
  coop::sync(c);
}

// The default barrier: dissemination (one hop per round, the lowest latency for small jobs).
template <class Coop>
__device__ inline void barrier_all(Coop c, const DeviceHandle& h) {
  barrier_dissemination(c, h);
}

}  // namespace gpucomm::device
