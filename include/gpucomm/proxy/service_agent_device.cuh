#pragma once
// The GPU service agent's loop (the kernel is in src/proxy/service_agent.cu): persistent warps
// that serve descriptor queues of GPU producers with SM copies into the peers' mapped heaps - a
// stand-in for a GPU command processor (ComP-Net, LeBeane et al., docs/REFERENCES.md). Warp w of
// W owns queues w, w + W, w + 2W, ...; for each queue its `completed` word (written only by this
// warp) is the next ticket, kept in a register of the lane that polls the queue.
//   poll      lane j of warp w acquires (device scope: the producers run on this GPU) the stamp of
//             the next ticket of the warp's j-th queue, so one warp looks at 32 queues with one
//             load; a ballot picks the queues with work
//   batch     the polling lane reads the entry it found and the warp executes it at once; then
//             lane i acquires the stamp of ticket t + i and reads that entry: up to 32 entries per
//             round trip; the ready prefix is validated per lane
//   execute   8-byte-or-smaller inline puts to distinct words (p()) are stored by their lanes in
//             parallel; anything else entry by entry with the whole warp (16-byte vectors for
//             put/get, lane 0 for signals, atomics and inline payloads). Data before signal: lane 0
//             releases the signal after its own payload store, or after every lane's fence and
//             __syncwarp when the warp copied.
//   complete  the lanes that wrote fence (device scope when every entry targeted this PE, whose
//             heap is on this GPU; system scope otherwise), __syncwarp, then lane 0 release-stores
//             completed, then consumed (device scope: the producers that poll them run here)
//   fault     lane 0 stores completed = t, then consumed = t + 1 (a failed queue is the one with
//             consumed > completed, which producers can test in device memory), then fault_ticket,
//             fault_field and the release of status; the warp stops serving that queue
//   stop      the host sets *stop (host memory, read every 64 idle passes); the warps finish what is
//             posted, then return
//   idle exit after idle_ns without work, warp 0 sets kAgentClosed in every queue's head with an
//             RMW (descriptor.hpp). If some head shows a reserved ticket above the queue's
//             completed, it reopens them all and goes on; otherwise it sets *leave and all warps
//             return. A producer whose fetch_add returns the bit wakes the host, whose waker thread
//             starts the kernel again (it reopens the queues first). Nothing of this runs on the
//             post path while the agent serves. So the agent holds no SM while the application is
//             quiet, and device-wide synchronizations (cudaFree, cudaDeviceSynchronize) wait at
//             most idle_ns for it.
#include "gpucomm/base/copy_device.cuh"
#include "gpucomm/base/group_device.cuh"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/proxy/check.hpp"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

struct ServiceAgentParams {
  const QueueView* queues;  // device array
  int num_queues;
  int self;                 // this PE: its heap lies on this GPU, so device scope orders writes to it
  char* const* peer_bases;  // device array [num_pes]: user parts mapped on this GPU (nullptr: unreachable)
  HeapGeometry geometry;
  const uint32_t* stop;  // host-mapped: the host asks the agent to finish
  uint64_t* executed;    // device counter of entries executed
  uint32_t* leave;       // device: warp 0's decision to exit (0 before each launch)
  uint64_t* last_work;   // device: %globaltimer of the last entry executed
  uint64_t idle_ns;      // 0: never leave
};

