#pragma once
// The messaging protocol, part 1: requests, posts and completion records (docs/MESSAGING.md).
// Every function of protocol_*.hpp is written once, as a template over a memory backend B and a
// cooperation level C:
//
//   group       leader(c), group_rank(c), group_size(c), bcast(c, v) (the leader's value to all,
//               synchronizing), sync(c), publish(c) (every thread's writes visible at system
//               scope before the leader's next release), publish_local(c) (the same for this PE's
//               threads), copy(c, dst, src, n) (addresses reachable by loads and stores)
//   local words ld, st, fadd, fand, for_, cas (this PE's threads: device scope on a GPU)
//   shared words ld_sys, st_sys (words other PEs write or read: system scope)
//   holder      hw(i)/set_hw(i, v) (holder words), kw(slot, w)/set_kw(slot, w, v) (key slots),
//               try_hold(steal), park(dirty), holding(): the progress holder (progress_hold.hpp)
//   remote      peer(sym, pe) (address for direct stores, or nullptr: through a proxy),
//               put(c, sym_dst, src, n, pe) and get(c, dst, sym_src, n, pe) (blocking),
//               signal_set(sym, v, pe) (one thread, ordered after its earlier puts),
//               in_heap(p, n), heap_offset(p)
//   time        now_ns(), pause(i), timeout_ns(), job_failed(), fail(diag)
//
// The device backend (device_backend_device.cuh) implements them with gpucomm/device and
// gpucomm/base/ordering_device.cuh; the host backend (src/messaging/host_backend.hpp) with the
// Runtime's host API and std::atomic_ref.
//
// Posts (docs/MESSAGING.md, "Posting receives"). Receives (and the other requests the holder must
// take: sends it advances, probes, matched receives) reach the holder through two logs ordered by
// one word, Control::post_tail:
//   - the post ring: any thread takes ticket t with a fetch_add of post_tail (which also returns
//     how many fast posts came before: the post's place among them) and writes entry t mod posts:
//     kPostWords words, each the stamp (t + 1) in its upper half and 32 bits of the post below;
//   - the fast-post log: the one group holding the fast-post role (bit 63 of post_tail, taken with
//     a fetch_or) writes entry k of the log (kFastWords stamped words) and announces it with a
//     posted add of post_tail's fast field, no reply awaited.
// RMWs on one word are totally ordered and that order respects happens-before, so "ring ticket t
// came after fast post hpc(t)" orders every post the way the posting threads' synchronization
// does; the holder merges the two logs by it. Both logs have `posts` >= R entries and every post
// holds a request slot until the holder took it, so an entry is free when its ticket comes.
#include <cstdint>

#include "gpucomm/messaging/bins.hpp"
#include "gpucomm/messaging/fn.hpp"
#include "gpucomm/messaging/layout.hpp"

