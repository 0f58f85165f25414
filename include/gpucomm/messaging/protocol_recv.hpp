#pragma once
// The messaging protocol, part 3: the receiver (docs/MESSAGING.md, "Receiving", "Rendezvous").
// Progress drains each sender's ring in ticket order, matches every message against its
// communicator's PRQ, delivers it or keeps it as an unexpected entry, and returns credits. A
// receive matched to a rendezvous header pulls the data chunk by chunk.
#include <cstdint>

#include "gpucomm/messaging/protocol_alloc.hpp"
#include "gpucomm/messaging/wire.hpp"

namespace gpucomm::msg::proto {

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
  const uint64_t w0 = b.ld_sys(&w[0], Ord::acquire);
  const int format = wire::arrived(w0, a.t);
  if (format == 0) return a;
  uint64_t words[kLLWords] = {w0, 0, 0, 0, 0, 0, 0, 0};
  if (format == 1) {
    // The other LL words may still be on their way; each one is valid once it carries the stamp.
    const uint64_t bytes = min_of<uint64_t>((w0 >> 4) & 0xfffu, kLLMaxBytes);
    const uint32_t nw = wire::ll_word_count(bytes);
    const uint64_t start = b.now_ns();
    for (uint32_t i = 1; i < nw; ++i) {
      for (uint32_t spin = 0;; ++spin) {
        words[i] = b.ld_sys(&w[i], Ord::relaxed);
        if (wire::ll_word_ok(words[i], a.t)) break;
        if ((spin & 1023u) == 1023u && b.now_ns() - start > b.timeout_ns() && b.timeout_ns() != 0) {
          Diag d{};
          d.kind = DiagKind::protocol;
          d.op = DiagOp::progress;
          d.arg = static_cast<uint32_t>(ProtocolFault::ll_incomplete);
          d.peer = pe;
          d.value = words[i];
          d.limit = a.t;
          d.drained = a.t;
          b.fail(d);
        }
      }
    }
    wire::ll_decode(words, a.h);
  } else {
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
    b.fadd(&cm.counters.received, 1, Ord::relaxed);
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
    if (b.leader(c))
      for (uint64_t i = 0; i < st.bytes; ++i) q.buf[i] = static_cast<char>(a.h.data[i]);
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
      if (kind == kWireLL)
        for (uint32_t i = 0; i < kInlineBytes; ++i) e.data[i] = a.h.data[i];
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
      Diag d{};
      d.kind = DiagKind::protocol;
      d.op = DiagOp::progress;
      d.arg = static_cast<uint32_t>(ProtocolFault::pool_full);
      d.peer = a.pe;
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
      bitmap_give(b, s.unexp_bits, u);
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
    bitmap_give(b, s.unexp_bits, u);
  }
  finish_receive(b, c, s, cm, id, st);
}

GPUCOMM_MSG_FN uint64_t credit_word(const PeerState& p) {
  return ((p.eager_freed & 0xffffffffu) << 32) | (p.drained & 0xffffffffu);
}
GPUCOMM_MSG_FN bool credits_changed(const StateView& s, int32_t pe) {
  return credit_word(s.peers[pe]) != s.peers[pe].returned;
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
}

// Handles one arrived message. Returns false (nothing consumed) when the communicator's UMQ or the
// unexpected table has no room: the ring stalls until receives drain them.
template <class B, class C>
GPUCOMM_MSG_FN bool handle_arrival(const B& b, C c, const StateView& s, const Arrival& a) {
  CommState* cm = comm_of(s, a.h.ctx);
  if (!cm) {
    Diag d{};
    d.kind = DiagKind::protocol;
    d.op = DiagOp::progress;
    d.arg = static_cast<uint32_t>(ProtocolFault::unknown_comm);
    d.ctx = a.h.ctx;
    d.peer = a.pe;
    d.tag = a.h.tag;
    d.bytes = a.h.bytes;
    if (b.leader(c)) b.fail(d);
    return false;
  }
  int32_t u = -1;
  if (b.leader(c) && cm->umq_n < cm->cap) u = bitmap_take(b, s.unexp_bits, s.cfg.unexpected);
  u = b.bcast(c, u);
  if (u < 0) return false;
  const matching::Envelope env{a.h.ctx, a.h.src, a.h.tag, static_cast<uint32_t>(u)};
  const uint64_t t0 = b.now_ns();
  const int32_t h = b.match_message(c, *cm, env);
  if (b.leader(c)) {
    b.fadd(&cm->counters.matches, 1, Ord::relaxed);
    b.fadd(&cm->counters.match_ns, b.now_ns() - t0, Ord::relaxed);
  }
  if (h >= 0) {
    if (b.leader(c)) bitmap_give(b, s.unexp_bits, static_cast<uint32_t>(u));
    deliver_arrival(b, c, s, *cm, static_cast<uint32_t>(h), a);
  } else {
    if (b.leader(c)) {
      s.unexp[u].env = env;
      b.fadd(&cm->counters.unexpected, 1, Ord::relaxed);
      if (cm->mode == Mode::no_unexpected) b.fadd(&cm->counters.assert_violations, 1, Ord::relaxed);
    }
    stash(b, c, s, static_cast<uint32_t>(u), a);
  }
  return true;
}

// Drains sender `pe`'s ring (up to one ring's worth) and returns credits. True if any message came.
template <class B, class C>
GPUCOMM_MSG_FN bool drain_peer(const B& b, C c, const StateView& s, int32_t pe) {
  bool any = false;
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
  if (b.bcast(c, b.leader(c) && credits_changed(s, pe))) {
    b.publish(c);
    if (b.leader(c)) return_credits(b, s, pe);
  }
  return any;
}

}  // namespace gpucomm::msg::proto
