#pragma once
// GPU producers of descriptor queues (protocol: gpucomm/proxy/descriptor.hpp). One thread posts
// per operation (the group's leader); the others fence and synchronize before it
// (detail::publish_group), so the agent sees what the whole group wrote.
//
//   post:   raw = fetch_add(head) (relaxed, device scope: it only allocates), ticket t = raw &
//           kTicketMask; wait for space only when the cached consumer index says the ring is full;
//           56 bytes of plain stores into the slot; release of the stamp (device scope when the GPU
//           agent serves the queue, system scope for a CPU proxy); a posted release max of the
//           doorbell every doorbell_every tickets.
//   wait:   GPU agent: acquire polls (device scope) of the agent's `consumed`/`completed` in device
//           memory. CPU proxy: its words sit in pinned host memory; the waiters poll device-memory
//           copies (consumed_cache, completed_cache) and the one that takes `poller` reads the host
//           word (acquire, system scope) and raises the copy (fetch_max, release): one PCIe reader
//           per queue whatever the number of waiters. Waiters sleep in proportion to how far their
//           target lies ahead. Every wait has the handle's timeout and ends when the queue fails.
//   wake:   GPU agent only. The agent sets kAgentClosed in every head with an RMW before an idle
//           exit; a producer whose fetch_add returns the bit stores 1 into the host-mapped wake
//           word after posting. No fence on the post path: RMWs on one word are totally ordered,
//           so either the agent's RMW sees the reserved ticket (and it stays) or the producer's
//           sees the bit (and it wakes the host).
#include <cstddef>
#include <cstdint>
#include <cuda/std/type_traits>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/handle_device.cuh"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

// Whether operations to `pe` go through a queue.
__device__ __forceinline__ bool serves(const DeviceHandle& h, int pe) {
  if (h.num_queues == 0) return false;
  if (h.transport != TransportKind::automatic) return h.transport != TransportKind::direct;
  return static_cast<unsigned>(pe) < static_cast<unsigned>(h.size) && h.peer_bases[pe] == nullptr;
}

__device__ __forceinline__ uint32_t block_linear() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

// The queue of the calling thread: its block's, or its warp's.
__device__ __forceinline__ const QueueView& queue_of(const DeviceHandle& h) {
  uint32_t i = block_linear();
  if (h.queue_per_warp) {
    const uint32_t warps = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    i = i * warps + coop::warp_id();
  }
  return h.queues[i % h.num_queues];
}

// Records the failure of queue `q` (its status says why) and traps.
__device__ __noinline__ inline void fail_queue(const DeviceHandle& h, const QueueView& q, DeviceOp op, int pe) {
  detail::fail(h, DeviceFault::proxy, op, pe, nullptr, Cmp::eq, mem::load<mem::kSystem>(q.status, mem::acquire),
               mem::load<mem::kSystem>(q.fault_ticket, mem::relaxed), 0, q.queue_id + 1);
}

namespace queue_detail {

// Sleeps before the next poll of a waiter `missing` entries short of its target: hardly at all
// near it, longer further back (thousands of waiters polling one word slow down the agent).
__device__ __forceinline__ void backoff(uint32_t i, uint64_t missing) {
  if (i <= 16) return;
  uint64_t ns = missing < 128 ? 64 : missing / 2;
  if (i > 4096 && ns < 1000) ns = 1000;
  __nanosleep(static_cast<unsigned>(ns < 4000 ? ns : 4000));
}

// GPU agent: a failed queue has consumed > completed for good (the agent stores completed before
// consumed otherwise, and a reader that acquires consumed then reads completed sees completed >=
// consumed), device memory only; `status`, in host memory, is read only then.
__device__ __forceinline__ bool agent_failed(const QueueView& q) {
  const uint64_t consumed = mem::load<mem::kDevice>(q.consumed, mem::acquire);
  return consumed > mem::load<mem::kDevice>(q.completed, mem::relaxed);
}

// CPU proxy: refreshes the device copy `cache` of the agent's host word `word`, when this thread
// wins `poller`. Returns false when an earlier poller found the queue failed.
__device__ inline bool refresh(const QueueView& q, const uint64_t* word, uint64_t* cache, uint32_t i) {
  // Test, then test-and-set: thousands of waiters read the word; only a free poller is contended.
  const uint32_t seen = mem::load<mem::kDevice>(q.poller, mem::relaxed);
  if (seen == 2u) return false;
  if (seen != 0u) return true;
  const uint32_t was = mem::compare_exchange<mem::kDevice>(q.poller, 0u, 1u, mem::acquire);
  if (was == 2u) return false;
  if (was != 0u) return true;
  // Acquire at system scope (the CPU released it), then a release of the copy at device scope:
  // whoever acquires the copy sees what the agent did before its release (causality is transitive).
  const uint64_t v = mem::load<mem::kSystem>(word, mem::acquire);
  mem::fetch_max<mem::kDevice>(cache, v, mem::release);
  const bool failed = (i & 15u) == 0 && mem::load<mem::kSystem>(q.status, mem::relaxed) != 0;
  mem::store<mem::kDevice>(q.poller, failed ? 2u : 0u, mem::release);
  return !failed;
}

}  // namespace queue_detail

