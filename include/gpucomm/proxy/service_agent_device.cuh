#pragma once
// The GPU service agent's loop (the kernel is in src/proxy/service_agent.cu): persistent warps
// that serve descriptor queues of GPU producers with SM copies into the peers' mapped heaps - a
// stand-in for a GPU command processor (ComP-Net, LeBeane et al., docs/REFERENCES.md). Warp w of W serves queues w, w +
// W,
// ... For each queue it keeps no state of its own: `completed` (written only by this warp) is
// its next ticket.
//   poll      lane 0 acquires the stamp of the next ticket (below the doorbell when batching)
//   execute   the warp copies with 16-byte vectors (put/get), lane 0 performs signals and atomics;
//             put_signal: every lane fence.acq_rel.sys, __syncwarp, then lane 0's release of the
//             signal (system scope: the target may be another GPU)
//   complete  every lane fence.acq_rel.sys, __syncwarp, then lane 0 release-stores consumed and
//             completed = ticket + 1 at device scope (in order, since the warp executes in order;
//             the producers that poll them run on this GPU)
//   fault     lane 0 records fault_ticket and fault_field, releases status, and the warp stops
//             serving that queue
//   stop      the host sets *stop; the warps finish what is posted, then return
//   idle exit after idle_ns without work, warp 0 stores state = 0, fence.sc.gpu (the store-then-
//             load handshake of queue_device.cuh's wake), and scans every
//             queue's next stamp: work found -> state = 1 and go on; none -> *leave = 1 and all
//             warps return. A producer that posts later sees state == 0 (notify_agent) and asks
//             the host, whose waker thread starts the kernel again. So the agent holds no SM while
//             the application is quiet, and device-wide synchronizations (cudaFree,
//             cudaDeviceSynchronize) wait at most idle_ns for it.
#include "gpucomm/base/copy_device.cuh"
#include "gpucomm/base/group_device.cuh"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/proxy/check.hpp"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

struct ServiceAgentParams {
  const QueueView* queues;  // device array
  int num_queues;
  char* const* peer_bases;  // device array [num_pes]: user parts mapped on this GPU (nullptr: unreachable)
  HeapGeometry geometry;
  const uint32_t* stop;  // host-mapped: the host asks the agent to finish
  uint64_t* executed;    // device counter of entries executed
  uint32_t* state;       // device: 1 while serving (set to 1 by the host before each launch)
  uint32_t* leave;       // device: warp 0's decision to exit (0 before each launch)
  uint64_t* last_work;   // device: %globaltimer of the last entry executed
  uint64_t idle_ns;      // 0: never leave
};