namespace gpucomm::msg::proto {

GPUCOMM_MSG_FN uint32_t lo32(uint64_t v) {
  return static_cast<uint32_t>(v);
}
GPUCOMM_MSG_FN uint32_t hi32(uint64_t v) {
  return static_cast<uint32_t>(v >> 32);
}
GPUCOMM_MSG_FN uint64_t stamped(uint32_t stamp, uint32_t v) {
  return (static_cast<uint64_t>(stamp) << 32) | v;
}

// ---- request slots ----

// Takes up to `want` free request slots of one bitmap word (the word `hint` picks, then the next
// ones): a relaxed look at the word, then a fetch_or of the lowest free bits it showed; returns
// the word and the slots taken (a non-empty mask), or word -1 when every word was seen full. Only
// the bits a caller keeps are ever set, so a concurrent taker never sees a free slot as taken.
// The caller gives back what it does not keep (slots_give).
struct Grab {
  int32_t word;
  uint64_t bits;
};
template <class B>
GPUCOMM_MSG_FN Grab slots_grab(const B& b, const StateView& s, uint32_t hint, uint32_t want) {
  const uint32_t words = s.cfg.requests / 64;
  for (uint32_t n = 0; n < words; ++n) {
    const uint32_t w = (hint + n) % words;
    uint64_t v = b.ld(&s.req_bits[w], Ord::relaxed);
    while (~v != 0) {
      uint64_t free = ~v, pick = 0;
      for (uint32_t k = 0; k < want && free != 0; ++k) {
        const uint64_t low = free & (~free + 1);
        pick |= low;
        free &= ~low;
      }
      const uint64_t old = b.for_(&s.req_bits[w], pick, Ord::acquire);
      if ((pick & ~old) != 0) return Grab{static_cast<int32_t>(w), pick & ~old};
      v = old | pick;
    }
  }
  return Grab{-1, 0};
}
// Gives slots back (posted: nobody waits for the old value).
template <class B>
GPUCOMM_MSG_FN void slots_give(const B& b, const StateView& s, uint32_t word, uint64_t bits) {
  if (bits) b.fand(&s.req_bits[word], ~bits, Ord::relaxed);
}
// One slot; -1 when the table is full.
template <class B>
GPUCOMM_MSG_FN int32_t slot_take(const B& b, const StateView& s, uint32_t hint) {
  const Grab g = slots_grab(b, s, hint, 1);
  if (g.word < 0) return -1;
  return g.word * 64 + static_cast<int32_t>(lowest_bit(g.bits));
}
template <class B>
GPUCOMM_MSG_FN void slot_give(const B& b, const StateView& s, uint32_t slot) {
  slots_give(b, s, slot / 64, uint64_t(1) << (slot % 64));
}

// Resets a request's two remote words (before its index travels to a peer: the later RTS or CTS
// release orders the resets before the peer's writes).
template <class B>
GPUCOMM_MSG_FN void reset_req_words(const B& b, const StateView& s, uint32_t id) {
  b.st_sys(&s.req_words[size_t{2} * id], 0, Ord::relaxed);
  b.st_sys(&s.req_words[size_t{2} * id + 1], 0, Ord::relaxed);
}

// ---- posts ----

enum PostKind : uint32_t {
  kPostRecv = 1,   // a receive
  kPostSend = 2,   // a send request the holder advances (pending slots, staged rendezvous, event)
  kPostProbe = 3,  // a probe of a group that does not hold progress (flags: kProbeTake, kProbeOnce)
  kPostMrecv = 4,  // a receive of a message taken by mprobe (aux: its unexpected entry)
};
enum : uint32_t { kProbeTake = 1, kProbeOnce = 2 };

struct Post {
  uint32_t kind;  // PostKind
  uint32_t mode;  // the communicator's Mode
  uint32_t flags;
  uint32_t slot;   // the request
  uint32_t stamp;  // the request's stamp
  int32_t ctx;
  int32_t src;  // receive, probe: source or kAnySource
  int32_t tag;  // receive, probe: tag or kAnyTag
  char* buf;
  uint64_t bytes;
  uint64_t* event;
  uint32_t aux;  // mrecv: the unexpected entry
};

GPUCOMM_MSG_FN uint32_t ring_stamp(uint32_t t) {
  return ((t + 1) & 0x7fffffffu) | 0x80000000u;
}
GPUCOMM_MSG_FN uint32_t fast_stamp(uint32_t k) {
  return ((k + 1) & 0x3fffffffu) | 0x40000000u;
}
// A request's stamp: its post's place (ring tickets and fast posts never collide).
GPUCOMM_MSG_FN uint32_t request_stamp_ring(uint32_t t) {
  return 0x80000000u | (t & 0x7fffffffu);
}
GPUCOMM_MSG_FN uint32_t request_stamp_fast(uint32_t k) {
  return 0x40000000u | (k & 0x3fffffffu);
}

GPUCOMM_MSG_FN uint64_t* ring_entry(const StateView& s, uint32_t t) {
  return &s.posts[static_cast<size_t>(t & (s.cfg.posts - 1)) * kPostWords];
}
GPUCOMM_MSG_FN uint64_t* fast_entry(const StateView& s, uint32_t k) {
  return &s.fast[static_cast<size_t>(k & (s.cfg.posts - 1)) * kFastWords];
}

// The post's 32-bit fields, in ring-entry order; word 12 the fast posts before it.
GPUCOMM_MSG_FN void post_fields(const Post& p, uint32_t hpc, uint32_t* w) {
  const auto buf = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p.buf));
  const auto ev = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p.event));
  w[0] = p.kind | (p.mode << 8) | (p.flags << 16);
  w[1] = p.slot;
  w[2] = p.stamp;
  w[3] = static_cast<uint32_t>(p.ctx);
  w[4] = static_cast<uint32_t>(p.src);
  w[5] = static_cast<uint32_t>(p.tag);
  w[6] = lo32(buf);
  w[7] = hi32(buf);
  w[8] = lo32(p.bytes);
  w[9] = hi32(p.bytes);
  w[10] = lo32(ev);
  w[11] = hi32(ev);
  w[12] = hpc;
  w[13] = p.aux;
  w[14] = 0;
  w[15] = 0;
}

