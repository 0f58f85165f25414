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

// The same for a bitmap that only the progress lock's holder touches (the unexpected-message
// table): plain loads and stores, which stay in the L1 cache of the holder's SM.
GPUCOMM_MSG_FN int32_t locked_bitmap_take(uint64_t* bits, uint32_t n) {
  for (uint32_t w = 0; w < n / 64; ++w) {
    const uint64_t v = bits[w];
    if (~v == 0) continue;
    const uint32_t i = lowest_bit(~v);
    bits[w] = v | (uint64_t(1) << i);
    return static_cast<int32_t>(w * 64 + i);
  }
  return -1;
}
GPUCOMM_MSG_FN void locked_bitmap_give(uint64_t* bits, uint32_t i) {
  bits[i / 64] &= ~(uint64_t(1) << (i % 64));
}

// A fresh request entry (leader only): its bit in the table, nothing else. A request's fields
// are written by whoever owns it next: the sender (fill_send, then a release before it travels),
// or, for receives, the progress holder from the submission (take_submissions). Whoever frees an
// entry leaves `done` at 0 before the release of its bit.
template <class B>
GPUCOMM_MSG_FN int32_t request_take(const B& b, const StateView& s) {
  return bitmap_take(b, s.req_bits, s.cfg.requests);
}

// Resets a request's two remote words (before its index travels to a peer: the later RTS or CTS
// release orders the resets before the peer's writes).
template <class B>
GPUCOMM_MSG_FN void reset_req_words(const B& b, const StateView& s, uint32_t id) {
  b.st_sys(&s.req_words[size_t{2} * id], 0, Ord::relaxed);
  b.st_sys(&s.req_words[size_t{2} * id + 1], 0, Ord::relaxed);
}

template <class B>
GPUCOMM_MSG_FN void request_give(const B& b, const StateView& s, uint32_t id) {
  s.reqs[id].state = kReqFree;
  s.reqs[id].done = 0;
  bitmap_give(b, s.req_bits, id);
}

// A submission (docs/MESSAGING.md, "Submissions"): ticket t of the submission ring, entry t mod R,
// kSubmitUsed words that each carry the stamp t + 1 (mod 2^32) in their upper half and 32 bits of
// the submission in their lower half. Relaxed stores, so posting a receive costs no fence, and the
// progress holder reads an entry with relaxed loads (no fence either: a word with the right stamp
// holds the right value). A send request's fields are in its entry of the request table (the
// poster released them before the stamps): the holder fences before it reads them.
enum SubmitKind : uint32_t { kSubmitRecv = 1, kSubmitSend = 2 };
inline constexpr uint32_t kSubmitUsed = 11;
static_assert(kSubmitUsed <= kSubmitWords);

struct Submission {
  uint32_t id;
  uint32_t kind;  // SubmitKind
  int32_t ctx;
  int32_t rank;  // receive: source rank or kAnySource
  int32_t tag;   // receive: tag or kAnyTag
  char* buf;
  uint64_t bytes;
  uint64_t* event;
};

// Entry of ticket t: t mod R, a mask when R is a power of two (the default; a 64-bit division
// costs hundreds of cycles on a GPU).
GPUCOMM_MSG_FN uint64_t submit_entry(const StateView& s, uint64_t t) {
  const uint64_t r = s.cfg.requests;
  return (r & (r - 1)) == 0 ? t & (r - 1) : t % r;
}

GPUCOMM_MSG_FN uint32_t lo32(uint64_t v) {
  return static_cast<uint32_t>(v);
}
GPUCOMM_MSG_FN uint32_t hi32(uint64_t v) {
  return static_cast<uint32_t>(v >> 32);
}