// Waits until the agent's counter `word` (q.consumed or q.completed) reaches `target`; `cache`
// is the producers' device-memory copy of it (CPU proxy), or null to poll `word` (GPU agent).
// Fails with a record naming the queue past the handle's timeout or once the queue failed.
__device__ inline uint64_t wait_queue_word(const DeviceHandle& h, const QueueView& q, const uint64_t* word,
                                           uint64_t* cache, uint64_t target, DeviceOp op, int pe) {
  const uint64_t* polled = cache ? cache : word;
  uint64_t seen = mem::load<mem::kDevice>(polled, mem::acquire);
  if (seen >= target) return seen;
  const uint64_t start = mem::globaltimer();
  for (uint32_t i = 1;; ++i) {
    if (cache && !queue_detail::refresh(q, word, cache, i)) fail_queue(h, q, op, pe);
    seen = mem::load<mem::kDevice>(polled, mem::acquire);
    if (seen >= target) return seen;
    queue_detail::backoff(i, target - seen);
    if ((i & 255u) == 0) {
      // The status word lives in host memory: the GPU agent's waiters read it rarely (a stopped
      // agent), and at once when the device words say the agent failed the queue.
      if (!cache && (queue_detail::agent_failed(q) || (i & 65535u) == 0) &&
          mem::load<mem::kSystem>(q.status, mem::relaxed) != 0)
        fail_queue(h, q, op, pe);
      detail::wait_check(h, start, op, pe, nullptr, Cmp::ge, target, seen, q.queue_id + 1, (i & 65535u) == 0);
    }
  }
}

// Reads `bytes` (1..8) from `src` into the low bytes of a word (put_signal_inline payloads).
__device__ inline uint64_t load_small(const void* src, size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(src);
  if (bytes == 8 && (a & 7u) == 0) return *static_cast<const uint64_t*>(src);
  if (bytes == 4 && (a & 3u) == 0) return *static_cast<const uint32_t*>(src);
  uint64_t v = 0;
  const auto* s = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(s[i]) << (8 * i);
  return v;
}

namespace queue_detail {

// The stamp of ticket t: device scope when the GPU agent on this GPU serves the queue, system
// scope for a CPU proxy.
template <mem::Scope S>
__device__ __forceinline__ void publish_stamps(const QueueView& q, uint64_t first, unsigned n, bool one) {
  if (one) {
    mem::store<S>(&q.ring[static_cast<uint32_t>(first) & (q.capacity - 1)].stamp, first + 1, mem::release);
    return;
  }
  // Every lane of the group wrote its entry before the warp barrier; this fence and the stores
  // after it form a release pattern that covers them (causality through the barrier).
  mem::fence<S>(mem::acq_rel);
  for (unsigned i = 0; i < n; ++i)
    mem::store<S>(&q.ring[static_cast<uint32_t>(first + i) & (q.capacity - 1)].stamp, first + i + 1, mem::relaxed);
}

}  // namespace queue_detail

