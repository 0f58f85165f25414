#pragma once
// GPU producers of descriptor queues (protocol: gpucomm/proxy/descriptor.hpp), and the routed
// forms of the one-sided operations that the device API uses when a PE is served by a proxy.
// One thread posts per operation (the group's leader); the others fence and synchronize before
// it, so the agent sees what the whole group wrote (the same rule as put_signal's).
//
//   post:   ticket = atomicAdd(head); wait for space only when the cached consumer index says the
//           ring is full (acquire of `consumed`, fetch-max into the cache); 48 + 8 bytes of plain
//           stores into the slot; st.release.sys of the stamp; red.release.sys.max of the doorbell
//           every doorbell_every tickets.
//   wait:   acquire polls of `completed` (and of `status`, so a failed agent ends the wait), with
//           the handle's timeout.
#include <cuda/atomic>

#include <cstddef>
#include <cstdint>

#include "gpucomm/device/coop.cuh"
#include "gpucomm/device/detail_device.cuh"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::device::detail {

// transport::Kind values as the handle carries them.
inline constexpr uint32_t kTransportAuto = 0, kTransportDirect = 1;

// Whether operations to `pe` go through a queue.
__device__ __forceinline__ bool via_proxy(const DeviceHandle& h, int pe) {
  if (h.num_queues == 0) return false;
  if (h.transport != kTransportAuto) return h.transport != kTransportDirect;
  return static_cast<unsigned>(pe) < static_cast<unsigned>(h.size) && h.peer_bases[pe] == nullptr;
}

__device__ __forceinline__ uint32_t block_linear() { return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); }

// The queue of the calling thread: its block's, or its warp's.
__device__ __forceinline__ const proxy::QueueView& queue_of(const DeviceHandle& h) {
  uint32_t i = block_linear();
  if (h.queue_per_warp) {
    const uint32_t warps = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    i = i * warps + coop::warp_id();
  }
  return h.queues[i % h.num_queues];
}

template <class T>
__device__ __forceinline__ T load_acquire_gpu(const T* p) {
  return cuda::atomic_ref<T, cuda::thread_scope_device>(*const_cast<T*>(p)).load(cuda::std::memory_order_acquire);
}

// Records the failure of queue `q` (its status says why) and traps.
__device__ __noinline__ inline void fail_queue(const DeviceHandle& h, const proxy::QueueView& q, DeviceOp op, int pe) {
  fail(h, DeviceFault::proxy, op, pe, nullptr, Cmp::eq, load_acquire_sys(q.status), load_acquire_sys(q.fault_ticket), 0, q.queue_id + 1);
}

// Spins until `*word >= target` (acquire, system scope) while the queue is healthy.
__device__ inline uint64_t wait_queue_word(const DeviceHandle& h, const proxy::QueueView& q, const uint64_t* word, uint64_t target,
                                           DeviceOp op, int pe) {
  uint64_t seen = load_acquire_sys(word);
  if (seen >= target) return seen;
  const uint64_t start = globaltimer();
  for (uint32_t i = 1;; ++i) {
    seen = load_acquire_sys(word);
    if (seen >= target) return seen;
    // Back off: many waiters polling a word across PCIe slow down the agent they wait for.
    if (i > 32) __nanosleep(i > 1024 ? 1000 : 64);
    if ((i & 255u) == 0) {
      if (load_acquire_sys(q.status) != 0) fail_queue(h, q, op, pe);
      const uint64_t waited = globaltimer() - start;
      if (h.timeout_ns != 0 && waited > h.timeout_ns) fail(h, DeviceFault::timeout, op, pe, nullptr, Cmp::ge, target, seen, waited, q.queue_id + 1);
    }
  }
}

// After a post or a doorbell: if the GPU service agent has left (idle exit), ask the host to start
// it again. Dekker with the agent's exit: the producer's entry, fence.sc, read of the state; the
// agent's state = 0, fence.sc, scan of the stamps. At least one of them sees the other's write.
__device__ __forceinline__ void notify_agent(const proxy::QueueView& q) {
  if (q.agent_state == nullptr) return;
  asm volatile("fence.sc.gpu;" ::: "memory");
  if (cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*q.agent_state).load(cuda::std::memory_order_relaxed) == 0)
    cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(*q.agent_wake).store(1u, cuda::std::memory_order_relaxed);
}