GPUCOMM_MSG_FN Post decode_post(const uint64_t* v, uint32_t& hpc) {
  Post p{};
  p.kind = lo32(v[0]) & 0xffu;
  p.mode = (lo32(v[0]) >> 8) & 0xffu;
  p.flags = lo32(v[0]) >> 16;
  p.slot = lo32(v[1]);
  p.stamp = lo32(v[2]);
  p.ctx = static_cast<int32_t>(lo32(v[3]));
  p.src = static_cast<int32_t>(lo32(v[4]));
  p.tag = static_cast<int32_t>(lo32(v[5]));
  p.buf = reinterpret_cast<char*>(static_cast<uintptr_t>((static_cast<uint64_t>(lo32(v[7])) << 32) | lo32(v[6])));
  p.bytes = (static_cast<uint64_t>(lo32(v[9])) << 32) | lo32(v[8]);
  p.event =
      reinterpret_cast<uint64_t*>(static_cast<uintptr_t>((static_cast<uint64_t>(lo32(v[11])) << 32) | lo32(v[10])));
  hpc = lo32(v[12]);
  p.aux = lo32(v[13]);
  return p;
}

// The fast-post log holds plain receives only: request slot, mode and context in word 0.
GPUCOMM_MSG_FN void fast_fields(const Post& p, uint32_t* w) {
  const auto buf = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p.buf));
  w[0] = p.slot | (p.mode << 16) | (static_cast<uint32_t>(p.ctx) << 24);
  w[1] = p.stamp;
  w[2] = static_cast<uint32_t>(p.src);
  w[3] = static_cast<uint32_t>(p.tag);
  w[4] = lo32(buf);
  w[5] = hi32(buf);
  w[6] = lo32(p.bytes);
  w[7] = hi32(p.bytes);
}
GPUCOMM_MSG_FN Post decode_fast(const uint64_t* v) {
  Post p{};
  p.kind = kPostRecv;
  p.slot = lo32(v[0]) & 0xffffu;
  p.mode = (lo32(v[0]) >> 16) & 0xffu;
  p.ctx = static_cast<int32_t>(lo32(v[0]) >> 24);
  p.stamp = lo32(v[1]);
  p.src = static_cast<int32_t>(lo32(v[2]));
  p.tag = static_cast<int32_t>(lo32(v[3]));
  p.buf = reinterpret_cast<char*>(static_cast<uintptr_t>((static_cast<uint64_t>(lo32(v[5])) << 32) | lo32(v[4])));
  p.bytes = (static_cast<uint64_t>(lo32(v[7])) << 32) | lo32(v[6]);
  return p;
}

// A post through the ring (any thread of the PE): one fetch_add for the ticket, then the entry.
// Returns the ticket. A poster whose add wrapped the ring field takes the carry back out.
template <class B>
GPUCOMM_MSG_FN uint32_t post_ring(const B& b, const StateView& s, Post p, bool stamp_request) {
  const uint64_t old = b.fadd(&s.ctl->post_tail, 1, Ord::relaxed);
  const uint32_t t = post_ring_count(old);
  if (t == kPostRingMask) b.fadd(&s.ctl->post_tail, ~(uint64_t(1) << 31) + 1, Ord::relaxed);
  if (stamp_request) p.stamp = request_stamp_ring(t);
  uint32_t w[kPostWords];
  post_fields(p, post_fast_count(old), w);
  uint64_t* e = ring_entry(s, t);
  const uint32_t st = ring_stamp(t);
  for (uint32_t i = 0; i < kPostWords; i += 2) b.st2(&e[i], stamped(st, w[i]), stamped(st, w[i + 1]));
  return t;
}

// ---- completion records ----

// A request's completion record (kCompWords words, each the request's stamp in its upper half):
//   w0 kind | error << 8 | received bytes >> 32 << 16, w1 source, w2 tag, w3 received bytes,
//   w4 w5 the receive buffer, w6 the message's size (truncation: what was sent), w7 its upper 16
//   bits | the context id << 16,
//   w8..w15 the payload (kCompInline, up to kCompInlineBytes) or the rendezvous source
//   (kCompRtsGet: PE, heap offset low and high, the sender's request).
// The holder writes it with relaxed stores; a waiter polls it with relaxed loads: every word
// carries the stamp, so a word with the right stamp holds the right value, and no fence is needed
// on either side. kCompFenced: the holder copied the payload into the buffer itself and fenced
// before the record (release pattern); the waiter fences after seeing it (acquire pattern).
enum CompKind : uint32_t {
  kCompDone = 1,    // status only (with kCompFenced: the payload is in the buffer)
  kCompInline = 2,  // the payload is in w8..w15; the waiter copies it into its buffer
  kCompRtsGet = 3,  // matched a rendezvous header: the waiter gets the data and sends FIN
  kCompProbe = 4,   // a probe's answer: the status of a message that matches (w8: entry + 1 if taken)
  kCompNone = 5,    // a once-probe's answer: no message matches now
  kCompKindMask = 15,
  kCompFenced = 16,
  kCompClaimed = 32,  // never stored: the waiter claimed a kCompRtsGet record's get (claim_get)
};

struct Completion {
  uint32_t kind;
  int32_t ctx;  // the request's context (its communicator's error policy)
  Status st;
  char* buf;
  uint64_t total;
  uint32_t w[8];  // w8..w15
};