// Posts `d` and returns its ticket. With `result_slot`, the entry's local address is the queue's
// result slot of the ticket (g and fetching atomics); with `inline_src`, d.compare receives the
// d.bytes (1..8) at inline_src (put_signal_inline), read while the ticket is on its way.
// The lanes of a warp that post to the same queue at the same time share the work: the lowest
// takes their tickets with one fetch_add, each writes its own entry, and after a warp barrier the
// lowest releases all their stamps behind one fence (rings of 64 entries or more; smaller rings post
// one by one, so that no lane waits for space behind a ticket of its own group).
__device__ inline uint64_t post(const DeviceHandle& h, const QueueView& q, Descriptor d, bool result_slot = false,
                                const void* inline_src = nullptr) {
  const uint64_t began = q.trace ? mem::globaltimer() : 0;
  const unsigned lane = coop::lane_id();
  const unsigned group =
      q.capacity >= 64 ? __match_any_sync(__activemask(), reinterpret_cast<uintptr_t>(q.head)) : (1u << lane);
  const unsigned first_lane = static_cast<unsigned>(__ffs(group)) - 1u;
  const unsigned n = static_cast<unsigned>(__popc(group));
  const unsigned rank = static_cast<unsigned>(__popc(group & ((1u << lane) - 1u)));
  // Issued before the fetch_add, which does not wait for it: both are in flight together.
  if (inline_src) d.compare = load_small(inline_src, d.bytes);
  uint64_t raw = 0;
  if (lane == first_lane) raw = mem::fetch_add<mem::kDevice>(q.head, uint64_t(n), mem::relaxed);
  if (n > 1) raw = __shfl_sync(group, raw, static_cast<int>(first_lane));
  const uint64_t base = raw & kTicketMask;
  const uint64_t t = base + rank;
  if (t >= mem::load<mem::kDevice>(q.consumed_cache, mem::acquire) + q.capacity) {
    const uint64_t target = t - q.capacity + 1;
    if (q.gpu_agent) {
      const uint64_t c = wait_queue_word(h, q, q.consumed, nullptr, target, DeviceOp::proxy_post, d.pe);
      mem::fetch_max<mem::kDevice>(q.consumed_cache, c, mem::release);
    } else {
      wait_queue_word(h, q, q.consumed, q.consumed_cache, target, DeviceOp::proxy_post, d.pe);
    }
  }
  // No status check here: it may live across PCIe. A failed queue fails the next wait instead.
  const uint32_t idx = static_cast<uint32_t>(t) & (q.capacity - 1);
  if (result_slot) d.local = reinterpret_cast<uint64_t>(&q.results[idx]);
  Descriptor* slot = &q.ring[idx];
  const int4* s4 = reinterpret_cast<const int4*>(&d);
  int4* d4 = reinterpret_cast<int4*>(slot);
  d4[0] = s4[0];
  d4[1] = s4[1];
  d4[2] = s4[2];
  slot->compare = d.compare;
  if (q.trace) {  // stamped before the release of the stamp, so the agent's stamps come later
    TraceRecord* rec = &q.trace[idx];
    mem::store<mem::kSystem>(&rec->post, began, mem::relaxed);
    mem::store<mem::kSystem>(&rec->ticket, t + 1, mem::relaxed);
    mem::store<mem::kSystem>(&rec->posted, mem::globaltimer(), mem::relaxed);
  }
  if (n > 1) __syncwarp(group);
  if (lane == first_lane) {
    // A GPU agent runs on this GPU: release at device scope is enough (and cheaper than system scope).
    if (q.gpu_agent) {
      queue_detail::publish_stamps<mem::kDevice>(q, base, n, n == 1);
    } else {
      queue_detail::publish_stamps<mem::kSystem>(q, base, n, n == 1);
    }
    // The doorbell: every entry of the group is stamped; announce them when one crossed a multiple.
    if (q.doorbell_every && (base + n) / q.doorbell_every != base / q.doorbell_every)
      mem::red_max<mem::kSystem>(q.doorbell, base + n, mem::release);
    // The GPU agent closed this queue before leaving (see the top): ask the host to start it again.
    if (raw & kAgentClosed) mem::store<mem::kSystem>(q.agent_wake, 1u, mem::relaxed);
  }
  return t;
}

// Announces every posted entry (doorbell batching).
__device__ inline void flush_queue(const QueueView& q) {
  if (q.doorbell_every) {
    const uint64_t head = mem::load<mem::kDevice>(q.head, mem::relaxed) & kTicketMask;
    mem::red_max<mem::kSystem>(q.doorbell, head, mem::release);
  }
}

// Waits (one thread) until ticket `t` completed.
__device__ inline void wait_ticket(const DeviceHandle& h, const QueueView& q, uint64_t t, DeviceOp op, int pe) {
  flush_queue(q);
  wait_queue_word(h, q, q.completed, q.completed_cache, t + 1, op, pe);
}

// The 8-byte result of ticket `t` (g, fetching atomics), once it completed: the agent wrote it
// before its release of `completed`, which wait_ticket acquired.
__device__ __forceinline__ uint64_t result_of(const QueueView& q, uint64_t t) {
  return mem::load<mem::kSystem>(&q.results[static_cast<uint32_t>(t) & (q.capacity - 1)], mem::relaxed);
}

// Completes (one thread) every entry posted to `q` so far.
__device__ inline void quiet_queue(const DeviceHandle& h, const QueueView& q) {
  const uint64_t head = mem::load<mem::kDevice>(q.head, mem::acquire) & kTicketMask;
  if (head == 0) return;
  flush_queue(q);
  wait_queue_word(h, q, q.completed, q.completed_cache, head, DeviceOp::quiet, -1);
}

// Completes (one thread) the entries of every queue of this PE: what earlier kernels posted.
__device__ inline void quiet_all_queues(const DeviceHandle& h) {
  for (uint32_t i = 0; i < h.num_queues; ++i) quiet_queue(h, h.queues[i]);
}

// The proxy part of quiet(): the group's queues (a block in per-warp mode covers its warps').
template <class Coop>
__device__ inline void quiet_group(Coop c, const DeviceHandle& h) {
  if (h.num_queues == 0) return;
  if constexpr (cuda::std::is_same_v<Coop, coop::Block>) {
    if (h.queue_per_warp) {
      const uint32_t warps = (coop::size(c) + 31) / 32;
      const uint32_t base = block_linear() * warps;
      for (uint32_t w = coop::thread_rank(c); w < warps; w += coop::size(c))
        quiet_queue(h, h.queues[(base + w) % h.num_queues]);
      return;
    }
  }
  if (detail::leader(c)) quiet_queue(h, queue_of(h));
}

}  // namespace gpucomm::proxy
