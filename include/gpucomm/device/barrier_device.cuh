#pragma once
// Barriers from one group per PE (exactly one thread, warp or block of each member PE calls, and
// no other barrier on the same team runs on that PE meanwhile). Each barrier also completes the
// group's earlier puts (quiet). Every member must be reachable.
//
// barrier(c, h, team): dissemination, ceil(log2 n) rounds. The team's slot has, in every PE's
//   control block, an epoch (barriers of this team the PE entered, written by the PE alone) and
//   one word per round. In round k, team rank i stores its epoch into round word k of team rank
//   (i + 2^k) mod n (release, system scope; a posted store) and waits until its own round word k
//   reaches the epoch (acquire). Each PE has exactly one sender per round, and epochs only grow,
//   so a store (not an atomic add) suffices: an early arrival of the next barrier only raises the
//   word. 1 hop per round; works over every path, set-only ones included.
// barrier_master(c, h): the world only; store-only, two phases. Each PE stores its epoch into its
//   own arrival slot on PE 0 (release); PE 0 polls the slots (acquire), then stores the epoch into
//   every PE's release word (release); the others poll that word (acquire). 2 hops of latency.
// Notifications to a PE a proxy serves become signal descriptors on that PE's control block (the
// quiet before them completes the earlier entries, so the order holds on that path too).
#include <cstddef>

#include "gpucomm/base/team.hpp"
#include "gpucomm/device/rma_device.cuh"

namespace gpucomm::detail {

__device__ inline DeviceControl* control_of(const DeviceHandle& h, int pe, DeviceOp op) {
  return reinterpret_cast<DeviceControl*>(peer_base(h, pe, op, nullptr) - kDeviceControlBytes);
}
// Stores `value` into a word of `pe`'s control block (release): directly, or through the proxy
// that serves pe. `relaxed_after_fence`: the caller fenced just before (fence + relaxed store is a
// release pattern), which spares a second fence on the direct path.
__device__ inline void notify(const DeviceHandle& h, int pe, size_t field_offset, uint64_t value, DeviceOp dop,
                              bool relaxed_after_fence = false) {
  if (proxy::serves(h, pe)) {
    proxy::routed_signal_at(h, kControlOffset + static_cast<int64_t>(field_offset), value, SignalOp::set, pe);
    return;
  }
  auto* word = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(control_of(h, pe, dop)) + field_offset);
  mem::store<mem::kSystem>(word, value, relaxed_after_fence ? mem::relaxed : mem::release);
}
// A PE's own barrier epoch: only this PE's barrier leader writes it, one barrier of its kind at a
// time; device scope so that whichever SM runs the next barrier reads the last value.
__device__ inline uint64_t bump_epoch(uint64_t* counter) {
  const uint64_t e = mem::load<mem::kDevice>(counter, mem::relaxed) + 1;
  mem::store<mem::kDevice>(counter, e, mem::relaxed);
  return e;
}

}  // namespace gpucomm::detail

namespace gpucomm::device {

template <class Coop>
__device__ inline void barrier(Coop c, const DeviceHandle& h, const TeamHandle& team) {
  constexpr DeviceOp op = DeviceOp::team_barrier;
  detail::check_team(h, team, op);
  quiet(c, h);
  if (team.size == 1) return;
  if (detail::leader(c)) {
    DeviceControl* mine = detail::own_control(h);
    const int slot = team.slot;
    const uint64_t epoch = detail::bump_epoch(&mine->team_epoch[slot]);
    for (int round = 0, dist = 1; dist < team.size; ++round, dist <<= 1) {
      const int to = team_world_rank(team, (team.rank + dist) % team.size);
      const int from = team_world_rank(team, ((team.rank - dist) % team.size + team.size) % team.size);
      // Round 0 follows quiet's fence; later rounds release what this PE acquired in the round before.
      detail::notify(h, to,
                     offsetof(DeviceControl, team_round) +
                         sizeof(uint64_t) * (static_cast<size_t>(slot) * kMaxBarrierRounds + round),
                     epoch, op, round == 0);
      detail::wait(h, &mine->team_round[slot][round], Cmp::ge, epoch, op, from);
    }
  }
  coop::sync(c);
}

template <class Coop>
__device__ inline void barrier_master(Coop c, const DeviceHandle& h) {
  constexpr DeviceOp op = DeviceOp::barrier_master;
  quiet(c, h);
  if (h.size == 1) return;
  DeviceControl* mine = detail::own_control(h);
  uint64_t epoch = 0;
  if (detail::leader(c)) epoch = detail::bump_epoch(&mine->master_epoch);
  epoch = detail::broadcast(c, epoch);
  if (h.size > DeviceControl::kMaxPes) {
    detail::fail(h, DeviceFault::bad_argument, op, -1, nullptr, Cmp::lt, static_cast<uint64_t>(h.size - 1),
                 DeviceControl::kMaxPes, 0);
  }
  const int t = static_cast<int>(coop::thread_rank(c)), n = static_cast<int>(coop::size(c));
  if (h.rank == 0) {
    for (int r = 1 + t; r < h.size; r += n) detail::wait(h, &mine->arrive[r], Cmp::ge, epoch, op, r);
    coop::sync(c);
    for (int r = 1 + t; r < h.size; r += n) detail::notify(h, r, offsetof(DeviceControl, release), epoch, op);
  } else if (detail::leader(c)) {
    detail::notify(h, 0, offsetof(DeviceControl, arrive) + sizeof(uint64_t) * static_cast<size_t>(h.rank), epoch, op);
    detail::wait(h, &mine->release, Cmp::ge, epoch, op, 0);
  }
  coop::sync(c);
}

// The world's dissemination barrier (team slot 0).
template <class Coop>
__device__ inline void barrier_dissemination(Coop c, const DeviceHandle& h) {
  barrier(c, h, world_team(h));
}

// The default barrier over all PEs: dissemination (one hop per round, the lowest latency for
// small jobs), or the store-only master barrier where some path cannot add (kHandleSetSignalsOnly).
template <class Coop>
__device__ inline void barrier_all(Coop c, const DeviceHandle& h) {
  if (h.flags & kHandleSetSignalsOnly) {
    barrier_master(c, h);
  } else {
    barrier_dissemination(c, h);
  }
}

}  // namespace gpucomm::device
