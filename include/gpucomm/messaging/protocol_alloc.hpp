#pragma once
// The messaging protocol, part 1: tables and hand-offs (docs/MESSAGING.md). Every function of
// protocol_*.hpp is written once, as a template over a memory backend B and a cooperation level C:
//
//   group       leader(c), group_rank(c), group_size(c), bcast(c, v) (the leader's value to all,
//               synchronizing), sync(c), publish(c) (every thread's writes visible at system
//               scope before the leader's next release), publish_local(c) (the same for this PE's
//               threads), copy(c, dst, src, n) (addresses reachable by loads and stores)
//   local words ld, st, fadd, fand, for_, cas (this PE's threads: device scope on a GPU)
//   shared words ld_sys, st_sys (words other PEs write or read: system scope)
//   remote      peer(sym, pe) (address for direct stores, or nullptr: through a proxy),
//               put(c, sym_dst, src, n, pe) and get(c, dst, sym_src, n, pe) (blocking),
//               signal_set(sym, v, pe) (one thread, ordered after its earlier puts),
//               in_heap(p, n), heap_offset(p)
//   matching    match_message(c, comm, env), match_receive(c, comm, env) (seq_match.hpp semantics)
//   progress    try_lock(), unlock()
//   time        now_ns(), pause(i), timeout_ns(), job_failed(), fail(diag)
//
// The device backend (device_backend_device.cuh) implements them with gpucomm/device and
// gpucomm/base/ordering_device.cuh; the host backend (src/messaging/host_backend.hpp) with the
// Runtime's host API and std::atomic_ref. Control decisions are made by the group's leader and
// broadcast; the group shares copies and matching.
#include <cstdint>

#include "gpucomm/messaging/fn.hpp"
#include "gpucomm/messaging/layout.hpp"

namespace gpucomm::msg::proto {

// Takes a free entry of a bitmap of `n` bits (n a multiple of 64); -1 when all are taken. Any
// thread may call it (compare-and-swap per word).
template <class B>
GPUCOMM_MSG_FN int32_t bitmap_take(const B& b, uint64_t* bits, uint32_t n) {
  for (uint32_t w = 0; w < n / 64; ++w) {
    uint64_t v = b.ld(&bits[w], Ord::relaxed);
    while (~v != 0) {
      const uint32_t i = lowest_bit(~v);
      if (b.cas(&bits[w], v, v | (uint64_t(1) << i), Ord::acquire)) return static_cast<int32_t>(w * 64 + i);
    }
  }
  return -1;
}

template <class B>
GPUCOMM_MSG_FN void bitmap_give(const B& b, uint64_t* bits, uint32_t i) {
  b.fand(&bits[i / 64], ~(uint64_t(1) << (i % 64)), Ord::release);
}

// A fresh request (leader only): fields zeroed, its two remote words reset before its index can
// travel to a peer (the later RTS/CTS release orders the resets before the peer's writes).
template <class B>
GPUCOMM_MSG_FN int32_t request_take(const B& b, const StateView& s) {
  const int32_t id = bitmap_take(b, s.req_bits, s.cfg.requests);
  if (id < 0) return -1;
  Req& q = s.reqs[id];
  q = Req{};
  b.st_sys(&s.req_words[size_t{2} * id], 0, Ord::relaxed);
  b.st_sys(&s.req_words[size_t{2} * id + 1], 0, Ord::relaxed);
  return id;
}

template <class B>
GPUCOMM_MSG_FN void request_give(const B& b, const StateView& s, uint32_t id) {
  s.reqs[id].state = kReqFree;
  bitmap_give(b, s.req_bits, id);
}

// Hands request `id` to progress (any thread): ticket t of the submission ring, entry t mod R,
// released with stamp t + 1. At most R requests exist, so entry t mod R was consumed before.
template <class B>
GPUCOMM_MSG_FN void submit(const B& b, const StateView& s, uint32_t id) {
  const uint64_t t = b.fadd(&s.ctl->submit_tail, 1, Ord::relaxed);
  b.st(&s.submit[t % s.cfg.requests], (static_cast<uint64_t>(static_cast<uint32_t>(t + 1)) << 32) | id, Ord::release);
}

// Progress only: the next submitted request in ticket order, or -1 (none, or its producer has not
// published it yet: taken by a later round). Does not consume it (submission_pop does).
template <class B>
GPUCOMM_MSG_FN int32_t submission_peek(const B& b, const StateView& s) {
  const uint64_t head = s.ctl->submit_head;
  const uint64_t v = b.ld(&s.submit[head % s.cfg.requests], Ord::acquire);
  if (static_cast<uint32_t>(v >> 32) != static_cast<uint32_t>(head + 1)) return -1;
  return static_cast<int32_t>(v & 0xffffffffu);
}
GPUCOMM_MSG_FN void submission_pop(const StateView& s) {
  s.ctl->submit_head += 1;
}

GPUCOMM_MSG_FN void active_add(const StateView& s, uint32_t id) {
  s.active[s.ctl->active_n++] = id;
}

// Completion: status first, then the event, then the release of `done` that the owner acquires.
template <class B>
GPUCOMM_MSG_FN void complete(const B& b, Req& q, const Status& st) {
  q.status = st;
  q.state = kReqDone;
  if (q.event) b.fadd(q.event, 1, Ord::release);
  b.st(&q.done, 1, Ord::release);
}

// Eager messages larger than an unexpected entry holds take one of the receiver's pool slots.
GPUCOMM_MSG_FN bool needs_eager_credit(uint32_t kind, uint64_t bytes) {
  return (kind & kWireKindMask) == kWireEager && bytes > kInlineBytes;
}

// The communicator of context id `ctx`, or null when no live communicator has it.
GPUCOMM_MSG_FN CommState* comm_of(const StateView& s, int32_t ctx) {
  if (static_cast<uint32_t>(ctx) >= static_cast<uint32_t>(kMaxComms)) return nullptr;
  CommState* c = &s.comms[ctx];
  return c->live ? c : nullptr;
}

// Symmetric address of ticket `t`'s slot in the ring that `sender` owns at every receiver.
GPUCOMM_MSG_FN char* ring_slot(const StateView& s, int32_t sender, uint64_t t) {
  return s.rings + (static_cast<size_t>(sender) * s.cfg.slots + (t & (s.cfg.slots - 1))) * s.cfg.slot_bytes;
}

// Stores v into `pe`'s copy of the symmetric word (release): directly, or as a signal through the
// proxy. One thread; the caller published the group's earlier work.
template <class B>
GPUCOMM_MSG_FN void remote_set(const B& b, uint64_t* sym, uint64_t v, int32_t pe) {
  if (auto* p = reinterpret_cast<uint64_t*>(b.peer(sym, pe))) {
    b.st_sys(p, v, Ord::release);
  } else {
    b.signal_set(sym, v, pe);
  }
}

}  // namespace gpucomm::msg::proto