GPUCOMM_MSG_FN uint64_t* comp_of(const StateView& s, uint32_t slot) {
  return &s.comps[static_cast<size_t>(slot) * kCompWords];
}

template <class B>
GPUCOMM_MSG_FN void comp_write(const B& b, const StateView& s, uint32_t slot, uint32_t stamp, const Completion& c) {
  uint64_t* r = comp_of(s, slot);
  const auto buf = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(c.buf));
  const uint32_t w0 = c.kind | (static_cast<uint32_t>(c.st.error) << 8) | (hi32(c.st.bytes) << 16);
  b.st2(&r[0], stamped(stamp, w0), stamped(stamp, static_cast<uint32_t>(c.st.source)));
  b.st2(&r[2], stamped(stamp, static_cast<uint32_t>(c.st.tag)), stamped(stamp, lo32(c.st.bytes)));
  b.st2(&r[4], stamped(stamp, lo32(buf)), stamped(stamp, hi32(buf)));
  b.st2(&r[6], stamped(stamp, lo32(c.total)),
        stamped(stamp, (hi32(c.total) & 0xffffu) | (static_cast<uint32_t>(c.ctx) << 16)));
  for (uint32_t i = 0; i < 8; i += 2) b.st2(&r[8 + i], stamped(stamp, c.w[i]), stamped(stamp, c.w[i + 1]));
}

// Reads the record of `slot`; false while it does not carry `stamp` in every word.
template <class B>
GPUCOMM_MSG_FN bool comp_read(const B& b, const StateView& s, uint32_t slot, uint32_t stamp, Completion& c) {
  const uint64_t* r = comp_of(s, slot);
  uint64_t v[kCompWords];
  for (uint32_t i = 0; i < kCompWords; i += 2) b.ld2(&r[i], v[i], v[i + 1]);
  for (uint32_t i = 0; i < kCompWords; ++i)
    if (hi32(v[i]) != stamp) return false;
  c.kind = lo32(v[0]) & 0xffu;
  c.st.error = static_cast<int32_t>((lo32(v[0]) >> 8) & 0xffu);
  c.st.source = static_cast<int32_t>(lo32(v[1]));
  c.st.tag = static_cast<int32_t>(lo32(v[2]));
  c.st.bytes = (static_cast<uint64_t>(lo32(v[0]) >> 16) << 32) | lo32(v[3]);
  c.st.reserved = 0;
  c.buf = reinterpret_cast<char*>(static_cast<uintptr_t>((static_cast<uint64_t>(lo32(v[5])) << 32) | lo32(v[4])));
  c.total = (static_cast<uint64_t>(lo32(v[7]) & 0xffffu) << 32) | lo32(v[6]);
  c.ctx = static_cast<int32_t>(lo32(v[7]) >> 16);
  for (uint32_t i = 0; i < 8; ++i) c.w[i] = lo32(v[8 + i]);
  return true;
}

// 4 bytes of `p` (n bytes) from byte `at`, zeros past its end.
GPUCOMM_MSG_FN uint32_t bytes_word(const uint8_t* p, uint64_t n, uint32_t at) {
  uint32_t v = 0;
  for (uint32_t k = 0; k < 4 && at + k < n; ++k) v |= static_cast<uint32_t>(p[at + k]) << (8 * k);
  return v;
}
GPUCOMM_MSG_FN void word_bytes(uint8_t* dst, uint64_t n, uint32_t at, uint32_t v) {
  for (uint32_t k = 0; k < 4 && at + k < n; ++k) dst[at + k] = static_cast<uint8_t>(v >> (8 * k));
}

// ---- the request entries the holder keeps ----

template <class B>
GPUCOMM_MSG_FN void active_add(const B& b, const StateView& s, uint32_t id) {
  const uint64_t n = b.hw(home::kActiveN);
  s.active[n] = id;
  b.set_hw(home::kActiveN, n + 1);
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

// Eager messages larger than an unexpected entry holds take one of the receiver's pool slots.
// Active messages never do: their payload is parked in the AM table, not the pool.
GPUCOMM_MSG_FN bool needs_eager_credit(uint32_t kind, uint64_t bytes) {
  return (kind & kWireKindMask) == kWireEager && (kind & kWireActive) == 0 && bytes > kInlineBytes;
}

// Adds n to counter `f` of context `ctx` (posted: nobody waits).
template <class B>
GPUCOMM_MSG_FN void count(const B& b, const StateView& s, int32_t ctx, uint64_t Counters::* f, uint64_t n) {
  if (static_cast<uint32_t>(ctx) < static_cast<uint32_t>(kMaxComms)) b.count(&(s.comms[ctx].counters.*f), n);
}

}  // namespace gpucomm::msg::proto
