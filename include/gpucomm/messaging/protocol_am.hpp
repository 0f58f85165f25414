#pragma once
// The messaging protocol, part 6: active messages (docs/MESSAGING.md, "Active messages").
//
// An active message travels like an eager message with kWireActive set; its tag is the handler id
// and the flags kAmWantsReply / kAmReply. The receiver parks it in its sender's share of the AM
// table (park_am, protocol_recv.hpp) instead of matching it. Flow control keeps the ring flowing:
//   requests   the sender takes one of Q request credits at the receiver first (PeerState::am_sent
//              against the receiver's am_credits word here, which the receiver's pollers raise by
//              one, a posted remote add, each time a handler finished with a request);
//   replies    a request that wants a reply also reserves one of Q reply entries at its sender for
//              the receiver (PeerState::am_reserved, freed when the reply's handler finished), so a
//              handler's am_reply never waits for table space, only for ring slots.
// A poll takes up to kAmTakeMax parked messages (no lock: a compare-and-swap of the FIFO's head)
// and runs the handler on each, then frees the entry and returns its credit.
#include <cstdint>

#include "gpucomm/messaging/protocol_complete.hpp"

namespace gpucomm::msg::proto {

inline constexpr uint32_t kAmTakeMax = 8;

// Parked active messages taken by one poll (entry indices, arrival order).
struct AmTaken {
  uint32_t n;
  uint32_t idx[kAmTakeMax];
};

GPUCOMM_MSG_FN uint64_t am_entries(const Config& c) {
  return static_cast<uint64_t>(c.npes) * 2 * c.am_per_sender;
}

// Runs a progress round if progress can be taken, then takes up to `max` parked active messages.
// Taking needs no progress: the holder publishes each parked entry with a release store of
// am_tail, pollers take entries with a compare-and-swap of am_head.
template <class B, class C>
GPUCOMM_MSG_OUTLINE AmTaken am_take(const B& b, C c, const StateView& s, uint32_t max, bool steal = false) {
  (void)progress(b, c, s, steal);
  AmTaken t{};
  if (b.leader(c)) {
    const uint32_t want = min_of(max, kAmTakeMax);
    Control& ctl = *s.ctl;
    uint64_t head = b.ld(&ctl.am_head, Ord::relaxed);
    while (t.n < want) {
      const uint64_t tail = b.ld(&ctl.am_tail, Ord::acquire);
      if (head == tail) break;
      if (b.cas(&ctl.am_head, head, head + 1, Ord::relaxed)) {
        t.idx[t.n++] = s.am_fifo[head % am_entries(s.cfg)];
        head += 1;
      }
    }
  }
  return b.bcast(c, t);
}

// The parked message `idx`: its header, and its payload right after it.
GPUCOMM_MSG_FN AmEntry& am_entry(const StateView& s, uint32_t idx) {
  return *reinterpret_cast<AmEntry*>(s.am + static_cast<uint64_t>(idx) * am_entry_bytes(s.cfg));
}
GPUCOMM_MSG_FN AmMessage am_message(const StateView& s, uint32_t idx) {
  const AmEntry& e = am_entry(s, idx);
  return AmMessage{e.source, e.id, e.ctx, e.flags, reinterpret_cast<const char*>(&e) + sizeof(AmEntry),
                   e.bytes,  idx,  0};
}

// After the handler ran (leader): a request whose handler owed a reply and gave none is a bad
// argument (its sender's reserved space would never come back); otherwise counts it, frees the
// entry (release: the handler's reads of the payload happen before it is reused) and returns the
// credit: a request's to its sender (a posted remote add), a reply's reservation to this PE.
template <class B>
GPUCOMM_MSG_FN bool am_release(const B& b, const StateView& s, uint32_t idx) {
  AmEntry& e = am_entry(s, idx);
  if ((e.flags & kAmWantsReply) && !e.replied) return false;
  const uint32_t q = s.cfg.am_per_sender;
  const uint32_t slot = idx % (2 * q);
  const bool reply = slot >= q;
  const int32_t pe = e.pe;
  count(b, s, e.ctx, &Counters::active, 1);
  b.fand(&s.am_bits[pe], ~(uint64_t(1) << (reply ? 32 + (slot - q) : slot)), Ord::release);
  if (reply) {
    b.fadd(&s.peers[pe].am_reserved_freed, 1, Ord::relaxed);
  } else {
    b.publish_remote_add(&s.am_credits[s.cfg.rank], 1, pe);
  }
  return true;
}

// Whether handler id `id` was registered (Messenger::register_am).
template <class B>
GPUCOMM_MSG_FN bool am_registered(const B& b, const StateView& s, uint32_t id) {
  return id < kMaxAmHandlers && ((b.ld(&s.ctl->am_valid, Ord::relaxed) >> id) & 1u) != 0;
}

// Leader: takes a request credit at `pe` (and, for a request that wants a reply, a reply
// reservation for `pe` here). False when none is free now (the caller progresses and retries).
template <class B>
GPUCOMM_MSG_FN bool am_take_credit(const B& b, const StateView& s, int32_t pe, bool wants_reply) {
  PeerState& p = s.peers[pe];
  const uint32_t q = s.cfg.am_per_sender;
  if (wants_reply) {
    uint64_t r = b.ld(&p.am_reserved, Ord::relaxed);
    for (;;) {
      if (r - b.ld(&p.am_reserved_freed, Ord::relaxed) >= q) return false;
      if (b.cas(&p.am_reserved, r, r + 1, Ord::relaxed)) break;
    }
  }
  uint64_t sent = b.ld(&p.am_sent, Ord::relaxed);
  for (;;) {
    // Acquire: the receiver's handler was done with the entry before its credit came back.
    if (sent - b.ld_sys(&s.am_credits[pe], Ord::acquire) >= q) {
      if (wants_reply) b.fadd(&p.am_reserved, ~uint64_t(0), Ord::relaxed);  // give the reservation back
      return false;
    }
    if (b.cas(&p.am_sent, sent, sent + 1, Ord::relaxed)) return true;
  }
}

}  // namespace gpucomm::msg::proto
