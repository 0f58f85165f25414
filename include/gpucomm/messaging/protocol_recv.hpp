#pragma once
// The messaging protocol, part 3: the receiver (docs/MESSAGING.md, "Receiving", "Rendezvous").
// The progress holder drains each sender's ring in ticket order, matches every message against
// the posted receives (bins.hpp), completes the receive it takes (its completion record, or the
// holder's own request in registers) or keeps the message as unexpected, and returns credits.
#include <cstdint>
#include <type_traits>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/messaging/protocol_alloc.hpp"
#include "gpucomm/messaging/wire.hpp"

namespace gpucomm::msg::proto {

// A broken-protocol record of progress: what broke, and the peer whose words showed it.
GPUCOMM_MSG_FN Diag protocol_fault(ProtocolFault f, int32_t peer) {
  Diag d{};
  d.kind = DiagKind::protocol;
  d.op = DiagOp::progress;
  d.arg = static_cast<uint32_t>(f);
  d.peer = peer;
  return d;
}

// Calls f(ring_offset, payload_offset, length) for the pieces of a full-format payload of `bytes`
// bytes at ticket t: the header slot's payload area, then the continuation slots up to the ring's
// end, then from its start.
template <class F>
GPUCOMM_MSG_FN void ring_segments(const Config& cfg, uint64_t t, uint64_t bytes, F f) {
  const uint32_t sb = cfg.slot_bytes;
  const uint64_t first = min_of<uint64_t>(bytes, sb - kHeaderBytes);
  f((t & (cfg.slots - 1)) * sb + kHeaderBytes, uint64_t{0}, first);
  const uint64_t rest = bytes - first;
  if (rest == 0) return;
  const uint64_t cont = ((t + 1) & (cfg.slots - 1)) * sb;
  const uint64_t to_end = min_of<uint64_t>(rest, static_cast<uint64_t>(cfg.slots) * sb - cont);
  f(cont, first, to_end);
  if (rest > to_end) f(uint64_t{0}, first + to_end, rest - to_end);
}

// A message the leader found in a ring.
struct Arrival {
  wire::Header h;
  uint64_t t;  // its ticket
  int32_t pe;  // the sender
  uint32_t ok;
};

// The holder's words of peer `pe` (home::kPeerWords each).
GPUCOMM_MSG_FN uint32_t peer_word(const StateView& s, int32_t pe, uint32_t w) {
  return s.hm.peers + static_cast<uint32_t>(pe) * home::kPeerWords + w;
}

// Waits until every LL word of ticket t carries its stamp (they are written together: a short
// wait); a word that never does is a protocol fault.
template <class B>
GPUCOMM_MSG_OUTLINE void ll_wait_words(const B& b, const uint64_t* w, uint64_t* words, uint32_t nw, uint64_t t,
                                       int32_t pe) {
  for (uint32_t i = 1; i < nw; ++i) {
    uint64_t start = 0;
    for (uint32_t spin = 0; !wire::ll_word_ok(words[i], t); ++spin) {
      words[i] = b.ld_sys(&w[i], Ord::relaxed);
      if (spin == 0) start = b.now_ns();
      if ((spin & 1023u) == 1023u && b.now_ns() - start > b.timeout_ns() && b.timeout_ns() != 0) {
        Diag d = protocol_fault(ProtocolFault::ll_incomplete, pe);
        d.value = words[i];
        d.limit = t;
        d.drained = t;
        b.fail(d);
      }
    }
  }
}

// Leader: reads ticket t of the sender's ring, if it arrived.
template <class B>
GPUCOMM_MSG_FN Arrival read_slot(const B& b, const StateView& s, int32_t pe, uint64_t t) {
  Arrival a{};
  a.pe = pe;
  a.t = t;
  auto* w = reinterpret_cast<uint64_t*>(ring_slot(s, pe, a.t));
  // The slot's first words in one go, relaxed: an LL message needs no more (each word carries the
  // stamp), an empty slot costs no fence, and the full format fences only when it arrived.
  uint64_t words[kLLWords];
  for (uint32_t i = 0; i < kLLWords; i += 2) b.ld2_sys(&w[i], words[i], words[i + 1]);
  const uint64_t w0 = words[0];
  const int format = wire::arrived(w0, a.t);
  if (format == 0) return a;
  if (format == 1) {
    // The other LL words may still be on their way; each one is valid once it carries the stamp.
    const uint64_t bytes = min_of<uint64_t>((w0 >> 4) & 0xfffu, kLLMaxBytes);
    const uint32_t nw = wire::ll_word_count(bytes);
    bool whole = true;
    for (uint32_t i = 1; i < nw; ++i) whole = whole && wire::ll_word_ok(words[i], a.t);
    if (!whole) ll_wait_words(b, w, words, nw, a.t, pe);
    wire::ll_decode(words, a.h);
  } else {
    b.acquire_fence_sys();  // the sender wrote the header and payload before the stamp (release)
    for (uint32_t i = 1; i < 5; ++i) words[i] = b.ld_sys(&w[i], Ord::relaxed);
    wire::full_decode(w0, words, a.h);
  }
  a.ok = 1;
  return a;
}

GPUCOMM_MSG_FN Status recv_status(int32_t src, int32_t tag, uint64_t total, uint64_t cap) {
  return Status{src, tag, min_of(total, cap), total > cap ? kErrTruncated : kErrNone, 0};
}

// The receive a message goes to: a bin entry, or a request entry (a receive that found the message
// among the unexpected ones).
struct Target {
  uint32_t slot;
  uint32_t stamp;
  uint64_t cap;  // buffer bytes
  char* buf;
  uint32_t slow;  // the holder completes it entirely (an event counts its completion)
  uint32_t reserved;
};

// The target of a bin entry (a slow entry's details are in its request entry).
GPUCOMM_MSG_FN Target target_of(const StateView& s, const BinEntry& e) {
  Target t{e.slot, e.stamp, e.cap, reinterpret_cast<char*>(static_cast<uintptr_t>(e.buf)), 0, 0};
  if (e.cap & kBinSlow) {
    const Req& q = s.reqs[e.slot];
    t.cap = q.bytes;
    t.slow = (q.flags & kReqHasEvent) != 0 ? 1u : 0u;
  }
  return t;
}

// Leader: the receive `t` matched a rendezvous header that the holder moves itself (a receive whose
// event must count without its owner, or a staged source): records where the data is, sends CTS
// for a staged source, and lets progress move the chunks.
template <class B>
GPUCOMM_MSG_OUTLINE void start_rendezvous(const B& b, const StateView& s, const Target& t, int32_t pe,
                                          uint32_t wire_kind, uint32_t sreq, uint64_t offset, uint64_t total,
                                          int32_t src, int32_t tag) {
  Req& q = s.reqs[t.slot];
  q.pe = pe;
  q.kind = wire_kind;
  q.total = total;
  q.moved = 0;
  q.peer_req = sreq;
  q.offset = offset;
  q.stamp = t.stamp;
  q.buf = t.buf;
  q.bytes = t.cap;
  q.status = recv_status(src, tag, total, t.cap);
  q.flags &= ~uint32_t{kReqClaimable};
  if ((wire_kind & kWireKindMask) == kWireRtsGet) {
    q.state = kReqRecvGet;
  } else {
    q.state = kReqRecvStaged;
    reset_req_words(b, s, t.slot);  // the sender announces chunks in them once it has the CTS
    remote_set(b, &s.req_words[size_t{2} * sreq], kCts | t.slot, pe);
  }
  active_add(b, s, t.slot);
}

// Leader: hands a receive its completion. The holder's own request (the one its waiting group
// waits for) keeps it in registers; a slow one (an event) is completed entirely here (payload into
// the buffer, event, record); the others get their record.
template <class B>
GPUCOMM_MSG_FN void finish_target(const B& b, const StateView& s, const Target& t, Completion cp, int32_t ctx) {
  count(b, s, ctx, &Counters::received, 1);
  cp.ctx = ctx;
  if (b.is_own(t.slot, t.stamp)) {
    b.own_done(cp);
    return;
  }
  if (t.slow) {
    if ((cp.kind & kCompKindMask) == kCompInline) {
      auto* dst = reinterpret_cast<uint8_t*>(t.buf);
      for (uint32_t i = 0; i < cp.st.bytes; ++i) dst[i] = static_cast<uint8_t>(cp.w[i / 4] >> (8 * (i % 4)));
      cp.kind = kCompDone | kCompFenced;
    }
    const Req& q = s.reqs[t.slot];
    b.release_fence_local();  // the payload before the event and the record
    if (q.event) b.fadd(q.event, 1, Ord::release);
  } else if (cp.kind & kCompFenced) {
    b.release_fence_local();  // the payload copied into the buffer before the record
  }
  comp_write(b, s, t.slot, t.stamp, cp);
}

// Leader: receive `t` matched a rendezvous header (sender `pe`, its request `sreq`, the source at
// heap `offset`, `total` bytes). By get into the holder's own request: its waiting group moves the
// data (one block, like a put of the same bytes). By get into another plain receive: its record
// tells its waiter where the data is, and the request joins the holder's active list with an open
// claim: the waiter that sees the record first claims the get and moves the data with its group;
// past steal_ns the holder claims it and moves it in its rounds, so that the receive completes
// whether its owner waits now or later. A receive with an event, or a staged source: the holder.
template <class B>
GPUCOMM_MSG_OUTLINE void rendezvous_matched(const B& b, const StateView& s, const Target& t, int32_t pe,
                                            uint32_t wire_kind, uint32_t sreq, uint64_t offset, uint64_t total,
                                            int32_t src, int32_t tag, int32_t ctx) {
  const bool by_get = (wire_kind & kWireKindMask) == kWireRtsGet;
  const bool own = b.is_own(t.slot, t.stamp);
  if (by_get && (own || !t.slow)) {
    Completion cp{};
    cp.kind = kCompRtsGet;
    cp.st = recv_status(src, tag, total, t.cap);
    cp.buf = t.buf;
    cp.total = total;
    cp.w[0] = static_cast<uint32_t>(pe);
    cp.w[1] = lo32(offset);
    cp.w[2] = hi32(offset);
    cp.w[3] = sreq;
    if (!own) {
      start_rendezvous(b, s, t, pe, wire_kind, sreq, offset, total, src, tag);
      Req& q = s.reqs[t.slot];
      q.flags |= kReqClaimable;
      q.ticket = b.now_ns();
      // The claim word carries the stamp: a compare-and-swap that sees a stale value fails.
      b.st_sys(&s.req_words[size_t{2} * t.slot], (static_cast<uint64_t>(t.stamp) << 32) | kClaimOpen, Ord::relaxed);
    }
    finish_target(b, s, t, cp, ctx);
    return;
  }
  count(b, s, ctx, &Counters::received, 1);
  start_rendezvous(b, s, t, pe, wire_kind, sreq, offset, total, src, tag);
}

// Leader, a waiter that found a kCompRtsGet record of request `slot`: claims its get. False when
// the holder claimed it (the waiter then waits for the holder's record) or the claim word is not
// open yet.
template <class B>
GPUCOMM_MSG_FN bool claim_get(const B& b, const StateView& s, uint32_t slot, uint32_t stamp) {
  uint64_t want = (static_cast<uint64_t>(stamp) << 32) | kClaimOpen;
  return b.cas(&s.req_words[size_t{2} * slot], want, (static_cast<uint64_t>(stamp) << 32) | kClaimWaiter, Ord::relaxed);
}

// The completion of a small payload (at most kCompInlineBytes, 4 bytes per word).
GPUCOMM_MSG_FN Completion inline_completion(const Target& t, const Status& st, uint64_t total) {
  Completion cp{};
  cp.kind = kCompInline;
  cp.st = st;
  cp.buf = t.buf;
  cp.total = total;
  return cp;
}

// Delivers a message that matched receive `t` straight out of the ring.
template <class B, class C>
GPUCOMM_MSG_OUTLINE void deliver_arrival(const B& b, C c, const StateView& s, const Target& t, const Arrival& a) {
  const uint32_t kind = a.h.kind & kWireKindMask;
  if (kind == kWireRtsGet || kind == kWireRtsStaged) {
    if (b.leader(c)) {
      rendezvous_matched(b, s, t, a.pe, a.h.kind, a.h.sreq, a.h.offset, a.h.bytes, a.h.src, a.h.tag, a.h.ctx);
    }
    b.sync(c);
    return;
  }
  const Status st = recv_status(a.h.src, a.h.tag, a.h.bytes, t.cap);
  if (kind == kWireLL) {
    if (b.leader(c)) {
      Completion cp = inline_completion(t, st, a.h.bytes);
      for (uint32_t i = 0; i < kLLMaxBytes / 4; ++i) cp.w[i] = a.h.data[i];
      finish_target(b, s, t, cp, a.h.ctx);
    }
    b.sync(c);
    return;
  }
  // Eager: the payload from the ring slots into the buffer (the group copies), then the record.
  const char* ring = ring_slot(s, a.pe, 0);
  ring_segments(s.cfg, a.t, st.bytes,
                [&](uint64_t at, uint64_t off, uint64_t n) { b.copy(c, t.buf + off, ring + at, n); });
  b.publish_local(c);
  if (b.leader(c)) {
    if (needs_eager_credit(a.h.kind, a.h.bytes)) {
      const uint32_t w = peer_word(s, a.pe, home::kEagerFreed);
      b.set_hw(w, b.hw(w) + 1);
    }
    Completion cp{};
    cp.kind = kCompDone | kCompFenced;
    cp.st = st;
    cp.buf = t.buf;
    cp.total = a.h.bytes;
    finish_target(b, s, t, cp, a.h.ctx);
  }
  b.sync(c);
}

// Answers the standing probes a new unexpected message `u` satisfies (leader; slow path).
template <class B>
GPUCOMM_MSG_OUTLINE bool answer_probes(const B& b, const StateView& s, uint32_t u);

// Keeps a message that found no receive in unexpected entry `u`: small payloads inline, eager
// payloads in the sender's pool share (the eager credit reserved the room), rendezvous headers as
// they are; then links it into the lists of the keys whose receives could take it.
template <class B, class C>
GPUCOMM_MSG_OUTLINE void stash(const B& b, C c, const StateView& s, uint32_t u, const Arrival& a) {
  Unexp& e = s.unexp[u];
  const uint32_t kind = a.h.kind & kWireKindMask;
  int32_t slot = -1;
  if (b.leader(c)) {
    e.pe = a.pe;
    e.bytes = a.h.bytes;
    e.wire = a.h.kind;
    e.sreq = a.h.sreq;
    e.offset = a.h.offset;
    e.pool_slot = 0;
    e.env = matching::Envelope{a.h.ctx, a.h.src, a.h.tag, u};
    e.roles = bins::roles_of(static_cast<Mode>(a.h.mode));
    if (kind == kWireRtsGet || kind == kWireRtsStaged) {
      e.kind = kUnexpRts;
    } else if (kind == kWireLL || a.h.bytes <= kInlineBytes) {
      e.kind = kUnexpInline;
      if (kind == kWireLL) wire::store_words(reinterpret_cast<char*>(e.data), a.h.data, kLLMaxBytes);
    } else {
      e.kind = kUnexpPool;
      const uint32_t pw = peer_word(s, a.pe, home::kPoolUsed);
      const uint64_t used = b.hw(pw);
      const uint64_t mask = s.cfg.pool_slots >= 64 ? ~uint64_t(0) : (uint64_t(1) << s.cfg.pool_slots) - 1;
      const uint64_t free = ~used & mask;
      slot = free ? static_cast<int32_t>(lowest_bit(free)) : -1;
      if (slot >= 0) {
        b.set_hw(pw, used | (uint64_t(1) << slot));
        e.pool_slot = static_cast<uint32_t>(slot);
      }
    }
  }
  slot = b.bcast(c, slot);
  if (kind == kWireEager && a.h.bytes <= kInlineBytes) {
    const char* ring = ring_slot(s, a.pe, 0);
    ring_segments(s.cfg, a.t, a.h.bytes, [&](uint64_t at, uint64_t off, uint64_t n) {
      b.copy(c, reinterpret_cast<char*>(e.data) + off, ring + at, n);
    });
  } else if (kind == kWireEager) {
    if (slot < 0) {
      // The sender wrote an eager payload without a free pool slot: its credits were broken.
      Diag d = protocol_fault(ProtocolFault::pool_full, a.pe);
      d.bytes = a.h.bytes;
      d.value = b.hw(peer_word(s, a.pe, home::kPoolUsed));
      d.limit = s.cfg.pool_slots;
      if (b.leader(c)) b.fail(d);
    }
    char* pool =
        s.pool + (static_cast<size_t>(a.pe) * s.cfg.pool_slots + static_cast<uint32_t>(slot)) * s.cfg.eager_max;
    const char* ring = ring_slot(s, a.pe, 0);
    ring_segments(s.cfg, a.t, a.h.bytes,
                  [&](uint64_t at, uint64_t off, uint64_t n) { b.copy(c, pool + off, ring + at, n); });
  }
  b.sync(c);
}

// Frees unexpected entry `u` (leader): its pool slot and eager credit, its entry.
template <class B>
GPUCOMM_MSG_OUTLINE void unexp_free(const B& b, const StateView& s, uint32_t u) {
  const Unexp& e = s.unexp[u];
  if (e.kind == kUnexpPool) {
    const uint32_t pw = peer_word(s, e.pe, home::kPoolUsed);
    b.set_hw(pw, b.hw(pw) & ~(uint64_t(1) << e.pool_slot));
    const uint32_t ew = peer_word(s, e.pe, home::kEagerFreed);
    b.set_hw(ew, b.hw(ew) + 1);
  }
  s.unexp_bits[u / 64] &= ~(uint64_t(1) << (u % 64));
  b.set_hw(home::kUmqN, b.hw(home::kUmqN) - 1);
  const auto ctx = static_cast<uint32_t>(e.env.comm) & 63u;
  b.set_hw(home::kCommUmq + ctx, b.hw(home::kCommUmq + ctx) - 1);
}

// A free unexpected entry (leader), or -1.
GPUCOMM_MSG_FN int32_t unexp_take(const StateView& s) {
  for (uint32_t w = 0; w < s.cfg.unexpected / 64; ++w) {
    const uint64_t v = s.unexp_bits[w];
    if (~v == 0) continue;
    const uint32_t i = lowest_bit(~v);
    s.unexp_bits[w] = v | (uint64_t(1) << i);
    return static_cast<int32_t>(w * 64 + i);
  }
  return -1;
}

// Delivers unexpected entry `u` (unlinked already) to receive `t` (a receive posted later, or
// mrecv) and frees the entry.
template <class B, class C>
GPUCOMM_MSG_OUTLINE void deliver_unexpected(const B& b, C c, const StateView& s, const Target& t, uint32_t u) {
  Unexp& e = s.unexp[u];
  if (e.kind == kUnexpRts) {
    if (b.leader(c)) {
      rendezvous_matched(b, s, t, e.pe, e.wire, e.sreq, e.offset, e.bytes, e.env.src, e.env.tag, e.env.comm);
      unexp_free(b, s, u);
    }
    b.sync(c);
    return;
  }
  const Status st = recv_status(e.env.src, e.env.tag, e.bytes, t.cap);
  if (e.kind == kUnexpInline && st.bytes <= kCompInlineBytes) {
    if (b.leader(c)) {
      Completion cp = inline_completion(t, st, e.bytes);
      for (uint32_t i = 0; i < kInlineBytes / 4; ++i) cp.w[i] = bytes_word(e.data, kInlineBytes, i * 4);
      finish_target(b, s, t, cp, e.env.comm);
      unexp_free(b, s, u);
    }
    b.sync(c);
    return;
  }
  if (e.kind == kUnexpInline) {
    b.copy(c, t.buf, e.data, st.bytes);
  } else {
    const char* pool = s.pool + (static_cast<size_t>(e.pe) * s.cfg.pool_slots + e.pool_slot) * s.cfg.eager_max;
    b.copy(c, t.buf, pool, st.bytes);
  }
  b.publish_local(c);
  if (b.leader(c)) {
    Completion cp{};
    cp.kind = kCompDone | kCompFenced;
    cp.st = st;
    cp.buf = t.buf;
    cp.total = e.bytes;
    finish_target(b, s, t, cp, e.env.comm);
    unexp_free(b, s, u);
  }
  b.sync(c);
}

GPUCOMM_MSG_FN uint64_t credit_word(uint64_t eager_freed, uint64_t drained) {
  return ((eager_freed & 0xffffffffu) << 32) | (drained & 0xffffffffu);
}
// Rounds a peer's ring may stay empty before credits drained since the last return go back.
inline constexpr uint64_t kCreditIdleRounds = 8;

// Leader, after draining `pe` (`arrived`: this round took messages from it): writes this PE's
// credit word on `pe` when due: once a quarter of the ring (or of the eager pool) was freed since
// the last return, or when the ring stayed empty for kCreditIdleRounds rounds with credits
// pending. A stream of small messages pays one release per quarter ring, and a sender that waits
// for credits waits at most those rounds longer (docs/MESSAGING.md, "Flow control").
template <class B>
GPUCOMM_MSG_FN bool credits_due(const B& b, const StateView& s, int32_t pe, bool arrived) {
  const uint64_t want = credit_word(b.hw(peer_word(s, pe, home::kEagerFreed)), b.hw(peer_word(s, pe, home::kDrained)));
  const uint64_t returned = b.hw(peer_word(s, pe, home::kReturned));
  if (want == returned) return false;
  const uint32_t slots_freed = static_cast<uint32_t>(want) - static_cast<uint32_t>(returned);
  const uint32_t eager_freed = static_cast<uint32_t>(want >> 32) - static_cast<uint32_t>(returned >> 32);
  if (slots_freed >= (s.cfg.slots + 3) / 4 || (eager_freed != 0 && eager_freed >= (s.cfg.pool_slots + 3) / 4))
    return true;
  const uint32_t iw = peer_word(s, pe, home::kIdle);
  if (arrived) {
    if (b.hw(iw) != 0) b.set_hw(iw, 0);
    return false;
  }
  const uint64_t idle = b.hw(iw) + 1;
  b.set_hw(iw, idle);
  return idle >= kCreditIdleRounds;
}

// Writes this PE's credit word on `pe` when it changed: slots drained (lower half) and eager
// credits freed (upper half). The caller published the group's reads of the slots.
template <class B>
GPUCOMM_MSG_OUTLINE void return_credits(const B& b, const StateView& s, int32_t pe) {
  const uint64_t want = credit_word(b.hw(peer_word(s, pe, home::kEagerFreed)), b.hw(peer_word(s, pe, home::kDrained)));
  if (want == b.hw(peer_word(s, pe, home::kReturned))) return;
  remote_set(b, &s.credits[s.cfg.rank], want, pe);
  b.set_hw(peer_word(s, pe, home::kReturned), want);
  b.set_hw(peer_word(s, pe, home::kIdle), 0);
}

// An active message that arrived: parked in its sender's share of the AM table (a request entry,
// granted by the sender's credit, or a reply entry, reserved by the request this PE sent), its
// payload copied out of the ring, and queued in arrival order for am_poll (protocol_am.hpp). The
// credits guarantee the entry, so parking never stalls the ring; a full share means the sender
// broke them (a protocol fault).
template <class B, class C>
GPUCOMM_MSG_OUTLINE bool park_am(const B& b, C c, const StateView& s, const Arrival& a) {
  const uint32_t q = s.cfg.am_per_sender;
  const bool reply = (static_cast<uint32_t>(a.h.tag) & kAmReply) != 0;
  int32_t slot = -1;
  if (b.leader(c)) {
    // Atomic: pollers free entries without holding progress.
    uint64_t* bits = &s.am_bits[a.pe];
    const uint32_t base = reply ? 32u : 0u;
    uint64_t v = b.ld(bits, Ord::relaxed);
    for (;;) {
      const uint64_t mask = ((q >= 32 ? ~uint64_t(0) : (uint64_t(1) << q) - 1) << base) & ~v;
      if (mask == 0) break;
      const uint32_t i = lowest_bit(mask);
      if (b.cas(bits, v, v | (uint64_t(1) << i), Ord::acquire)) {
        slot = static_cast<int32_t>((reply ? q : 0u) + (i - base));
        break;
      }
    }
    if (slot < 0) {
      Diag d = protocol_fault(ProtocolFault::am_full, a.pe);
      d.tag = a.h.tag;
      d.value = v;
      d.limit = q;
      b.fail(d);
    }
  }
  slot = b.bcast(c, slot);
  if (slot < 0) return false;
  const uint32_t idx = static_cast<uint32_t>(a.pe) * 2 * q + static_cast<uint32_t>(slot);
  char* entry = s.am + static_cast<uint64_t>(idx) * am_entry_bytes(s.cfg);
  char* payload = entry + sizeof(AmEntry);
  const uint64_t bytes = min_of<uint64_t>(a.h.bytes, s.cfg.am_max);
  if ((a.h.kind & kWireKindMask) == kWireLL) {
    if (b.leader(c)) wire::store_words(payload, a.h.data, bytes);
  } else {
    const char* ring = ring_slot(s, a.pe, 0);
    ring_segments(s.cfg, a.t, bytes,
                  [&](uint64_t at, uint64_t off, uint64_t n) { b.copy(c, payload + off, ring + at, n); });
  }
  b.publish_local(c);  // the payload before the entry's publication below
  if (b.leader(c)) {
    auto* e = reinterpret_cast<AmEntry*>(entry);
    e->source = a.h.src;
    e->id = static_cast<uint32_t>(a.h.tag) & kAmIdMask;
    e->ctx = a.h.ctx;
    e->flags = static_cast<uint32_t>(a.h.tag) & (kAmReply | kAmWantsReply);
    e->bytes = bytes;
    e->pe = a.pe;
    e->replied = 0;
    const uint64_t tail = b.hw(home::kAmTail);
    s.am_fifo[tail % (static_cast<uint64_t>(s.cfg.npes) * 2 * q)] = idx;
    b.set_hw(home::kAmTail, tail + 1);
    // Pollers take entries without holding progress: the entry, then the tail (release).
    b.st(&s.ctl->am_tail, tail + 1, Ord::release);
  }
  b.sync(c);
  return true;
}

// The no_unexpected assertion broken: a message found no posted receive.
template <class B>
GPUCOMM_MSG_OUTLINE void no_unexpected_fault(const B& b, const Arrival& a) {
  Diag d = protocol_fault(ProtocolFault::no_unexpected, a.pe);
  d.ctx = a.h.ctx;
  d.mode = static_cast<uint32_t>(Mode::no_unexpected);
  d.rank = a.h.src;
  d.tag = a.h.tag;
  d.bytes = a.h.bytes;
  b.fail(d);
}

// Leader, a message on a no_unexpected communicator that found no receive: true when posts wait to
// be taken. A round takes the posts announced before it read the post word and then drains the
// rings, so a message can overtake a receive that was posted (and seen by its sender) before it
// was sent; it then stays in the ring for the next round, which takes that post first. The fence
// orders the arrival before the post word: a post its sender saw is counted there. Only when no
// post waits is the message an error.
template <class B>
GPUCOMM_MSG_FN bool posts_waiting(const B& b, const StateView& s) {
  b.acquire_fence_local();
  const uint64_t T = b.ld(&s.ctl->post_tail, Ord::relaxed);
  return post_fast_count(T) != static_cast<uint32_t>(b.hw(home::kFastDone)) ||
         post_ring_count(T) != static_cast<uint32_t>(b.hw(home::kRingDone));
}

// A message that found no receive: kept in an unexpected entry (false: no room, or on a
// no_unexpected communicator a post still to take; the ring stalls until the next round).
template <class B, class C>
GPUCOMM_MSG_OUTLINE bool keep_unexpected(const B& b, C c, const StateView& s, const Arrival& a) {
  int32_t u = -1;
  if (b.leader(c) && static_cast<Mode>(a.h.mode) == Mode::no_unexpected && posts_waiting(b, s)) u = -2;
  if (b.bcast(c, u) == -2) return false;
  if (b.leader(c)) {
    if (!comm_of(s, a.h.ctx)) {
      Diag f = protocol_fault(ProtocolFault::unknown_comm, a.pe);
      f.ctx = a.h.ctx;
      f.tag = a.h.tag;
      f.bytes = a.h.bytes;
      b.fail(f);
    }
    if (static_cast<Mode>(a.h.mode) == Mode::no_unexpected) no_unexpected_fault(b, a);
    const auto ctx = static_cast<uint32_t>(a.h.ctx) & 63u;
    u = b.hw(home::kCommUmq + ctx) < s.cfg.queue_cap ? unexp_take(s) : -1;
  }
  u = b.bcast(c, u);
  if (u < 0) return false;
  const auto e = static_cast<uint32_t>(u);
  stash(b, c, s, e, a);
  bool ok = true;
  if (b.leader(c)) {
    ok = bins::umq_push(b, s, e);
    if (!ok) {
      // No room for its keys: give the entry back (and a pool slot it took); the ring stalls.
      const Unexp& x = s.unexp[e];
      if (x.kind == kUnexpPool) {
        const uint32_t pw = peer_word(s, x.pe, home::kPoolUsed);
        b.set_hw(pw, b.hw(pw) & ~(uint64_t(1) << x.pool_slot));
      }
      s.unexp_bits[e / 64] &= ~(uint64_t(1) << (e % 64));
    } else {
      const auto ctx = static_cast<uint32_t>(a.h.ctx) & 63u;
      b.set_hw(home::kUmqN, b.hw(home::kUmqN) + 1);
      b.set_hw(home::kCommUmq + ctx, b.hw(home::kCommUmq + ctx) + 1);
      count(b, s, a.h.ctx, &Counters::unexpected, 1);
      if (b.hw(home::kProbesN) != 0) answer_probes(b, s, e);
    }
  }
  return b.bcast(c, ok);
}

// Handles one arrived message (the leader, for its group). Returns false (nothing consumed) when it
// must wait for room (keep_unexpected).
template <class B>
GPUCOMM_MSG_FN bool handle_arrival(const B& b, const StateView& s, const Arrival& a) {
  const coop::Thread one{};
  if (a.h.kind & kWireActive) return park_am(b, one, s, a);
  BinEntry e{};
  if (!bins::match_message(b, s, a.h.ctx, a.h.src, a.h.tag, e)) return keep_unexpected(b, one, s, a);
  count(b, s, a.h.ctx, &Counters::matches, 1);
  const Target t = target_of(s, e);
  if ((a.h.kind & kWireKindMask) != kWireLL) {
    deliver_arrival(b, one, s, t, a);
    return true;
  }
  // The common case inline: an LL payload into the receive's completion.
  Completion cp = inline_completion(t, recv_status(a.h.src, a.h.tag, a.h.bytes, t.cap), a.h.bytes);
  for (uint32_t i = 0; i < kLLMaxBytes / 4; ++i) cp.w[i] = a.h.data[i];
  finish_target(b, s, t, cp, a.h.ctx);
  return true;
}

// Warps (a block's warp 0): drains the leading run of LL messages from sender `pe`'s ring in one
// pass (docs/MESSAGING.md, "Batches"). Lane i reads ticket drained + i; each lane looks up the bins
// its message could match (no shared-memory fills: lanes only read in parallel); the run is cut
// before the first message whose receive is not the head of exactly one non-empty bin (a choice
// between bins, or none: unexpected), and before the first that would find its bin exhausted.
// Lanes that go to the same bin take consecutive entries in lane (= arrival) order; each lane
// completes its own receive; lane 0 then updates the bins and counts in order. Returns the
// messages consumed; 0 when the first one needs the one-by-one path (drain_peer then takes it).
template <class B, class C>
GPUCOMM_MSG_OUTLINE uint32_t drain_ll_batch(const B& b, C c, const StateView& s, int32_t pe, uint64_t t0) {
  uint32_t run = 0;
  uint32_t lane = 0;
  if (b.batch_lane(c, lane)) {
    const uint64_t t = t0 + lane;
    wire::Header h{};
    bool ok = lane < s.cfg.slots;
    if (ok) {
      const auto* w = reinterpret_cast<const uint64_t*>(ring_slot(s, pe, t));
      uint64_t words[kLLWords];
      for (uint32_t i = 0; i < kLLWords; i += 2) b.ld2_sys(&w[i], words[i], words[i + 1]);
      ok = wire::arrived(words[0], t) == 1;
      const uint32_t nw = wire::ll_word_count(min_of<uint64_t>((words[0] >> 4) & 0xfffu, kLLMaxBytes));
      for (uint32_t i = 1; i < nw && ok; ++i) ok = wire::ll_word_ok(words[i], t);
      if (ok) wire::ll_decode(words, h);
      ok = ok && (h.kind & kWireActive) == 0 && static_cast<uint32_t>(h.ctx) < static_cast<uint32_t>(kMaxComms);
    }
    // A single message goes the one-by-one way (cheaper than the batch's warp steps).
    const uint32_t arrived = b.batch_ballot(ok);
    if ((arrived & 3u) == 3u) {
      // The bin this lane's message takes from, when that is the only candidate with receives.
      int32_t bin = -1;
      uint32_t pn = 0;
      if (ok) {
        const uint64_t wild = b.hw_peek(home::kWild + static_cast<uint32_t>(h.ctx));
        const uint64_t keys[4] = {bins::key_of(h.ctx, h.src, h.tag), bins::key_of(h.ctx, kAnySource, h.tag),
                                  bins::key_of(h.ctx, h.src, kAnyTag), bins::key_of(h.ctx, kAnySource, kAnyTag)};
        const bool use[4] = {true, bins::wild_any_src(wild), bins::wild_any_tag(wild), bins::wild_both(wild)};
        uint32_t nonempty = 0;
        for (uint32_t k = 0; k < 4; ++k) {
          if (!use[k]) continue;
          const int32_t sl = bins::find_peek(b, s, keys[k]);
          if (sl < 0) continue;
          const auto n = static_cast<uint32_t>(b.kw_peek(static_cast<uint32_t>(sl), 1) >> 48);
          if (n == 0) continue;
          nonempty += 1;
          bin = sl;
          pn = n;
        }
        if (nonempty != 1) bin = -1;
      }
      const uint32_t simple = b.batch_ballot(ok && bin >= 0);
      run = simple == 0xffffffffu ? kBatchMax : lowest_bit(~uint64_t{simple});
      const bool in = lane < run;
      const uint32_t group = b.batch_match_any(in ? static_cast<uint32_t>(bin) : 0x80000000u | lane);
      const uint32_t rank = popcount(group & ((1u << lane) - 1u));
      // Cut before the first lane that finds its bin exhausted.
      const uint32_t over = b.batch_ballot(in && rank >= pn);
      if (over) run = min_of(run, lowest_bit(uint64_t{over}));
      // Each lane's receive; the run is also cut before the holder's own request (its completion
      // goes to the leader's registers: the one-by-one path delivers it).
      Target tg{};
      bins::Slot x{};
      if (lane < run) {
        const auto sl = static_cast<uint32_t>(bin);
        x = bins::decode_slot(b.kw_peek(sl, 0), b.kw_peek(sl, 1), b.kw_peek(sl, 2));
        tg = target_of(s, bins::bin_nth(s, x, rank));
      }
      const uint32_t own = b.batch_ballot(lane < run && b.is_own(tg.slot, tg.stamp));
      if (own) run = min_of(run, lowest_bit(uint64_t{own}));
      const bool mine = lane < run;
      const uint32_t gm = group & (run >= 32 ? 0xffffffffu : (1u << run) - 1u);
      // The last lane of each group reads the entry after its own: the bin's new head, which lane 0
      // stores below without a read of its own.
      BinEntry next{};
      bool has_next = false;
      if (mine && lane == highest_bit(gm) && rank + 1 < pn) {
        next = bins::bin_nth(s, x, rank + 1);
        has_next = true;
      }
      if (mine) {
        const Status st = recv_status(h.src, h.tag, h.bytes, tg.cap);
        Completion cp = inline_completion(tg, st, h.bytes);
        for (uint32_t i = 0; i < kLLMaxBytes / 4; ++i) cp.w[i] = h.data[i];
        finish_target(b, s, tg, cp, h.ctx);
      }
      b.batch_sync();
      // Lane 0: the bins and counts, group by group in lane order (shared words: one writer).
      const uint32_t leaders = b.batch_ballot(mine && gm != 0 && lane == lowest_bit(uint64_t{gm}));
      for (uint32_t m = leaders; m != 0; m &= m - 1) {
        const auto l = static_cast<int>(lowest_bit(uint64_t{m}));
        const auto sl = b.batch_shfl(static_cast<uint32_t>(bin), l);
        const uint32_t g = b.batch_shfl(gm, l);
        const auto last = static_cast<int>(highest_bit(g));
        BinEntry nx{};
        nx.order = b.batch_shfl(next.order, last);
        nx.stamp = b.batch_shfl(next.stamp, last);
        nx.slot = b.batch_shfl(next.slot, last);
        nx.cap = b.batch_shfl(next.cap, last);
        nx.buf = b.batch_shfl(next.buf, last);
        const bool hn = b.batch_shfl(has_next ? 1u : 0u, last) != 0;
        if (lane == 0) {
          bins::Slot y = bins::load_slot(b, sl);
          bins::bin_pop(b, s, sl, y, popcount(g), hn ? &nx : nullptr);
          bins::count_posted(b, y.key, -static_cast<int64_t>(popcount(g)));
        }
      }
      if (lane == 0 && run) {
        b.set_hw(peer_word(s, pe, home::kDrained), t0 + run);
      }
      b.batch_sync();
    }
  }
  return b.bcast(c, run);
}

// Leader: drains sender `pe`'s ring one message at a time (up to one ring's worth) from ticket
// drained[pe]. True if any message came.
template <class B>
GPUCOMM_MSG_FN bool drain_serial(const B& b, const StateView& s, int32_t pe, const Arrival* ahead) {
  const uint32_t dw = peer_word(s, pe, home::kDrained);
  bool any = false;
  for (uint32_t n = 0; n < s.cfg.slots; ++n) {
    const uint64_t t = b.hw(dw);
    // The slot the round read ahead, while it is still the next one (not taken by a batch).
    const Arrival a = n == 0 && ahead && ahead->t == t ? *ahead : read_slot(b, s, pe, t);
    if (!a.ok) break;
    if (!handle_arrival(b, s, a)) break;
    b.set_hw(dw, a.t + 1 + a.h.ncont);
    any = true;
    if (b.own_ready()) break;  // the waiting group's own message: no further look before it returns
  }
  return any;
}

// Drains sender `pe`'s ring and returns credits: a warp (a block's warp 0) first takes runs of LL
// messages in batches, then the leader takes the rest one by one. True if any message came.
template <class B, class C>
GPUCOMM_MSG_FN bool drain_peer(const B& b, C c, const StateView& s, int32_t pe, const Arrival* ahead = nullptr) {
  bool any = false;
  if constexpr (!std::is_same_v<C, coop::Thread>) {
    uint64_t t0 = b.bcast(c, b.leader(c) ? b.hw(peer_word(s, pe, home::kDrained)) : uint64_t{0});
    for (uint32_t k; (k = drain_ll_batch(b, c, s, pe, t0)) != 0; t0 += k) {
      any = true;
      if (k < kBatchMax) break;
    }
  }
  struct {
    uint32_t any, credits;
  } d{0, 0};
  if (b.leader(c)) {
    d.any = drain_serial(b, s, pe, ahead) || any ? 1u : 0u;
    d.credits = credits_due(b, s, pe, d.any != 0) ? 1u : 0u;
  }
  d = b.bcast(c, d);
  // The group's reads of the slots happen before the credits that free them.
  if (d.credits) {
    b.publish_to(c, pe);
    if (b.leader(c)) return_credits(b, s, pe);
  }
  return d.any != 0;
}

}  // namespace gpucomm::msg::proto