// Posts `d` (one thread) and returns its ticket. With `result_slot`, the entry's local address
// is the queue's result slot of the ticket (g and fetching atomics).
__device__ inline uint64_t post(const DeviceHandle& h, const proxy::QueueView& q, proxy::Descriptor d, bool result_slot = false) {
  const uint64_t t = atomicAdd(reinterpret_cast<unsigned long long*>(q.head), 1ull);
  if (t >= load_acquire_gpu(q.consumed_cache) + q.capacity) {
    const uint64_t c = wait_queue_word(h, q, q.consumed, t - q.capacity + 1, DeviceOp::proxy_post, d.pe);
    cuda::atomic_ref<uint64_t, cuda::thread_scope_device>(*q.consumed_cache).fetch_max(c, cuda::std::memory_order_release);
  }
  // No status check here: it may live across PCIe. A failed queue fails the next wait instead.
  const uint32_t idx = static_cast<uint32_t>(t) & (q.capacity - 1);
  if (result_slot) d.local = reinterpret_cast<uint64_t>(&q.results[idx]);
  proxy::Descriptor* slot = &q.ring[idx];
  const int4* s4 = reinterpret_cast<const int4*>(&d);
  int4* d4 = reinterpret_cast<int4*>(slot);
  d4[0] = s4[0];
  d4[1] = s4[1];
  d4[2] = s4[2];
  slot->compare = d.compare;
  // A GPU agent runs on this GPU: release at GPU scope is enough (and cheaper than system scope).
  if (q.agent_state)
    cuda::atomic_ref<uint64_t, cuda::thread_scope_device>(slot->stamp).store(t + 1, cuda::std::memory_order_release);
  else
    store_release_sys(&slot->stamp, t + 1);
  if (q.doorbell_every && (t + 1) % q.doorbell_every == 0)
    asm volatile("red.release.sys.global.max.u64 [%0], %1;" ::"l"(q.doorbell), "l"(t + 1) : "memory");
  notify_agent(q);
  return t;
}

// Announces every posted entry (doorbell batching).
__device__ inline void flush_queue(const proxy::QueueView& q) {
  if (q.doorbell_every) {
    const uint64_t head = cuda::atomic_ref<uint64_t, cuda::thread_scope_device>(*q.head).load(cuda::std::memory_order_relaxed);
    asm volatile("red.release.sys.global.max.u64 [%0], %1;" ::"l"(q.doorbell), "l"(head) : "memory");
    notify_agent(q);
  }
}

// Waits (one thread) until ticket `t` completed.
__device__ inline void wait_ticket(const DeviceHandle& h, const proxy::QueueView& q, uint64_t t, DeviceOp op, int pe) {
  flush_queue(q);
  wait_queue_word(h, q, q.completed, t + 1, op, pe);
}

// Completes (one thread) every entry posted to `q` so far.
__device__ inline void quiet_queue(const DeviceHandle& h, const proxy::QueueView& q) {
  const uint64_t head = cuda::atomic_ref<uint64_t, cuda::thread_scope_device>(*q.head).load(cuda::std::memory_order_acquire);
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
__device__ inline void quiet_proxy(Coop c, const DeviceHandle& h) {
  if (h.num_queues == 0) return;
  if constexpr (cuda::std::is_same_v<Coop, coop::Block>) {
    if (h.queue_per_warp) {
      const uint32_t warps = (coop::size(c) + 31) / 32;
      const uint32_t base = block_linear() * warps;
      for (uint32_t w = coop::thread_rank(c); w < warps; w += coop::size(c)) quiet_queue(h, h.queues[(base + w) % h.num_queues]);
      return;
    }
  }
  if (leader(c)) quiet_queue(h, queue_of(h));
}

// Makes the group's earlier writes visible to the agent before the leader posts.
template <class Coop>
__device__ __forceinline__ void publish_group(Coop c) {
  if constexpr (!cuda::std::is_same_v<Coop, coop::Thread>) {
    __threadfence_system();
    coop::sync(c);
  }
}

__device__ __forceinline__ int64_t heap_offset(const DeviceHandle& h, const void* sym) {
  return static_cast<int64_t>(static_cast<const char*>(sym) - h.heap_base);
}

inline constexpr int64_t kControlOffset = -static_cast<int64_t>(kDeviceControlBytes);

}  // namespace gpucomm::device::detail