namespace agent_detail {

inline constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ unsigned lane_id() {
  return threadIdx.x & 31u;
}

// The fault's ticket and field, then the release of `status`: whoever sees the status sees both.
__device__ inline void record_fault(const QueueView& q, uint64_t t, QueueFault f, Field field) {
  mem::store<mem::kSystem>(q.fault_ticket, t, mem::relaxed);
  mem::store<mem::kSystem>(q.fault_field, static_cast<uint32_t>(field), mem::relaxed);
  mem::store<mem::kSystem>(q.status, static_cast<uint32_t>(f), mem::release);
}

// Stores the low `bytes` (1..8) of `v` at `dst`: one store when `dst` is aligned to a power-of-two
// size, bytes otherwise.
__device__ inline void store_inline(char* dst, uint64_t v, uint64_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(dst);
  if (bytes == 8 && (a & 7u) == 0) {
    *reinterpret_cast<uint64_t*>(dst) = v;
  } else if (bytes == 4 && (a & 3u) == 0) {
    *reinterpret_cast<uint32_t*>(dst) = static_cast<uint32_t>(v);
  } else if (bytes == 2 && (a & 1u) == 0) {
    *reinterpret_cast<uint16_t*>(dst) = static_cast<uint16_t>(v);
  } else {
    for (uint64_t i = 0; i < bytes; ++i) dst[i] = static_cast<char>(v >> (8 * i));
  }
}

template <mem::Scope S>
__device__ __forceinline__ void signal_at(char* base, const Descriptor& d) {
  mem::signal<S>(reinterpret_cast<uint64_t*>(base + d.sig), static_cast<SignalOp>(d.op), d.value);
}

// What the warp wrote since its last fence: the lanes other than 0 (copies), and whether any write
// went to another PE (system scope) rather than this PE's own heap (device scope).
struct Dirty {
  bool lanes = false;
  bool remote = false;
};

// Every lane fences at the scope the writes need and the warp synchronizes: whoever acquires a
// later release of lane 0 sees every lane's writes.
__device__ inline void publish(Dirty& w) {
  if (w.remote) {
    mem::fence<mem::kSystem>(mem::acq_rel);
  } else {
    mem::fence<mem::kDevice>(mem::acq_rel);
  }
  __syncwarp();
  w.lanes = false;
}

// Executes one validated entry whose PE is reachable (`base`) with the whole warp.
__device__ inline void execute(const Descriptor& d, char* base, bool remote, Dirty& w) {
  const bool lead = lane_id() == 0;
  w.remote = w.remote || remote;
  switch (d.opcode) {
    case Opcode::put:
    case Opcode::put_signal:
      detail::copy(coop::Warp{}, base + d.remote, reinterpret_cast<const void*>(d.local), d.bytes);
      w.lanes = true;
      if (d.opcode == Opcode::put) break;
      publish(w);  // every lane's part before the signal
      if (lead) remote ? signal_at<mem::kSystem>(base, d) : signal_at<mem::kDevice>(base, d);
      break;
    case Opcode::put_inline:
    case Opcode::put_signal_inline:
      if (lead) {
        const bool sig = d.opcode == Opcode::put_signal_inline;
        store_inline(base + d.remote, sig ? d.compare : d.value, d.bytes);
        // The release orders lane 0's own payload store before the signal: no fence needed.
        if (sig) remote ? signal_at<mem::kSystem>(base, d) : signal_at<mem::kDevice>(base, d);
      }
      break;
    case Opcode::get:
      detail::copy(coop::Warp{}, reinterpret_cast<void*>(d.local), base + d.remote, d.bytes);
      w.lanes = true;
      break;
    case Opcode::signal:
      if (w.lanes) publish(w);
      if (lead) remote ? signal_at<mem::kSystem>(base, d) : signal_at<mem::kDevice>(base, d);
      break;
    case Opcode::atomic:
      if (w.lanes) publish(w);
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
}

// Descriptor `d` of lane `src`, to every lane.
__device__ __forceinline__ Descriptor broadcast(const Descriptor& d, int src) {
  Descriptor out;
  const auto* in = reinterpret_cast<const uint64_t*>(&d);
  auto* o = reinterpret_cast<uint64_t*>(&out);
#pragma unroll
  for (int i = 0; i < 8; ++i) o[i] = __shfl_sync(kFull, in[i], src);
  return out;
}

// Whether the lanes' entries [0, n) are inline puts of 1, 2, 4 or 8 aligned bytes, pairwise to
// different words or to the same word with the same size (then only the highest lane, the latest
// ticket, stores): they may be stored in parallel. Sets `writer` on the lanes that store.
__device__ inline bool parallel_puts(const Descriptor& d, char* base, int n, bool& writer) {
  const int lane = static_cast<int>(lane_id());
  const auto addr = reinterpret_cast<uintptr_t>(base + d.remote);
  const bool mine = lane < n;
  const bool simple = !mine || (d.opcode == Opcode::put_inline && (d.bytes & (d.bytes - 1)) == 0 &&
                                (addr & (d.bytes - 1)) == 0 && base != nullptr);
  if (!__all_sync(kFull, simple)) return false;
  // Lanes without an entry get keys no other lane has.
  const uint64_t word = mine ? static_cast<uint64_t>(addr >> 3) : ~uint64_t(0) - static_cast<uint64_t>(lane);
  const uint64_t exact = mine ? (static_cast<uint64_t>(addr) << 4 | d.bytes) : word;
  const unsigned same_word = __match_any_sync(kFull, word);
  const unsigned same_exact = __match_any_sync(kFull, exact);
  if (__any_sync(kFull, same_word != same_exact)) return false;
  writer = mine && 31 - __clz(same_exact) == lane;
  return true;
}

struct Served {
  uint64_t next;  // the queue's next ticket
  int count;      // entries executed
  bool failed;    // the queue failed (this warp no longer serves it)
};

// Serves queue `q` from ticket `t`, whose entry `first` the polling lane read after acquiring its
// stamp (every lane holds it), with the whole warp: that entry at once, then batches of up to 32
// ready entries, at most `budget` entries in all.
__device__ inline Served serve_queue(const ServiceAgentParams& p, const QueueView& q, uint64_t t,
                                     const Descriptor& first, int budget) {
  const int lane = static_cast<int>(lane_id());
  const bool lead = lane == 0;
  __syncwarp();  // the other lanes read what the entry points to after the polling lane's acquire
  const uint64_t limit = q.doorbell_every ? mem::load<mem::kDevice>(q.doorbell, mem::acquire) : ~uint64_t(0);
  const uint32_t span = q.capacity < 32 ? q.capacity : 32;
  const uint32_t mask = q.capacity - 1;
  Served out{t, 0, false};
  for (bool at_first = true; out.count < budget; at_first = false) {
    // Lane i < k holds entry out.next + i (read after its own acquire of the entry's stamp).
    const uint64_t ti = out.next + static_cast<uint64_t>(lane);
    Descriptor d{};
    int k = 1;
    if (at_first) {
      d = first;  // every lane: no broadcast needed below
    } else {
      const Descriptor* slot = &q.ring[static_cast<uint32_t>(ti) & mask];
      bool ready = false;
      if (static_cast<uint32_t>(lane) < span && ti < limit)
        ready = mem::load<mem::kDevice>(&slot->stamp, mem::acquire) == ti + 1;
      const unsigned ready_mask = __ballot_sync(kFull, ready);
      k = ready_mask == kFull ? 32 : __ffs(~ready_mask) - 1;  // the ready prefix
      if (k == 0) break;
      if (lane < k) {
        const int4* s4 = reinterpret_cast<const int4*>(slot);
        int4* d4 = reinterpret_cast<int4*>(&d);
#pragma unroll
        for (int i = 0; i < 4; ++i) d4[i] = s4[i];
        if (q.trace)
          mem::store<mem::kSystem>(&q.trace[static_cast<uint32_t>(ti) & mask].seen, mem::globaltimer(), mem::relaxed);
      }
    }
    // Validate per lane; the first bad entry ends the batch and fails the queue.
    CheckResult r{};
    char* base = nullptr;
    if (lane < k || at_first) {
      r = check_descriptor(d, p.geometry);
      if (r.fault == QueueFault::none && d.opcode != Opcode::nop) {
        base = p.peer_bases[d.pe];
        if (base == nullptr) r = {QueueFault::unreachable, Field::pe};
      }
    }
    const unsigned bad_mask = __ballot_sync(kFull, lane < k && r.fault != QueueFault::none);
    const int ok = bad_mask ? __ffs(bad_mask) - 1 : k;
    Dirty w;
    w.remote = __any_sync(kFull, lane < ok && d.opcode != Opcode::nop && d.pe != p.self);
    bool writer = false;
    if (ok > 1 && parallel_puts(d, base, ok, writer)) {
      if (writer) store_inline(base + d.remote, d.value, d.bytes);
      if (writer && q.trace)
        mem::store<mem::kSystem>(&q.trace[static_cast<uint32_t>(ti) & mask].issued, mem::globaltimer(), mem::relaxed);
      w.lanes = true;
    } else {
      // Lane i acquired entry i's stamp: every lane's accesses for it come after (causality through
      // the barrier).
      __syncwarp();
      for (int i = 0; i < ok; ++i) {
        const Descriptor e = at_first ? d : broadcast(d, i);
        char* const b =
            at_first ? base : reinterpret_cast<char*>(__shfl_sync(kFull, reinterpret_cast<uintptr_t>(base), i));
        if (e.opcode != Opcode::nop) execute(e, b, e.pe != p.self, w);
        if (lead && q.trace) {
          mem::store<mem::kSystem>(&q.trace[static_cast<uint32_t>(out.next + static_cast<uint64_t>(i)) & mask].issued,
                                   mem::globaltimer(), mem::relaxed);
        }
      }
    }
    // Complete: the writers' fence, then completed before consumed (see the top).
    if (w.lanes || w.remote) publish(w);
    const uint64_t end = out.next + static_cast<uint64_t>(ok);
    if (lead && ok > 0) {
      mem::store<mem::kDevice>(q.completed, end, mem::release);
      mem::store<mem::kDevice>(q.consumed, end, mem::release);
    }
    if (q.trace && lane < ok)
      mem::store<mem::kSystem>(&q.trace[static_cast<uint32_t>(ti) & mask].completed, mem::globaltimer(), mem::relaxed);
    out.next = end;
    out.count += ok;
    if (bad_mask) {
      const auto f = static_cast<QueueFault>(__shfl_sync(kFull, static_cast<unsigned>(r.fault), ok));
      const auto field = static_cast<Field>(__shfl_sync(kFull, static_cast<unsigned>(r.field), ok));
      if (lead) {
        mem::store<mem::kDevice>(q.consumed, end + 1, mem::release);
        record_fault(q, end, f, field);
      }
      out.failed = true;
      break;
    }
    if (!at_first && k < 32) break;  // drained for now: the next pass looks again
  }
  if (lead && out.count > 0) {
    mem::red_add<mem::kDevice>(p.executed, static_cast<uint64_t>(out.count), mem::relaxed);
    mem::red_max<mem::kDevice>(p.last_work, mem::globaltimer(), mem::relaxed);
  }
  __syncwarp();
  return out;
}

// The queue a lane polls: queue `first + lane * stride` of the warp, its next ticket and whether
// this agent still serves it (a failed queue has consumed > completed, see the top).
struct Polled {
  int qi = -1;
  uint64_t next = 0;
  bool live = false;
};

__device__ inline Polled load_polled(const ServiceAgentParams& p, int qi) {
  Polled s;
  if (qi < p.num_queues) {
    const QueueView& q = p.queues[qi];
    s.qi = qi;
    s.next = mem::load<mem::kDevice>(q.completed, mem::relaxed);  // written by this warp only
    s.live = mem::load<mem::kDevice>(q.consumed, mem::relaxed) <= s.next;
  }
  return s;
}

// One look at the lanes' queues: a lane whose next stamp is there reads the entry (its acquire
// orders the reads), then each such queue is served by the whole warp. Returns the entries
// executed; updates the lanes' state.
__device__ inline int poll(const ServiceAgentParams& p, Polled& s, int budget) {
  bool ready = false;
  Descriptor mine{};
  if (s.live) {
    const QueueView& q = p.queues[s.qi];
    const uint32_t idx = static_cast<uint32_t>(s.next) & (q.capacity - 1);
    const bool announced = !q.doorbell_every || s.next < mem::load<mem::kDevice>(q.doorbell, mem::acquire);
    ready = announced && mem::load<mem::kDevice>(&q.ring[idx].stamp, mem::acquire) == s.next + 1;
    if (ready) {
      const int4* s4 = reinterpret_cast<const int4*>(&q.ring[idx]);
      int4* d4 = reinterpret_cast<int4*>(&mine);
#pragma unroll
      for (int i = 0; i < 4; ++i) d4[i] = s4[i];
      if (q.trace) mem::store<mem::kSystem>(&q.trace[idx].seen, mem::globaltimer(), mem::relaxed);
    }
  }
  unsigned mask = __ballot_sync(kFull, ready);
  int n = 0;
  while (mask) {
    const int j = __ffs(mask) - 1;
    mask &= mask - 1;
    const int qi = __shfl_sync(kFull, s.qi, j);
    const uint64_t next = __shfl_sync(kFull, s.next, j);
    const Descriptor first = broadcast(mine, j);
    const Served r = serve_queue(p, p.queues[qi], next, first, budget);
    if (static_cast<int>(lane_id()) == j) {
      s.next = r.next;
      s.live = !r.failed;
    }
    n += r.count;
  }
  return n;
}

// Warp 0: after idle_ns without work, close every queue and leave unless a producer reserved a
// ticket meanwhile (see the top).
__device__ inline bool decide_to_leave(const ServiceAgentParams& p) {
  const uint64_t now = mem::globaltimer();
  if (p.idle_ns == 0 || now - mem::load<mem::kDevice>(p.last_work, mem::relaxed) < p.idle_ns) return false;
  bool pending = false;
  for (int qi = static_cast<int>(lane_id()); qi < p.num_queues; qi += 32) {
    const QueueView& q = p.queues[qi];
    const uint64_t head = mem::fetch_or<mem::kDevice>(q.head, kAgentClosed, mem::acq_rel) & kTicketMask;
    const uint64_t consumed = mem::load<mem::kDevice>(q.consumed, mem::acquire);
    const uint64_t completed = mem::load<mem::kDevice>(q.completed, mem::relaxed);
    if (consumed <= completed && head > completed) pending = true;  // a live queue with a reserved ticket
  }
  if (__any_sync(kFull, pending)) {
    for (int qi = static_cast<int>(lane_id()); qi < p.num_queues; qi += 32)
      mem::fetch_and<mem::kDevice>(p.queues[qi].head, ~kAgentClosed, mem::acq_rel);
    if (lane_id() == 0) mem::red_max<mem::kDevice>(p.last_work, now, mem::relaxed);
    return false;
  }
  if (lane_id() == 0) mem::store<mem::kDevice>(p.leave, 1u, mem::relaxed);
  return true;
}

// Warp 0 at start: reopen the queues an earlier instance closed, and start the idle clock.
__device__ inline void open_queues(const ServiceAgentParams& p) {
  for (int qi = static_cast<int>(lane_id()); qi < p.num_queues; qi += 32)
    mem::fetch_and<mem::kDevice>(p.queues[qi].head, ~kAgentClosed, mem::acq_rel);
  if (lane_id() == 0) mem::red_max<mem::kDevice>(p.last_work, mem::globaltimer(), mem::relaxed);
  __syncwarp();
}

// The agent's loop for the calling warp.
__device__ inline void serve(const ServiceAgentParams& p) {
  const int warps_per_block = static_cast<int>(blockDim.x / 32);
  const int warp = static_cast<int>(blockIdx.x) * warps_per_block + static_cast<int>(threadIdx.x / 32);
  const int total = static_cast<int>(gridDim.x) * warps_per_block;
  const int lane = static_cast<int>(lane_id());
  if (warp == 0) open_queues(p);
  if (warp >= p.num_queues && warp != 0) return;
  // The first 32 queues of this warp stay in registers; further ones (more queues than 32 per
  // warp) are reloaded on every pass.
  const int chunk = 32 * total;
  Polled first = load_polled(p, warp + lane * total);
  auto pass = [&](int budget) {
    int work = poll(p, first, budget);
    for (int base = warp + chunk; base < p.num_queues; base += chunk) {
      Polled s = load_polled(p, base + lane * total);
      work += poll(p, s, budget);
    }
    return work;
  };
  uint32_t idle = 0;
  for (;;) {
    if (pass(64)) {
      idle = 0;
      continue;
    }
    ++idle;
    if ((idle & 63u) == 0) {
      const bool stopping = mem::load<mem::kSystem>(p.stop, mem::relaxed) != 0;
      const bool leaving = mem::load<mem::kDevice>(p.leave, mem::relaxed) != 0;
      if (__any_sync(kFull, stopping || leaving)) {
        // Finish what was posted: passes until one finds nothing ready.
        while (pass(1 << 30)) {
        }
        return;
      }
      if (warp == 0 && decide_to_leave(p)) continue;  // the next check drains and returns
    }
    if (idle > 1024) __nanosleep(idle > 16384 ? 1000 : 200);
  }
}

}  // namespace agent_detail
}  // namespace gpucomm::proxy
