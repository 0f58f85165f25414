#pragma once
// The messaging protocol, part 3: the receiver (docs/MESSAGING.md, "Receiving", "Rendezvous").
// Progress drains each sender's ring in ticket order, matches every message against its
// communicator's PRQ, delivers it or keeps it as an unexpected entry, and returns credits. A
// receive matched to a rendezvous header pulls the data chunk by chunk.
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

// Leader: reads ticket drained[pe] of the sender's ring, if it arrived.
template <class B>
GPUCOMM_MSG_FN Arrival read_slot(const B& b, const StateView& s, int32_t pe) {
  Arrival a{};
  a.pe = pe;
  a.t = s.peers[pe].drained;
  auto* w = reinterpret_cast<uint64_t*>(ring_slot(s, pe, a.t));
  // The slot's first words in one go, relaxed: an LL message needs no more (each word carries the
  // stamp), an empty slot costs no fence, and the full format fences only when it arrived.
  uint64_t words[kLLWords];
  for (uint32_t i = 0; i < kLLWords; ++i) words[i] = b.ld_sys(&w[i], Ord::relaxed);
  const uint64_t w0 = words[0];
  const int format = wire::arrived(w0, a.t);
  if (format == 0) return a;
  if (format == 1) {
    // The other LL words may still be on their way; each one is valid once it carries the stamp.
    const uint64_t bytes = min_of<uint64_t>((w0 >> 4) & 0xfffu, kLLMaxBytes);
    const uint32_t nw = wire::ll_word_count(bytes);
    uint64_t start = 0;
    for (uint32_t i = 1; i < nw; ++i) {
      for (uint32_t spin = 0; !wire::ll_word_ok(words[i], a.t); ++spin) {
        words[i] = b.ld_sys(&w[i], Ord::relaxed);
        if (spin == 0) start = b.now_ns();
        if ((spin & 1023u) == 1023u && b.now_ns() - start > b.timeout_ns() && b.timeout_ns() != 0) {
          Diag d = protocol_fault(ProtocolFault::ll_incomplete, pe);
          d.value = words[i];
          d.limit = a.t;
          d.drained = a.t;
          b.fail(d);
        }
      }
    }
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

// The receive `id` matched a rendezvous header: record where the data is, send CTS for a staged
// source, and let progress move the chunks. Leader only.
template <class B>
GPUCOMM_MSG_FN void start_rendezvous(const B& b, const StateView& s, uint32_t id, int32_t pe, uint32_t wire_kind,
                                     uint32_t sreq, uint64_t offset, uint64_t total, int32_t src, int32_t tag) {
  Req& q = s.reqs[id];
  q.pe = pe;
  q.kind = wire_kind;
  q.total = total;
  q.moved = 0;
  q.peer_req = sreq;
  q.offset = offset;
  q.status = recv_status(src, tag, total, q.bytes);
  if ((wire_kind & kWireKindMask) == kWireRtsGet) {
    q.state = kReqRecvGet;
  } else {
    q.state = kReqRecvStaged;
    reset_req_words(b, s, id);  // the sender announces chunks in them once it has the CTS
    remote_set(b, &s.req_words[size_t{2} * sreq], kCts | id, pe);
  }
  active_add(s, id);
}

// Completes a receive whose data was copied by the group: everyone's copies are visible to this
// PE's threads before the owner acquires `done`.
template <class B, class C>
GPUCOMM_MSG_FN void finish_receive(const B& b, C c, const StateView& s, CommState& cm, uint32_t id, const Status& st) {
  b.publish_local(c);
  if (b.leader(c)) {
    b.count(&cm.counters.received, 1);
    complete(b, s.reqs[id], st);
  }
}

// Delivers a message that matched a posted receive straight out of the ring.
template <class B, class C>
GPUCOMM_MSG_FN void deliver_arrival(const B& b, C c, const StateView& s, CommState& cm, uint32_t id, const Arrival& a) {
  Req& q = s.reqs[id];
  const uint32_t kind = a.h.kind & kWireKindMask;
  if (kind == kWireRtsGet || kind == kWireRtsStaged) {
    if (b.leader(c)) start_rendezvous(b, s, id, a.pe, a.h.kind, a.h.sreq, a.h.offset, a.h.bytes, a.h.src, a.h.tag);
    b.sync(c);
    return;
  }
  const Status st = recv_status(a.h.src, a.h.tag, a.h.bytes, q.bytes);
  if (kind == kWireLL) {
    if (b.leader(c)) wire::store_words(q.buf, a.h.data, st.bytes);
  } else {
    const char* ring = ring_slot(s, a.pe, 0);
    ring_segments(s.cfg, a.t, st.bytes,
                  [&](uint64_t at, uint64_t off, uint64_t n) { b.copy(c, q.buf + off, ring + at, n); });
    if (b.leader(c) && needs_eager_credit(a.h.kind, a.h.bytes)) s.peers[a.pe].eager_freed += 1;
  }
  finish_receive(b, c, s, cm, id, st);
}

// Keeps a message that found no receive in unexpected entry `u` (its envelope is in the UMQ):
// small payloads inline, eager payloads in the sender's pool share (the eager credit reserved the
// room), rendezvous headers as they are.
template <class B, class C>
GPUCOMM_MSG_FN void stash(const B& b, C c, const StateView& s, uint32_t u, const Arrival& a) {
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
    if (kind == kWireRtsGet || kind == kWireRtsStaged) {
      e.kind = kUnexpRts;
    } else if (kind == kWireLL || a.h.bytes <= kInlineBytes) {
      e.kind = kUnexpInline;
      if (kind == kWireLL) wire::store_words(reinterpret_cast<char*>(e.data), a.h.data, kLLMaxBytes);
    } else {
      e.kind = kUnexpPool;
      PeerState& p = s.peers[a.pe];
      const uint64_t mask = s.cfg.pool_slots >= 64 ? ~uint64_t(0) : (uint64_t(1) << s.cfg.pool_slots) - 1;
      const uint64_t free = ~p.pool_used & mask;
      slot = free ? static_cast<int32_t>(lowest_bit(free)) : -1;
      if (slot >= 0) {
        p.pool_used |= uint64_t(1) << slot;
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
      d.value = s.peers[a.pe].pool_used;
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

// Delivers unexpected entry `u` to receive `id` (phase 2, or mrecv) and frees the entry.
template <class B, class C>
GPUCOMM_MSG_FN void deliver_unexpected(const B& b, C c, const StateView& s, CommState& cm, uint32_t id, uint32_t u) {
  Unexp& e = s.unexp[u];
  Req& q = s.reqs[id];
  if (e.kind == kUnexpRts) {
    if (b.leader(c)) {
      start_rendezvous(b, s, id, e.pe, e.wire, e.sreq, e.offset, e.bytes, e.env.src, e.env.tag);
      locked_bitmap_give(s.unexp_bits, u);
    }
    b.sync(c);
    return;
  }
  const Status st = recv_status(e.env.src, e.env.tag, e.bytes, q.bytes);
  if (e.kind == kUnexpInline) {
    b.copy(c, q.buf, e.data, st.bytes);
  } else {
    const char* pool = s.pool + (static_cast<size_t>(e.pe) * s.cfg.pool_slots + e.pool_slot) * s.cfg.eager_max;
    b.copy(c, q.buf, pool, st.bytes);
  }
  b.sync(c);
  if (b.leader(c)) {
    if (e.kind == kUnexpPool) {
      PeerState& p = s.peers[e.pe];
      p.pool_used &= ~(uint64_t(1) << e.pool_slot);
      p.eager_freed += 1;
    }
    locked_bitmap_give(s.unexp_bits, u);
  }
  finish_receive(b, c, s, cm, id, st);
}

GPUCOMM_MSG_FN uint64_t credit_word(const PeerState& p) {
  return ((p.eager_freed & 0xffffffffu) << 32) | (p.drained & 0xffffffffu);
}
// Rounds a peer's ring may stay empty before credits drained since the last return go back.
inline constexpr uint64_t kCreditIdleRounds = 8;

// Leader, after draining `pe` (`arrived`: this round took messages from it): whether to return
// credits now. They go back once a quarter of the ring (or of the eager pool) was freed since the
// last return, or when the ring stayed empty for kCreditIdleRounds rounds with credits pending:
// a stream of small messages pays one release per quarter ring, and a sender that waits for
// credits waits at most those rounds longer (docs/MESSAGING.md, "Flow control").
GPUCOMM_MSG_FN bool credits_due(const StateView& s, int32_t pe, bool arrived) {
  PeerState& p = s.peers[pe];
  const uint64_t want = credit_word(p);
  if (want == p.returned) return false;
  const uint32_t slots_freed = static_cast<uint32_t>(want) - static_cast<uint32_t>(p.returned);
  const uint32_t eager_freed = static_cast<uint32_t>(want >> 32) - static_cast<uint32_t>(p.returned >> 32);
  if (slots_freed >= (s.cfg.slots + 3) / 4 || (eager_freed != 0 && eager_freed >= (s.cfg.pool_slots + 3) / 4))
    return true;
  if (arrived) {
    p.idle_rounds = 0;
    return false;
  }
  return ++p.idle_rounds >= kCreditIdleRounds;
}

// Writes this PE's credit word on `pe` when it changed: slots drained (lower half) and eager
// credits freed (upper half). The caller published the group's reads of the slots.
template <class B>
GPUCOMM_MSG_FN void return_credits(const B& b, const StateView& s, int32_t pe) {
  PeerState& p = s.peers[pe];
  const uint64_t want = credit_word(p);
  if (want == p.returned) return;
  remote_set(b, &s.credits[s.cfg.rank], want, pe);
  p.returned = want;
  p.idle_rounds = 0;
}

// An active message that arrived: parked in its sender's share of the AM table (a request entry,
// granted by the sender's credit, or a reply entry, reserved by the request this PE sent), its
// payload copied out of the ring, and queued in arrival order for am_poll (protocol_am.hpp). The
// credits guarantee the entry, so parking never stalls the ring; a full share means the sender
// broke them (a protocol fault).
template <class B, class C>
GPUCOMM_MSG_FN bool park_am(const B& b, C c, const StateView& s, const Arrival& a) {
  const uint32_t q = s.cfg.am_per_sender;
  const bool reply = (static_cast<uint32_t>(a.h.tag) & kAmReply) != 0;
  int32_t slot = -1;
  if (b.leader(c)) {
    // Atomic: pollers free entries without the lock.
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
  if (b.leader(c)) {
    auto* e = reinterpret_cast<AmEntry*>(entry);
    e->source = a.h.src;
    e->id = static_cast<uint32_t>(a.h.tag) & kAmIdMask;
    e->ctx = a.h.ctx;
    e->flags = static_cast<uint32_t>(a.h.tag) & (kAmReply | kAmWantsReply);
    e->bytes = bytes;
    e->pe = a.pe;
    e->replied = 0;
    s.am_fifo[s.ctl->am_tail % (static_cast<uint64_t>(s.cfg.npes) * 2 * q)] = idx;
    s.ctl->am_tail += 1;
  }
  b.sync(c);
  return true;
}

// Handles one arrived message. Returns false (nothing consumed) when the communicator's UMQ or the
// unexpected table has no room: the ring stalls until receives drain them.
template <class B, class C>
GPUCOMM_MSG_FN bool handle_arrival(const B& b, C c, const StateView& s, const Arrival& a) {
  CommState* cm = comm_of(s, a.h.ctx);
  if (!cm) {
    Diag d = protocol_fault(ProtocolFault::unknown_comm, a.pe);
    d.ctx = a.h.ctx;
    d.tag = a.h.tag;
    d.bytes = a.h.bytes;
    if (b.leader(c)) b.fail(d);
    return false;
  }
  if (a.h.kind & kWireActive) return park_am(b, c, s, a);
  if (!b.bcast(c, b.leader(c) && cm->umq_n < cm->cap)) return false;
  // Matched first; an unexpected entry is taken only for a message that joined the UMQ (its
  // envelope's handle is then patched to the entry).
  const matching::Envelope env{a.h.ctx, a.h.src, a.h.tag, kUnexpPending};
  const int32_t h = counted_match(b, c, *cm, [&] { return b.match_message(c, *cm, env); });
  if (h >= 0) {
    deliver_arrival(b, c, s, *cm, static_cast<uint32_t>(h), a);
  } else {
    int32_t u = -1;
    if (b.leader(c)) {
      u = locked_bitmap_take(s.unexp_bits, s.cfg.unexpected);
      if (u < 0) {
        cm->umq_n -= 1;  // no entry to keep it in: the message stays in the ring
      } else {
        cm->umq[cm->umq_n - 1].handle = static_cast<uint32_t>(u);
      }
    }
    u = b.bcast(c, u);
    if (u < 0) return false;
    if (b.leader(c)) {
      s.unexp[u].env = matching::Envelope{a.h.ctx, a.h.src, a.h.tag, static_cast<uint32_t>(u)};
      b.count(&cm->counters.unexpected, 1);
      if (cm->mode == Mode::no_unexpected) b.count(&cm->counters.assert_violations, 1);
    }
    stash(b, c, s, static_cast<uint32_t>(u), a);
  }
  return true;
}

// Warps and blocks (warp 0 works): drains the leading run of LL messages of one communicator from
// sender `pe`'s ring in one pass (docs/MESSAGING.md, "Batches"): lane i reads ticket drained + i,
// the run is matched by one engine call in arrival order, and each lane delivers its own message
// (or keeps it as an unexpected entry). Returns the messages consumed; 0 when the next one is not
// such a message (drain_peer then takes it alone).
template <class B, class C>
GPUCOMM_MSG_FN uint32_t drain_ll_batch(const B& b, C c, const StateView& s, int32_t pe) {
  uint32_t run = 0;
  uint32_t lane = 0;
  if (b.batch_lane(c, lane)) {
    PeerState& p = s.peers[pe];
    const uint64_t t0 = b.batch_shfl(lane == 0 ? p.drained : uint64_t{0}, 0);
    const uint64_t t = t0 + lane;
    wire::Header h{};
    bool ok = lane < s.cfg.slots;
    if (ok) {
      const auto* w = reinterpret_cast<const uint64_t*>(ring_slot(s, pe, t));
      uint64_t words[kLLWords];
      for (uint32_t i = 0; i < kLLWords; ++i) words[i] = b.ld_sys(&w[i], Ord::relaxed);
      ok = wire::arrived(words[0], t) == 1;
      const uint32_t nw = wire::ll_word_count(min_of<uint64_t>((words[0] >> 4) & 0xfffu, kLLMaxBytes));
      for (uint32_t i = 1; i < nw && ok; ++i) ok = wire::ll_word_ok(words[i], t);
      if (ok) wire::ll_decode(words, h);
      ok = ok && (h.kind & kWireActive) == 0;
    }
    const auto ctx = static_cast<int32_t>(b.batch_shfl(static_cast<uint32_t>(h.ctx), 0));
    const uint32_t okm = b.batch_ballot(ok && h.ctx == ctx);
    run = okm == 0xffffffffu ? kBatchMax : lowest_bit(~uint64_t{okm});
    CommState* cm = comm_of(s, ctx);
    if (!cm) run = 0;
    // Room in case nothing matches: UMQ entries, and an unexpected entry per message, taken up
    // front by the leader (those of matched messages go back below).
    uint32_t umq0 = 0;
    if (lane == 0 && run) {
      umq0 = cm->umq_n;
      run = min_of(run, cm->cap - umq0);
    }
    run = b.batch_shfl(run, 0);
    umq0 = b.batch_shfl(umq0, 0);
    int32_t u = -1;
    for (uint32_t k = 0; k < run; ++k) {
      const auto e = static_cast<int32_t>(
          b.batch_shfl(static_cast<uint32_t>(lane == 0 ? locked_bitmap_take(s.unexp_bits, s.cfg.unexpected) : 0), 0));
      if (e < 0) {
        run = k;
        break;
      }
      if (lane == k) u = e;
    }
    if (run) {
      const matching::Envelope env{ctx, h.src, h.tag, lane};
      const int32_t recv = b.batch_match(*cm, env, lane, run);
      const uint32_t unmatched = b.batch_ballot(lane < run && recv < 0);
      MatchScratch& m = s.ctl->match;
      m.batch_scratch[lane] = -1;
      if (lane < run && recv >= 0) {
        Req& q = s.reqs[recv];
        const Status st = recv_status(h.src, h.tag, h.bytes, q.bytes);
        wire::store_words(q.buf, h.data, st.bytes);
        b.count(&cm->counters.received, 1);
        complete(b, q, st);
        m.batch_scratch[lane] = u;  // its unexpected entry goes back
      } else if (lane < run) {
        const uint32_t at = umq0 + popcount(unmatched & ((1u << lane) - 1u));
        cm->umq[at].handle = static_cast<uint32_t>(u);
        Unexp& e = s.unexp[u];
        e.kind = kUnexpInline;
        e.pe = pe;
        e.bytes = h.bytes;
        e.wire = h.kind;
        e.sreq = 0;
        e.offset = 0;
        e.pool_slot = 0;
        e.env = matching::Envelope{ctx, h.src, h.tag, static_cast<uint32_t>(u)};
        wire::store_words(reinterpret_cast<char*>(e.data), h.data, kLLMaxBytes);
        b.count(&cm->counters.unexpected, 1);
        if (cm->mode == Mode::no_unexpected) b.count(&cm->counters.assert_violations, 1);
      }
      b.batch_sync();
      if (lane == 0) {
        for (uint32_t k = 0; k < run; ++k)
          if (m.batch_scratch[k] >= 0) locked_bitmap_give(s.unexp_bits, static_cast<uint32_t>(m.batch_scratch[k]));
        b.count(&cm->counters.matches, run);
        p.drained = t0 + run;
      }
    }
  }
  return b.bcast(c, run);
}

// Drains sender `pe`'s ring (up to one ring's worth) and returns credits. True if any message came.
template <class B, class C>
GPUCOMM_MSG_FN bool drain_peer(const B& b, C c, const StateView& s, int32_t pe) {
  bool any = false;
  if constexpr (!std::is_same_v<C, coop::Thread>) {
    for (uint32_t k; (k = drain_ll_batch(b, c, s, pe)) != 0;) {
      any = true;
      if (k < kBatchMax) break;
    }
  }
  for (uint32_t n = 0; n < s.cfg.slots; ++n) {
    Arrival a{};
    if (b.leader(c)) a = read_slot(b, s, pe);
    a = b.bcast(c, a);
    if (!a.ok) break;
    if (!handle_arrival(b, c, s, a)) break;
    if (b.leader(c)) s.peers[pe].drained = a.t + 1 + a.h.ncont;
    any = true;
  }
  // The group's reads of the slots happen before the credits that free them.
  if (b.bcast(c, b.leader(c) && credits_due(s, pe, any))) {
    b.publish_to(c, pe);
    if (b.leader(c)) return_credits(b, s, pe);
  }
  return any;
}

}  // namespace gpucomm::msg::proto
