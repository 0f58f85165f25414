#pragma once
// Partitioned point-to-point from device code (MPI 4.0 chapter 4; docs/MESSAGING.md, "Partitioned
// communication"). Header-only (no -rdc): pass a PartitionedHandle (PartitionedRequest::device(),
// after start() on the host) to the kernel by value.
//
//   pready(c, h, i)        a send partition is ready: the group (coop::Thread, Warp or Block) puts
//                          its bytes straight into the receiver's buffer, then sets the receiver's
//                          flag of the partition; waits first, if needed, until the receiver
//                          started the round (every wait has the GPUCOMM_TIMEOUT limit)
//   pready_range(c, h, lo, hi)   partitions lo..hi (inclusive), one after the other
//   parrived(h, j)         one thread: whether receive partition j of the current round arrived
//   wait_arrived(c, h, j)  the group waits until receive partition j arrived; every thread may
//                          then read its bytes
//
// Bad arguments (a partition outside the request, pready on a receive request, a partition marked
// twice in a round, a call before start) and waits that time out trap with a record naming the
// call, the partition, the round, rank, peer, communicator and tag: Partitioned::check_device()
// raises it on the host.
#include <cstdint>

#include "gpucomm/base/group_device.cuh"
#include "gpucomm/base/handle_device.cuh"
#include "gpucomm/device/rma_device.cuh"
#include "gpucomm/messaging/partitioned_protocol.hpp"

namespace gpucomm::msg {

namespace part {

// The protocol's backend in kernels (partitioned_protocol.hpp lists what it offers): this PE's
// words at system scope (the peer writes some of them), puts through the one-sided device API
// (direct stores over NVLink or PCIe, or a descriptor for a PE that a proxy serves).
class DeviceBackend {
 public:
  __device__ explicit DeviceBackend(const PartitionedHandle& h) : h_(h) {}
  template <class C>
  __device__ bool leader(C c) const {
    return gpucomm::detail::leader(c);
  }
  template <class C, class T>
  __device__ T bcast(C c, T v) const {
    return gpucomm::detail::broadcast(c, v);
  }
  __device__ uint64_t load(const uint64_t* p) const { return mem::load<mem::kSystem>(p, mem::acquire); }
  __device__ uint64_t exchange(uint64_t* p, uint64_t v) const {
    return mem::exchange<mem::kSystem>(p, v, mem::acq_rel);
  }
  __device__ void add(uint64_t* p, uint64_t v) const { mem::red_add<mem::kSystem>(p, v, mem::release); }
  template <class T>
  __device__ T* at(uint64_t offset) const {
    return reinterpret_cast<T*>(h_.dev.heap_base + offset);
  }
  template <class C>
  __device__ void put_signal(C c, void* dst, const void* src, size_t n, uint64_t* sig, uint64_t v, int pe) const {
    device::put_signal(c, h_.dev, dst, src, n, sig, v, SignalOp::set, pe);
  }