namespace agent_detail {

// The fault's ticket and field, then the release of `status`: whoever sees the status sees both.
__device__ inline void record_fault(const QueueView& q, uint64_t t, QueueFault f, Field field) {
  mem::store<mem::kSystem>(q.fault_ticket, t, mem::relaxed);
  mem::store<mem::kSystem>(q.fault_field, static_cast<uint32_t>(field), mem::relaxed);
  mem::store<mem::kSystem>(q.status, static_cast<uint32_t>(f), mem::release);
}

// Executes one validated entry with the whole warp. Returns false when the PE is unreachable.
__device__ inline bool execute(const ServiceAgentParams& p, const Descriptor& d) {
  char* base = p.peer_bases[d.pe];
  if (base == nullptr) return false;
  const bool lead = (threadIdx.x & 31u) == 0;
  switch (d.opcode) {
    case Opcode::put:
    case Opcode::put_signal:
      detail::copy(coop::Warp{}, base + d.remote, reinterpret_cast<const void*>(d.local), d.bytes);
      if (d.opcode == Opcode::put_signal) {
        detail::publish_group(coop::Warp{});
        if (lead)
          mem::signal<mem::kSystem>(reinterpret_cast<uint64_t*>(base + d.sig), static_cast<SignalOp>(d.op), d.value);
      }
      break;
    case Opcode::put_inline:
      if (lead) detail::copy_small(base + d.remote, reinterpret_cast<const char*>(&d.value), d.bytes);
      break;
    case Opcode::get:
      detail::copy(coop::Warp{}, reinterpret_cast<void*>(d.local), base + d.remote, d.bytes);
      break;
    case Opcode::signal:
      if (lead)
        mem::signal<mem::kSystem>(reinterpret_cast<uint64_t*>(base + d.sig), static_cast<SignalOp>(d.op), d.value);
      break;
    case Opcode::atomic:
      if (lead) {
        const uint64_t old = mem::apply_atomic<mem::kSystem>(base + d.remote, d.width, static_cast<AtomicOp>(d.op),
                                                             d.value, d.compare, mem::acq_rel);
        // Read by the producer after it acquires `completed`, which is released after this store.
        if (d.local) mem::store<mem::kSystem>(reinterpret_cast<uint64_t*>(d.local), old, mem::relaxed);
      }
      break;
    case Opcode::fence:
    case Opcode::nop:
      break;
  }
  return true;
}

// Whether this agent failed `q` (it then consumed the bad entry without completing it). Device
// memory only, unlike `status`, which the host reads and may sit in host memory.
__device__ __forceinline__ bool failed(const QueueView& q) {
  return mem::load<mem::kDevice>(q.consumed, mem::relaxed) != mem::load<mem::kDevice>(q.completed, mem::relaxed);
}

// Serves queue `q` once: executes up to `budget` ready entries; returns how many.
__device__ inline int serve_queue(const ServiceAgentParams& p, const QueueView& q, int budget) {
  const bool lead = (threadIdx.x & 31u) == 0;
  if (failed(q)) return 0;
  uint64_t t = mem::load<mem::kDevice>(q.completed, mem::relaxed);  // written by this warp only
  const uint64_t limit = q.doorbell_every ? mem::load<mem::kSystem>(q.doorbell, mem::acquire) : ~uint64_t(0);
  int n = 0;
  for (; n < budget && t < limit; ++n, ++t) {
    const Descriptor* slot = &q.ring[static_cast<uint32_t>(t) & (q.capacity - 1)];
    bool ready = false;
    if (lead) ready = mem::load<mem::kSystem>(&slot->stamp, mem::acquire) == t + 1;
    ready = __shfl_sync(0xffffffffu, ready, 0);
    if (!ready) break;
    __syncwarp();  // the other lanes read the entry after lane 0's acquire (causality through the barrier)
    Descriptor d;
    const int4* s4 = reinterpret_cast<const int4*>(slot);
    int4* d4 = reinterpret_cast<int4*>(&d);
#pragma unroll
    for (int i = 0; i < 4; ++i) d4[i] = s4[i];
    const CheckResult r = check_descriptor(d, p.geometry);
    const bool ok = r.fault == QueueFault::none && (d.opcode == Opcode::nop || execute(p, d));
    if (!ok) {
      // Complete what came before, then fail the queue at this ticket.
      detail::publish_group(coop::Warp{});
      if (lead) {
        mem::store<mem::kSystem>(q.completed, t, mem::release);
        mem::store<mem::kSystem>(q.consumed, t + 1, mem::release);
        record_fault(q, t, r.fault == QueueFault::none ? QueueFault::unreachable : r.fault,
                     r.fault == QueueFault::none ? Field::pe : r.field);
        if (n) mem::red_add<mem::kDevice>(p.executed, static_cast<uint64_t>(n), mem::relaxed);
      }
      __syncwarp();
      return n;
    }
  }
  if (n > 0) {
    detail::publish_group(coop::Warp{});  // every lane's copies are visible before the completion
    if (lead) {
      // Every lane's copies were fenced at system scope before the warp barrier; the producers that
      // read these words run on this GPU, so a release at device scope publishes them.
      mem::store<mem::kDevice>(q.consumed, t, mem::release);
      mem::store<mem::kDevice>(q.completed, t, mem::release);
      mem::red_add<mem::kDevice>(p.executed, static_cast<uint64_t>(n), mem::relaxed);
      mem::fetch_max<mem::kDevice>(p.last_work, mem::globaltimer(), mem::relaxed);
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
    const uint64_t t = mem::load<mem::kDevice>(q.completed, mem::relaxed);
    if (q.doorbell_every && mem::load<mem::kSystem>(q.doorbell, mem::acquire) <= t) continue;
    if (mem::load<mem::kSystem>(&q.ring[static_cast<uint32_t>(t) & (q.capacity - 1)].stamp, mem::acquire) == t + 1)
      return true;
  }
  return false;
}

// Warp 0: after idle_ns without work, leave unless a producer posted meanwhile (see the top).
__device__ inline bool decide_to_leave(const ServiceAgentParams& p) {
  const uint64_t now = mem::globaltimer();
  if (p.idle_ns == 0 || now - mem::load<mem::kDevice>(p.last_work, mem::relaxed) < p.idle_ns) return false;
  bool leave = false;
  if ((threadIdx.x & 31u) == 0) {
    mem::store<mem::kDevice>(p.state, 0u, mem::relaxed);
    mem::fence<mem::kDevice>(mem::seq_cst);  // store-then-load: see queue_device.cuh's wake handshake
    if (any_posted(p)) {
      mem::store<mem::kDevice>(p.state, 1u, mem::relaxed);
      mem::fetch_max<mem::kDevice>(p.last_work, now, mem::relaxed);
    } else {
      mem::store<mem::kDevice>(p.leave, 1u, mem::relaxed);
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
  if (warp == 0 && threadIdx.x == 0) mem::fetch_max<mem::kDevice>(p.last_work, mem::globaltimer(), mem::relaxed);
  if (warp >= p.num_queues && warp != 0) return;
  uint32_t idle = 0;
  for (;;) {
    int work = 0;
    for (int qi = warp; qi < p.num_queues; qi += total) work += serve_queue(p, p.queues[qi], 64);
    if (work) {
      idle = 0;
      continue;
    }
    const bool stopping = mem::load<mem::kSystem>(p.stop, mem::relaxed) != 0;
    const bool leaving = mem::load<mem::kDevice>(p.leave, mem::relaxed) != 0;
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
