#pragma once
// The messaging protocol, part 2: the sender (docs/MESSAGING.md, "Eager", "Rendezvous", "Flow
// control"). A send takes consecutive tickets of the receiver's ring (send order), picks LL,
// eager or a rendezvous header, and writes its slots as soon as the receiver's credit word says
// they are free; otherwise progress writes them later.
#include <cstdint>

#include "gpucomm/messaging/protocol_alloc.hpp"
#include "gpucomm/messaging/wire.hpp"

namespace gpucomm::msg::proto {

// What one send needs (the API layer resolved the destination to a world PE).
struct SendArgs {
  const void* buf;
  uint64_t bytes;
  int32_t pe;    // destination PE
  int32_t rank;  // destination rank in the communicator
  int32_t tag;   // the tag (the handler id of an active message)
  int32_t ctx;
  int32_t src;      // this PE's rank in the communicator
  uint32_t active;  // kWireActive for active messages
  uint64_t* event;
  uint32_t mode;  // the communicator's Mode (the receiver's holder learns it from the wire)
};

struct SendPlan {
  uint32_t kind;      // WireKind (with kWireActive)
  uint32_t nslots;    // tickets
  uint32_t degraded;  // an eager-sized message that goes header-only for want of an eager credit
  uint32_t reserved;
};

// Leader: reserves one of the pool slots the receiver keeps for this PE (compare-and-swap on the
// local count against the eager half of the credit word). False when all are in use.
template <class B>
GPUCOMM_MSG_FN bool take_eager_credit(const B& b, const StateView& s, int32_t pe) {
  PeerState& p = s.peers[pe];
  uint64_t used = b.ld(&p.eager_used, Ord::relaxed);
  for (;;) {
    const auto freed = static_cast<uint32_t>(b.ld_sys(&s.credits[pe], Ord::acquire) >> 32);
    if (static_cast<uint32_t>(used + 1 - freed) > s.cfg.pool_slots) return false;
    if (b.cas(&p.eager_used, used, used + 1, Ord::relaxed)) return true;
  }
}

// Leader: LL for tiny messages to directly reachable PEs (`direct`), eager up to the limit (with an
// eager credit when the payload is larger than an unexpected entry holds), a rendezvous header
// otherwise. Active messages are always eager (the caller waits for an eager credit: plan_active).
template <class B>
GPUCOMM_MSG_FN SendPlan plan_send(const B& b, const StateView& s, const SendArgs& a, bool direct) {
  SendPlan p{};
  if (a.active && !(a.bytes <= kLLMaxBytes && direct)) {
    // Active messages are eager whatever their size (the caller checked it is at most eager_max):
    // the receiver parks them in its AM table, so they take no eager credit.
    p.kind = kWireEager | a.active;
    p.nslots = 1 + wire::cont_slots(s.cfg.slot_bytes, a.bytes);
    return p;
  }
  if (a.bytes <= kLLMaxBytes && direct) {
    p.kind = kWireLL | a.active;
    p.nslots = 1;
    return p;
  }
  if (a.bytes <= s.cfg.eager_max) {
    if (a.bytes <= kInlineBytes || take_eager_credit(b, s, a.pe)) {
      p.kind = kWireEager | a.active;
      p.nslots = 1 + wire::cont_slots(s.cfg.slot_bytes, a.bytes);
      return p;
    }
    p.degraded = 1;
  }
  p.kind = b.in_heap(a.buf, a.bytes) ? kWireRtsGet : kWireRtsStaged;
  p.nslots = 1;
  return p;
}

// Whether tickets t .. t+n-1 have free slots at `pe` (acquire: the receiver's reads of the
// slots' previous messages happen before our writes).
template <class B>
GPUCOMM_MSG_FN bool slots_free(const B& b, const StateView& s, int32_t pe, uint64_t t, uint32_t n) {
  const auto freed = static_cast<uint32_t>(b.ld_sys(&s.credits[pe], Ord::acquire));
  return static_cast<uint32_t>(t + n - freed) <= s.cfg.slots;
}

// Copies `bytes` of `src` into the ring that this PE owns at `pe`, starting at byte `at` of the
// message's payload area (header slot payload, then the continuation slots, wrapping around the
// ring). `peer_ring` is the ring's address for direct stores, or null (puts through the proxy).
template <class B, class C>
GPUCOMM_MSG_FN void ring_write_payload(const B& b, C c, const StateView& s, int32_t pe, uint64_t t, const void* src,
                                       uint64_t bytes, char* peer_ring) {
  const uint32_t sb = s.cfg.slot_bytes;
  const uint64_t ring_bytes = static_cast<uint64_t>(s.cfg.slots) * sb;
  char* sym_ring = ring_slot(s, s.cfg.rank, 0);
  const char* from = static_cast<const char*>(src);
  // Segment 1: the header slot's payload area.
  const uint64_t first = min_of<uint64_t>(bytes, sb - kHeaderBytes);
  const uint64_t slot0 = (t & (s.cfg.slots - 1)) * sb;
  uint64_t done = 0;
  auto write = [&](uint64_t ring_at, uint64_t n) {
    if (n == 0) return;
    if (peer_ring) {
      b.copy(c, peer_ring + ring_at, from + done, n);
    } else {
      b.put(c, sym_ring + ring_at, from + done, n, pe);
    }
    done += n;
  };
  write(slot0 + kHeaderBytes, first);
  // Continuation slots: contiguous up to the ring's end, then from its start.
  const uint64_t rest = bytes - first;
  if (rest == 0) return;
  const uint64_t cont = ((t + 1) & (s.cfg.slots - 1)) * sb;
  const uint64_t to_end = min_of<uint64_t>(rest, ring_bytes - cont);
  write(cont, to_end);
  write(0, rest - to_end);
}

// This PE's ring at `pe` as a direct address (plain stores), or null when a proxy serves `pe`.
template <class B>
GPUCOMM_MSG_FN char* peer_ring(const B& b, const StateView& s, int32_t pe) {
  return b.peer(ring_slot(s, s.cfg.rank, 0), pe);
}

// Writes an LL message (its slot's credit is free) into `ring` (peer_ring): inline, since it is the
// fast path of every small send; each word carries the stamp, so no fence and no order among the
// stores (docs/MESSAGING.md).
template <class B, class C>
GPUCOMM_MSG_FN void write_ll(const B& b, C c, const StateView& s, uint64_t t, const wire::Header& h,
                             const void* payload, char* ring) {
  auto* w = reinterpret_cast<uint64_t*>(ring + (t & (s.cfg.slots - 1)) * s.cfg.slot_bytes);
  const uint32_t nw = wire::ll_word_count(h.bytes);
  for (uint32_t i = b.group_rank(c); i < nw; i += b.group_size(c))
    b.st_sys(&w[i], wire::ll_encode(t, h, static_cast<const uint8_t*>(payload), i), Ord::relaxed);
}

// Writes the message's slots at tickets t.. (their credits are free). `ring` is peer_ring(pe)
// (null: through the proxy); `hdr_stage` is global memory for the header words when they go
// through the proxy (the request's hdr[]).
template <class B, class C>
GPUCOMM_MSG_OUTLINE void write_message(const B& b, C c, const StateView& s, uint64_t t, const wire::Header& h,
                                       const void* payload, uint64_t* hdr_stage, int32_t pe, char* ring) {
  char* sym_slot = ring_slot(s, s.cfg.rank, t);
  char* peer_slot = ring ? ring + (t & (s.cfg.slots - 1)) * s.cfg.slot_bytes : nullptr;
  if ((h.kind & kWireKindMask) == kWireLL) {
    write_ll(b, c, s, t, h, payload, ring);
    return;
  }
  const bool has_payload = (h.kind & kWireKindMask) == kWireEager;
  const uint64_t w0 = wire::full_w0(t, h.kind, h.ncont, h.mode);
  if (peer_slot) {
    // Header words and payload with plain stores, the group's publish, then the stamp word last.
    if (b.leader(c)) {
      uint64_t w[8];
      wire::full_encode(h, w);
      auto* dst = reinterpret_cast<uint64_t*>(peer_slot);
      for (int i = 1; i < 8; ++i) b.st_sys(&dst[i], w[i], Ord::relaxed);
    }
    if (has_payload) ring_write_payload(b, c, s, pe, t, payload, h.bytes, ring);
    b.publish_to(c, pe);
    if (b.leader(c)) b.st_to(pe, reinterpret_cast<uint64_t*>(peer_slot), w0, Ord::release);
    b.sync(c);
    return;
  }
  // Through the proxy: the header words from global memory, the payload, then the stamp word as a
  // signal that the agent orders after the data.
  if (b.leader(c)) wire::full_encode(h, hdr_stage);
  b.publish_local(c);
  b.put(c, sym_slot + 8, hdr_stage + 1, 7 * sizeof(uint64_t), pe);
  if (has_payload) ring_write_payload(b, c, s, pe, t, payload, h.bytes, nullptr);
  if (b.leader(c)) b.signal_set(reinterpret_cast<uint64_t*>(sym_slot), w0, pe);
  b.sync(c);
}

GPUCOMM_MSG_FN wire::Header header_of(const SendArgs& a, const SendPlan& p, uint32_t sreq, uint64_t offset) {
  wire::Header h{};
  h.kind = p.kind;
  h.ncont = p.nslots - 1;
  h.ctx = a.ctx;
  h.src = a.src;
  h.tag = a.tag;
  h.bytes = a.bytes;
  h.sreq = sreq;
  h.offset = offset;
  h.mode = a.mode;
  return h;
}

// Leader: fills a send request.
GPUCOMM_MSG_FN void fill_send(Req& q, const SendArgs& a, const SendPlan& p, uint64_t t) {
  q.state = kReqFree;
  q.flags = kReqIsSend | (a.event ? kReqHasEvent : 0u);
  q.moved = 0;
  q.ctx = a.ctx;
  q.pe = a.pe;
  q.rank = a.rank;
  q.tag = a.tag;
  q.src = a.src;
  q.kind = p.kind;
  q.buf = const_cast<char*>(static_cast<const char*>(a.buf));
  q.bytes = a.bytes;
  q.ticket = t;
  q.nslots = p.nslots;
  q.event = a.event;
  q.mode = a.mode;
  q.stamp = 0;
}

GPUCOMM_MSG_FN Status send_status(const Req& q) {
  return Status{q.rank, q.tag, q.bytes, kErrNone, 0};
}

// Completes a send request the holder advances: its event, then its completion record.
template <class B>
GPUCOMM_MSG_FN void complete_send(const B& b, const StateView& s, uint32_t id) {
  Req& q = s.reqs[id];
  q.state = kReqDone;
  if (q.event) b.fadd(q.event, 1, Ord::release);
  Completion cp{};
  cp.kind = kCompDone;
  cp.st = send_status(q);
  cp.ctx = q.ctx;
  if (b.is_own(id, q.stamp)) {
    b.own_done(cp);
  } else {
    comp_write(b, s, id, q.stamp, cp);
  }
}

// Writes a send request's slots (credits are free) and moves it to its next state. Returns true
// when the send is complete (eager): `holder` completes it with its record, otherwise the caller
// gives the slot back itself.
template <class B, class C>
GPUCOMM_MSG_FN bool send_write(const B& b, C c, const StateView& s, uint32_t id, bool holder) {
  Req& q = s.reqs[id];
  SendArgs a{q.buf, q.bytes, q.pe, q.rank, q.tag, q.ctx, q.src, q.kind & kWireActive, q.event, q.mode};
  SendPlan p{q.kind, q.nslots, 0, 0};
  const uint32_t kind = q.kind & kWireKindMask;
  const uint64_t offset = kind == kWireRtsGet ? b.heap_offset(q.buf) : 0;
  write_message(b, c, s, q.ticket, header_of(a, p, id, offset), q.buf, q.hdr, q.pe,
                b.bcast(c, b.leader(c) ? peer_ring(b, s, q.pe) : nullptr));
  bool finished = false;
  if (b.leader(c)) {
    if (kind == kWireRtsGet) {
      q.state = kReqSendWaitFin;
    } else if (kind == kWireRtsStaged) {
      q.state = kReqSendWaitCts;
    } else {
      finished = true;
      if (holder) complete_send(b, s, id);
    }
  }
  return b.bcast(c, finished);
}

// Result of send_start: the request (Request::kDone when the send completed at once).
struct Started {
  uint32_t id;     // Request::id (kDone, kProcNull, or slot + 1 with its flags)
  uint32_t stamp;  // Request::stamp
  uint32_t error;  // DiagKind::resource when the request table is full
};
// Request::id flag: a rendezvous send its owner completes by seeing FIN in its own request word.
inline constexpr uint32_t kIdFin = uint32_t(1) << 16;
GPUCOMM_MSG_FN uint32_t id_slot(uint32_t id) {
  return (id & 0xffffu) - 1;
}

// Waits (the calling group) until tickets t .. t+n-1 have free slots at `pe`, progressing this PE
// meanwhile (a PE that sends to itself drains its own ring). False when the wait timed out or the
// job failed (the caller reports it).
template <class B, class C>
GPUCOMM_MSG_FN bool wait_credits(const B& b, C c, const StateView& s, int32_t pe, uint64_t t, uint32_t n);

// Starts a send (any thread group of the PE). `blocking`: the caller waits for credits itself when
// the ring is full (a blocking send needs no request for an eager message).
template <class B, class C>
GPUCOMM_MSG_OUTLINE Started send_start(const B& b, C c, const StateView& s, const SendArgs& a, bool blocking) {
  struct Decision {
    SendPlan p;
    uint64_t t;
    int32_t id;    // the request, -2 when none is needed, -1 when the table is full
    uint32_t now;  // slots free now
    char* ring;    // peer_ring(a.pe)
  } d{};
  if (b.leader(c)) {
    d.ring = peer_ring(b, s, a.pe);
    d.p = plan_send(b, s, a, d.ring != nullptr);
    const uint32_t kind = d.p.kind & kWireKindMask;
    const bool rdv = kind == kWireRtsGet || kind == kWireRtsStaged;
    // A request holds the rendezvous state and the header words a proxy reads: take it before the
    // tickets, so that a full table leaves the ring untouched.
    d.id = rdv || d.ring == nullptr ? slot_take(b, s, b.slot_hint()) : -2;
    if (d.id == -1) {
      if (needs_eager_credit(d.p.kind, a.bytes)) b.fadd(&s.peers[a.pe].eager_used, ~uint64_t(0), Ord::relaxed);
    } else {
      d.t = b.fadd(&s.peers[a.pe].next_ticket, d.p.nslots, Ord::relaxed);
      d.now = slots_free(b, s, a.pe, d.t, d.p.nslots) ? 1u : 0u;
      // No credit and not blocking: the holder writes the slots later, from a request. A full
      // table now is fatal (the tickets are taken and the receiver waits for them in order).
      if (!d.now && !blocking && d.id == -2) d.id = slot_take(b, s, b.slot_hint());
      if (d.id >= 0) {
        fill_send(s.reqs[d.id], a, d.p, d.t);
        reset_req_words(b, s, static_cast<uint32_t>(d.id));
      }
      count(b, s, a.ctx, &Counters::sent, 1);
      if (!d.now) count(b, s, a.ctx, &Counters::credit_stalls, 1);
      if (rdv) count(b, s, a.ctx, &Counters::rendezvous, 1);
      if (d.p.degraded) count(b, s, a.ctx, &Counters::degraded, 1);
    }
  }
  d = b.bcast(c, d);
  if (d.id == -1) return Started{0, 0, static_cast<uint32_t>(DiagKind::resource)};
  if (!d.now && blocking) {
    if (!wait_credits(b, c, s, a.pe, d.t, d.p.nslots)) return Started{0, 0, static_cast<uint32_t>(DiagKind::timeout)};
    d.now = 1;
  }
  if (d.id == -2) {
    if ((d.p.kind & kWireKindMask) == kWireLL) {
      write_ll(b, c, s, d.t, header_of(a, d.p, 0, 0), a.buf, d.ring);
    } else {
      write_message(b, c, s, d.t, header_of(a, d.p, 0, 0), a.buf, nullptr, a.pe, d.ring);
    }
    if (b.leader(c) && a.event) b.fadd(a.event, 1, Ord::release);
    return Started{Request::kDone, 0, 0};
  }
  const auto id = static_cast<uint32_t>(d.id);
  if (d.now && send_write(b, c, s, id, false)) {
    if (b.leader(c)) {
      if (a.event) b.fadd(a.event, 1, Ord::release);
      slot_give(b, s, id);
    }
    b.sync(c);
    return Started{Request::kDone, 0, 0};
  }
  // A rendezvous by get with its header written and no event: the owner waits for FIN itself.
  Started r{id + 1, 0, 0};
  if (d.now && (d.p.kind & kWireKindMask) == kWireRtsGet && !a.event) {
    r.id |= kIdFin;
    b.sync(c);
    return r;
  }
  // The holder advances it (slots without credit, staged transfers, events).
  if (b.leader(c)) {
    if (!d.now) s.reqs[id].state = kReqSendPending;
    b.release_fence_local();  // the request's fields before its post's stamps
    Post p{};
    p.kind = kPostSend;
    p.slot = id;
    p.ctx = a.ctx;
    r.stamp = request_stamp_ring(post_ring(b, s, p, true));  // the post carries the stamp to the holder
  }
  return b.bcast(c, r);
}

}  // namespace gpucomm::msg::proto
