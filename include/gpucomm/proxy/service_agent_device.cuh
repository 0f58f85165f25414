#pragma once
// The GPU service agent's loop (the kernel is in src/proxy/service_agent.cu): persistent warps
// that serve descriptor queues of GPU producers with SM copies into the peers' mapped heaps - a
// stand-in for a GPU command processor (seed 003's ComP-Net). Warp w of W serves queues w, w + W,
// ... For each queue it keeps no state of its own: `completed` (written only by this warp) is
// its next ticket.
//   poll      lane 0 acquires the stamp of the next ticket (below the doorbell when batching)
//   execute   the warp copies with 16-byte vectors (put/get), lane 0 performs signals and atomics;
//             put_signal: every lane fence.sc.sys, __syncwarp, then lane 0's release of the signal
//   complete  every lane fence.sc.sys, __syncwarp, then lane 0 release-stores consumed and
//             completed = ticket + 1 (in order, since the warp executes in order)
//   fault     lane 0 records fault_ticket and fault_field, releases status, and the warp stops
//             serving that queue
//   stop      the host sets *stop; the warps finish what is posted, then return
//   idle exit after idle_ns without work, warp 0 stores state = 0, fence.sc.gpu, and scans every
//             queue's next stamp: work found -> state = 1 and go on; none -> *leave = 1 and all
//             warps return. A producer that posts later sees state == 0 (notify_agent) and asks
//             the host, whose waker thread starts the kernel again. So the agent holds no SM while
//             the application is quiet, and device-wide synchronizations (cudaFree,
//             cudaDeviceSynchronize) wait at most idle_ns for it.
#include <cuda/atomic>

#include "gpucomm/device/copy_device.cuh"
#include "gpucomm/device/detail_device.cuh"
#include "gpucomm/proxy/atomic_apply_device.cuh"
#include "gpucomm/proxy/check.hpp"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

struct ServiceAgentParams {
  const QueueView* queues;  // device array
  int num_queues;
  char* const* peer_bases;  // device array [num_pes]: user parts mapped on this GPU (nullptr: unreachable)
  HeapGeometry geometry;
  const volatile uint32_t* stop;  // host-mapped: the host asks the agent to finish
  unsigned long long* executed;   // device counter of entries executed
  uint32_t* state;                // device: 1 while serving (set to 1 by the host before each launch)
  uint32_t* leave;                // device: warp 0's decision to exit (0 before each launch)
  unsigned long long* last_work;  // device: %globaltimer of the last entry executed
  uint64_t idle_ns;               // 0: never leave
};