// Hands a request to progress (any thread; a send's fields released before): at most R requests
// exist, so entry t mod R was consumed before ticket t took it (entries are consumed in order).
template <class B>
GPUCOMM_MSG_FN void submit(const B& b, const StateView& s, const Submission& e) {
  const uint64_t t = b.fadd(&s.ctl->submit_tail, 1, Ord::relaxed);
  uint64_t* w = &s.submit[submit_entry(s, t) * kSubmitWords];
  const auto buf = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(e.buf));
  const auto ev = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(e.event));
  const uint32_t lo[kSubmitUsed] = {e.id,
                                    e.kind,
                                    static_cast<uint32_t>(e.ctx),
                                    static_cast<uint32_t>(e.rank),
                                    static_cast<uint32_t>(e.tag),
                                    lo32(buf),
                                    hi32(buf),
                                    lo32(e.bytes),
                                    hi32(e.bytes),
                                    lo32(ev),
                                    hi32(ev)};
  const uint64_t stamp = static_cast<uint64_t>(static_cast<uint32_t>(t + 1)) << 32;
  for (uint32_t i = 0; i < kSubmitUsed; ++i) b.st(&w[i], stamp | lo[i], Ord::relaxed);
}

// Progress only: reads the next submission in ticket order into `e`; false when it has not (fully)
// arrived yet (taken by a later round). Does not consume it (submission_pop does).
template <class B>
GPUCOMM_MSG_FN bool submission_peek(const B& b, const StateView& s, Submission& e) {
  const uint64_t head = s.ctl->submit_head;
  const uint64_t* w = &s.submit[submit_entry(s, head) * kSubmitWords];
  uint64_t v[kSubmitUsed];
  for (uint32_t i = 0; i < kSubmitUsed; ++i) v[i] = b.ld(&w[i], Ord::relaxed);
  const auto stamp = static_cast<uint32_t>(head + 1);
  for (uint32_t i = 0; i < kSubmitUsed; ++i)
    if (hi32(v[i]) != stamp) return false;
  e.id = lo32(v[0]);
  e.kind = lo32(v[1]);
  e.ctx = static_cast<int32_t>(lo32(v[2]));
  e.rank = static_cast<int32_t>(lo32(v[3]));
  e.tag = static_cast<int32_t>(lo32(v[4]));
  e.buf = reinterpret_cast<char*>(static_cast<uintptr_t>((static_cast<uint64_t>(lo32(v[6])) << 32) | lo32(v[5])));
  e.bytes = (static_cast<uint64_t>(lo32(v[8])) << 32) | lo32(v[7]);
  e.event =
      reinterpret_cast<uint64_t*>(static_cast<uintptr_t>((static_cast<uint64_t>(lo32(v[10])) << 32) | lo32(v[9])));
  if (e.kind == kSubmitSend) b.acquire_fence_local();  // the send's fields were released before
  return true;
}

// Progress only: whether the next submission's first word arrived (a poll: no fence).
template <class B>
GPUCOMM_MSG_FN bool submission_waiting(const B& b, const StateView& s) {
  const uint64_t head = s.ctl->submit_head;
  const uint64_t v = b.ld(&s.submit[submit_entry(s, head) * kSubmitWords], Ord::relaxed);
  return hi32(v) == static_cast<uint32_t>(head + 1);
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
  // The waiter that completes its own request reads `done` itself after this store (program
  // order): no release (and no fence) for it.
  b.st(&q.done, 1, b.owns(q) ? Ord::relaxed : Ord::release);
}

// One engine call (`match`: the backend's match_message or match_receive) on communicator `cm`,
// counted, and timed for a sample of the calls (backend's sample_match(), the time scaled by
// kMatchSampleScale to stand for the calls not timed: reading a GPU's timer costs about as much
// as a short match).
template <class B, class C, class F>
GPUCOMM_MSG_FN int32_t counted_match(const B& b, C c, CommState& cm, F match) {
  const bool timed = b.leader(c) && b.sample_match();
  const uint64_t t0 = timed ? b.now_ns() : 0;
  const int32_t r = match();
  if (b.leader(c)) {
    b.count(&cm.counters.matches, 1);
    if (timed) b.count(&cm.counters.match_ns, (b.now_ns() - t0) * B::kMatchSampleScale);
  }
  return r;
}

// Eager messages larger than an unexpected entry holds take one of the receiver's pool slots.
// Active messages never do: their payload is parked in the AM table, not the pool.
GPUCOMM_MSG_FN bool needs_eager_credit(uint32_t kind, uint64_t bytes) {
  return (kind & kWireKindMask) == kWireEager && (kind & kWireActive) == 0 && bytes > kInlineBytes;
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
    b.st_to(pe, p, v, Ord::release);
  } else {
    b.signal_set(sym, v, pe);
  }
}

}  // namespace gpucomm::msg::proto
