#pragma once
// GPU producers of descriptor queues (protocol: gpucomm/proxy/descriptor.hpp). One thread posts
// per operation (the group's leader); the others fence and synchronize before it
// (detail::publish_group), so the agent sees what the whole group wrote.
//
//   post:   ticket = fetch_add(head) (relaxed, device scope: it only allocates); wait for space
//           only when the cached consumer index says the ring is full (acquire of `consumed`,
//           fetch_max into the cache with release); 56 bytes of plain stores into the slot; release
//           of the stamp (device scope when a GPU agent serves the queue, system scope for a CPU
//           proxy); a posted release max of the doorbell every doorbell_every tickets.
//   wait:   acquire polls of `completed` at system scope (and of `status`, so a failed agent ends
//           the wait), with the handle's timeout and job-state checks.
//   wake:   GPU agent only. Store-then-load handshake with the agent's idle exit (Dekker): the
//           producer's stamp, fence.sc.gpu, load of `agent_state`; the agent's `agent_state = 0`,
//           fence.sc.gpu, loads of the stamps. At least one of them sees the other's store.
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

// Spins until `*word >= target` (acquire, system scope) while the queue is healthy.
__device__ inline uint64_t wait_queue_word(const DeviceHandle& h, const QueueView& q, const uint64_t* word,
                                           uint64_t target, DeviceOp op, int pe) {
  uint64_t seen = mem::load<mem::kSystem>(word, mem::acquire);
  if (seen >= target) return seen;
  const uint64_t start = mem::globaltimer();
  for (uint32_t i = 1;; ++i) {
    seen = mem::load<mem::kSystem>(word, mem::acquire);
    if (seen >= target) return seen;
    // Back off: many waiters polling a word across PCIe slow down the agent they wait for.
    if (i > 32) __nanosleep(i > 1024 ? 1000 : 64);
    if ((i & 255u) == 0) {
      if (mem::load<mem::kSystem>(q.status, mem::relaxed) != 0) fail_queue(h, q, op, pe);
      detail::wait_check(h, start, op, pe, nullptr, Cmp::ge, target, seen, q.queue_id + 1, (i & 4095u) == 0);
    }
  }
}

// After a post or a doorbell: if the GPU service agent has left (idle exit), ask the host to
// start it again (the wake handshake at the top of this file).
__device__ __forceinline__ void notify_agent(const QueueView& q) {
  if (q.agent_state == nullptr) return;
  mem::fence<mem::kDevice>(mem::seq_cst);
  if (mem::load<mem::kDevice>(q.agent_state, mem::relaxed) == 0)
    mem::store<mem::kSystem>(q.agent_wake, 1u, mem::relaxed);
}

// Posts `d` (one thread) and returns its ticket. With `result_slot`, the entry's local address
// is the queue's result slot of the ticket (g and fetching atomics).
__device__ inline uint64_t post(const DeviceHandle& h, const QueueView& q, Descriptor d, bool result_slot = false) {
  const uint64_t t = mem::fetch_add<mem::kDevice>(q.head, uint64_t(1), mem::relaxed);
  if (t >= mem::load<mem::kDevice>(q.consumed_cache, mem::acquire) + q.capacity) {
    const uint64_t c = wait_queue_word(h, q, q.consumed, t - q.capacity + 1, DeviceOp::proxy_post, d.pe);
    mem::fetch_max<mem::kDevice>(q.consumed_cache, c, mem::release);
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
  // A GPU agent runs on this GPU: release at device scope is enough (and cheaper than system scope).
  if (q.agent_state) {
    mem::store<mem::kDevice>(&slot->stamp, t + 1, mem::release);
  } else {
    mem::store<mem::kSystem>(&slot->stamp, t + 1, mem::release);
  }
  if (q.doorbell_every && (t + 1) % q.doorbell_every == 0) mem::red_max<mem::kSystem>(q.doorbell, t + 1, mem::release);
  notify_agent(q);
  return t;
}

// Announces every posted entry (doorbell batching).
__device__ inline void flush_queue(const QueueView& q) {
  if (q.doorbell_every) {
    const uint64_t head = mem::load<mem::kDevice>(q.head, mem::relaxed);
    mem::red_max<mem::kSystem>(q.doorbell, head, mem::release);
    notify_agent(q);
  }
}

// Waits (one thread) until ticket `t` completed.
__device__ inline void wait_ticket(const DeviceHandle& h, const QueueView& q, uint64_t t, DeviceOp op, int pe) {
  flush_queue(q);
  wait_queue_word(h, q, q.completed, t + 1, op, pe);
}

// The 8-byte result of ticket `t` (g, fetching atomics), once it completed: the agent wrote it
// before its release of `completed`, which wait_ticket acquired.
__device__ __forceinline__ uint64_t result_of(const QueueView& q, uint64_t t) {
  return mem::load<mem::kSystem>(&q.results[static_cast<uint32_t>(t) & (q.capacity - 1)], mem::relaxed);
}

// Completes (one thread) every entry posted to `q` so far.
__device__ inline void quiet_queue(const DeviceHandle& h, const QueueView& q) {
  const uint64_t head = mem::load<mem::kDevice>(q.head, mem::acquire);
  if (head == 0) return;
  flush_queue(q);
  wait_queue_word(h, q, q.completed, head, DeviceOp::quiet, -1);
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