namespace agent_detail {

using gpucomm::device::detail::load_acquire_sys;
using gpucomm::device::detail::store_release_sys;

__device__ inline void record_fault(const QueueView& q, uint64_t t, QueueFault f, Field field) {
  *reinterpret_cast<volatile uint64_t*>(q.fault_ticket) = t;
  *reinterpret_cast<volatile uint32_t*>(q.fault_field) = static_cast<uint32_t>(field);
  __threadfence_system();
  store_release_sys(q.status, static_cast<uint32_t>(f));
}

// A release at system scope: whatever this lane wrote or observed before is visible first.
__device__ inline void signal(uint64_t* s, uint8_t op, uint64_t v) {
  if (static_cast<SignalOp>(op) == SignalOp::set)
    store_release_sys(s, v);
  else
    gpucomm::device::detail::add_release_sys(s, v);
}

// Executes one validated entry with the whole warp. Returns false when the PE is unreachable.
__device__ inline bool execute(const ServiceAgentParams& p, const Descriptor& d) {
  char* base = p.peer_bases[d.pe];
  if (base == nullptr) return false;
  const bool lead = (threadIdx.x & 31u) == 0;
  switch (d.opcode) {
    case Opcode::put:
    case Opcode::put_signal:
      gpucomm::device::detail::copy(coop::Warp{}, base + d.remote, reinterpret_cast<const void*>(d.local), d.bytes);
      if (d.opcode == Opcode::put_signal) {
        __threadfence_system();
        __syncwarp();
        if (lead) signal(reinterpret_cast<uint64_t*>(base + d.sig), d.op, d.value);
      }
      break;
    case Opcode::put_inline:
      if (lead) gpucomm::device::detail::copy_small(base + d.remote, reinterpret_cast<const char*>(&d.value), d.bytes);
      break;
    case Opcode::get:
      gpucomm::device::detail::copy(coop::Warp{}, reinterpret_cast<void*>(d.local), base + d.remote, d.bytes);
      break;
    case Opcode::signal:
      if (lead) signal(reinterpret_cast<uint64_t*>(base + d.sig), d.op, d.value);
      break;
    case Opcode::atomic:
      if (lead) {
        const uint64_t old = apply_atomic_device(base + d.remote, d.width, static_cast<AtomicOp>(d.op), d.value, d.compare);
        if (d.local) *reinterpret_cast<volatile uint64_t*>(d.local) = old;
      }
      break;
    case Opcode::fence:
    case Opcode::nop: break;
  }
  return true;
}

// Whether this agent failed `q` (it then consumed the bad entry without completing it). Device
// memory only, unlike `status`, which the host reads and may sit in host memory.
__device__ __forceinline__ bool failed(const QueueView& q) {
  return *reinterpret_cast<volatile uint64_t*>(q.consumed) != *reinterpret_cast<volatile uint64_t*>(q.completed);
}

// Serves queue `q` once: executes up to `budget` ready entries; returns how many.
__device__ inline int serve_queue(const ServiceAgentParams& p, const QueueView& q, int budget) {
  const bool lead = (threadIdx.x & 31u) == 0;
  if (failed(q)) return 0;
  uint64_t t = *reinterpret_cast<volatile uint64_t*>(q.completed);
  const uint64_t limit = q.doorbell_every ? load_acquire_sys(q.doorbell) : ~uint64_t(0);
  int n = 0;
  for (; n < budget && t < limit; ++n, ++t) {
    const Descriptor* slot = &q.ring[static_cast<uint32_t>(t) & (q.capacity - 1)];
    bool ready = false;
    if (lead) ready = load_acquire_sys(&slot->stamp) == t + 1;
    ready = __shfl_sync(0xffffffffu, ready, 0);
    if (!ready) break;
    __syncwarp();  // the other lanes read the entry after lane 0's acquire
    Descriptor d;
    const int4* s4 = reinterpret_cast<const int4*>(slot);
    int4* d4 = reinterpret_cast<int4*>(&d);
#pragma unroll
    for (int i = 0; i < 4; ++i) d4[i] = __ldcv(s4 + i);  // not from L1: the producer may be another SM
    const CheckResult r = check_descriptor(d, p.geometry);
    const bool ok = r.fault == QueueFault::none && (d.opcode == Opcode::nop || execute(p, d));
    if (!ok) {
      // Complete what came before, then fail the queue at this ticket.
      __threadfence_system();
      __syncwarp();
      if (lead) {
        store_release_sys(q.completed, t);
        store_release_sys(q.consumed, t + 1);
        record_fault(q, t, r.fault == QueueFault::none ? QueueFault::unreachable : r.fault,
                     r.fault == QueueFault::none ? Field::pe : r.field);
        if (n) atomicAdd(p.executed, static_cast<unsigned long long>(n));
      }
      __syncwarp();
      return n;
    }
  }
  if (n > 0) {
    __threadfence_system();  // every lane's copies are complete before the completion
    __syncwarp();
    if (lead) {
      // Every lane's copies were fenced at system scope before the warp barrier; the producers that
      // read these words run on this GPU, so a release at GPU scope publishes them.
      cuda::atomic_ref<uint64_t, cuda::thread_scope_device>(*q.consumed).store(t, cuda::std::memory_order_release);
      cuda::atomic_ref<uint64_t, cuda::thread_scope_device>(*q.completed).store(t, cuda::std::memory_order_release);
      atomicAdd(p.executed, static_cast<unsigned long long>(n));
      atomicMax(p.last_work, static_cast<unsigned long long>(gpucomm::device::detail::globaltimer()));
    }
  }
  __syncwarp();
  return n;
}

// Whether any queue has its next entry posted (warp 0's check before leaving).
__device__ inline bool any_posted(const ServiceAgentParams& p) {
  for (int qi = 0; qi < p.num_queues; ++qi) {
    const QueueView& q = p.queues[qi];
    if (failed(q)) continue;
    const uint64_t t = *reinterpret_cast<volatile uint64_t*>(q.completed);
    if (q.doorbell_every && load_acquire_sys(q.doorbell) <= t) continue;
    if (load_acquire_sys(&q.ring[static_cast<uint32_t>(t) & (q.capacity - 1)].stamp) == t + 1) return true;
  }
  return false;
}

// Warp 0: after idle_ns without work, leave unless a producer posted meanwhile (see the top).
__device__ inline bool decide_to_leave(const ServiceAgentParams& p) {
  const uint64_t now = gpucomm::device::detail::globaltimer();
  if (p.idle_ns == 0 || now - *reinterpret_cast<volatile unsigned long long*>(p.last_work) < p.idle_ns) return false;
  bool leave = false;
  if ((threadIdx.x & 31u) == 0) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*p.state).store(0u, cuda::std::memory_order_relaxed);
    asm volatile("fence.sc.gpu;" ::: "memory");
    if (any_posted(p)) {
      cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*p.state).store(1u, cuda::std::memory_order_relaxed);
      atomicMax(p.last_work, static_cast<unsigned long long>(now));
    } else {
      cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*p.leave).store(1u, cuda::std::memory_order_relaxed);
      leave = true;
    }
  }
  return __shfl_sync(0xffffffffu, leave, 0);
}

// The agent's loop for the calling warp.
__device__ inline void serve(const ServiceAgentParams& p) {
  const int warps_per_block = static_cast<int>(blockDim.x / 32);
  const int warp = static_cast<int>(blockIdx.x) * warps_per_block + static_cast<int>(threadIdx.x / 32);
  const int total = static_cast<int>(gridDim.x) * warps_per_block;
  if (warp == 0 && threadIdx.x == 0) atomicMax(p.last_work, static_cast<unsigned long long>(gpucomm::device::detail::globaltimer()));
  if (warp >= p.num_queues && warp != 0) return;
  uint32_t idle = 0;
  for (;;) {
    int work = 0;
    for (int qi = warp; qi < p.num_queues; qi += total) work += serve_queue(p, p.queues[qi], 64);
    if (work) {
      idle = 0;
      continue;
    }
    const bool stopping = *p.stop != 0;
    const bool leaving = cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*p.leave).load(cuda::std::memory_order_relaxed) != 0;
    if (stopping || leaving) {
      // Finish what was posted: one more pass that finds nothing ready.
      int more = 0;
      for (int qi = warp; qi < p.num_queues; qi += total) more += serve_queue(p, p.queues[qi], 1 << 30);
      if (more == 0) return;
      continue;
    }
    if (warp == 0 && (idle & 63u) == 63u && decide_to_leave(p)) continue;  // the next pass drains and returns
    if (++idle > 256) __nanosleep(idle > 4096 ? 1000 : 100);
  }
}

}  // namespace agent_detail
}  // namespace gpucomm::proxy