 private:
  const PartitionedHandle& h_;
};

// Records the failure (the first failing thread of the PE wins) and traps through the one-sided
// layer's record, so that Runtime::check_device() reports it too.
__device__ __noinline__ inline void fail(const PartitionedHandle& h, PartCall call, PartFault fault, uint64_t partition,
                                         uint64_t round, uint64_t expected, uint64_t seen, uint64_t elapsed_ns = 0,
                                         uint32_t waited_for = 0, uint64_t send_partition = 0,
                                         const void* addr = nullptr) {
  PartDiag* d = h.diag;
  if (d && mem::compare_exchange<mem::kSystem>(&d->state, PartDiag::kEmpty, PartDiag::kWriting, mem::relaxed) ==
               PartDiag::kEmpty) {
    d->call = call;
    d->fault = fault;
    d->rank = h.dev.rank;
    d->peer = h.peer;
    d->comm_rank = h.comm_rank;
    d->peer_rank = h.peer_rank;
    d->ctx = h.ctx;
    d->tag = h.tag;
    d->partition = static_cast<uint32_t>(partition);
    d->waited_for = waited_for;
    d->send_partition = static_cast<uint32_t>(send_partition);
    d->round = round;
    d->expected = expected;
    d->seen = seen;
    d->elapsed_ns = elapsed_ns;
    d->block[0] = blockIdx.x, d->block[1] = blockIdx.y, d->block[2] = blockIdx.z;
    d->thread[0] = threadIdx.x, d->thread[1] = threadIdx.y, d->thread[2] = threadIdx.z;
    mem::store<mem::kSystem>(&d->state, PartDiag::kReady, mem::release);  // the host acquires it
  }
  const DeviceFault f = fault == PartFault::timeout      ? DeviceFault::timeout
                        : fault == PartFault::aborted    ? DeviceFault::aborted
                        : fault == PartFault::bad_handle ? DeviceFault::bad_handle
                                                         : DeviceFault::bad_argument;
  gpucomm::detail::fail(h.dev, f, DeviceOp::message, h.peer, addr, Cmp::ge, expected, seen, elapsed_ns);
}

// Spins until `*word >= want` (acquire, system scope) and returns the value seen; past the handle's
// timeout, or once the job failed, records who waited for what and traps. `start`: the first poll.
__device__ inline uint64_t wait_at_least(const PartitionedHandle& h, PartCall call, uint32_t waited_for,
                                         uint64_t partition, uint64_t send_partition, uint64_t round,
                                         const uint64_t* word, uint64_t want, uint64_t start) {
  for (uint32_t i = 1;; ++i) {
    const uint64_t v = mem::load<mem::kSystem>(word, mem::acquire);
    if (v >= want) return v;
    if ((i & 1023u) == 0) {
      const uint64_t waited = mem::globaltimer() - start;
      // The job-state word is host memory: read at a lower cadence than the clock.
      if (const uint32_t failed = (i & 8191u) == 0 ? gpucomm::detail::job_failed(h.dev) : 0u)
        fail(h, call, PartFault::aborted, partition, round, want, failed - 1, waited, waited_for, send_partition, word);
      if (h.dev.timeout_ns != 0 && waited > h.dev.timeout_ns)
        fail(h, call, PartFault::timeout, partition, round, want, v, waited, waited_for, send_partition, word);
    }
  }
}

// The handle, kind, partition and start checks of a call (leader only); returns the owner's round.
__device__ inline uint64_t checked_round(const PartitionedHandle& h, PartCall call, PartKind kind, uint64_t partition) {
  if (check_call(h, h.kind, 0, 1) == PartFault::bad_handle)
    fail(h, call, PartFault::bad_handle, partition, 0, kPartMagic, h.magic);
  const uint64_t r = mem::load<mem::kSystem>(&h.words[kRound], mem::acquire);
  switch (check_call(h, kind, partition, r)) {
    case PartFault::none:
      break;
    case PartFault::wrong_kind:
      fail(h, call, PartFault::wrong_kind, partition, r, static_cast<uint64_t>(kind), static_cast<uint64_t>(h.kind));
      break;
    case PartFault::bad_partition:
      fail(h, call, PartFault::bad_partition, partition, r, h.partitions, partition);
      break;
    default:
      fail(h, call, PartFault::not_started, partition, r, 1, 0);
      break;
  }
  return r;
}

}  // namespace part

// Marks send partition `partition` ready: the group puts its bytes into the receiver's buffer and
// then sets its flag (data before flag on every path). Returns when the partition's bytes may be
// reused. Every thread of the group calls it with the same arguments.
template <class C>
__device__ inline void pready(C c, const PartitionedHandle& h, uint32_t partition) {
  const part::DeviceBackend b(h);
  uint64_t r = 0;
  if (b.leader(c)) {
    r = part::checked_round(h, PartCall::pready, PartKind::send, partition);
    if (part::mark_ready(b, h, r, partition) == r)
      part::fail(h, PartCall::pready, PartFault::twice, partition, r, r - 1, r);
    const uint64_t cts =
        part::wait_at_least(h, PartCall::pready, 0, partition, 0, r, &h.words[part::kCts], r, mem::globaltimer());
    if (part::receiver_state(cts, r) == part::Receiver::refused) {
      const uint64_t theirs = b.load(&h.words[part::kPeerParts]) * b.load(&h.words[part::kPeerBytes]);
      part::fail(h, PartCall::pready, PartFault::refused, partition, r, theirs, h.partitions * h.partition_bytes);
    }
  }
  r = b.bcast(c, r);  // also orders the group's puts after the leader saw the receiver's start
  part::send_partition(b, c, h, r, partition);
}

// pready for partitions lo..hi (inclusive), in order.
template <class C>
__device__ inline void pready_range(C c, const PartitionedHandle& h, uint32_t lo, uint32_t hi) {
  for (uint32_t i = lo; i <= hi; ++i) {
    pready(c, h, i);
    if (i == 0xffffffffu) break;
  }
}

// One thread: whether receive partition `partition` of the current round arrived (its bytes are
// then visible to this thread). A completed round's partitions stay arrived until the next start.
__device__ inline bool parrived(const PartitionedHandle& h, uint32_t partition) {
  const part::DeviceBackend b(h);
  const uint64_t r = part::checked_round(h, PartCall::parrived, PartKind::recv, partition);
  return part::missing(b, h, r, partition) == part::kAllArrived;
}

// The group waits until receive partition `partition` arrived; then every thread may read it.
template <class C>
__device__ inline void wait_arrived(C c, const PartitionedHandle& h, uint32_t partition) {
  const part::DeviceBackend b(h);
  if (b.leader(c)) {
    const uint64_t r = part::checked_round(h, PartCall::wait_arrived, PartKind::recv, partition);
    const uint64_t start = mem::globaltimer();
    for (;;) {
      const uint64_t m = part::missing(b, h, r, partition);
      if (m == part::kAllArrived) break;
      if (m == part::kNotMatched) {
        part::wait_at_least(h, PartCall::wait_arrived, 1, partition, 0, r, &h.words[part::kMatched], 1, start);
      } else {
        const uint64_t* flags = b.at<uint64_t>(b.load(&h.words[part::kFlagsOff]));
        part::wait_at_least(h, PartCall::wait_arrived, 2, partition, m, r, &flags[m], r, start);
      }
    }
  }
  (void)b.bcast(c, 0);  // the leader's acquire, then the group barrier: every thread sees the bytes
}

}  // namespace gpucomm::msg
