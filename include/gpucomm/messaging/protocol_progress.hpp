#pragma once
// The messaging protocol, part 4: progress and completion (docs/MESSAGING.md, "Progress"). One
// group at a time progresses a PE (the backend's try-lock). A round takes the new submissions
// (receives in post order: matched against the UMQ), advances the active requests (pending slot
// writes, FIN and CTS, rendezvous chunks), and drains every sender's ring.
#include <cstdint>

#include "gpucomm/messaging/protocol_recv.hpp"
#include "gpucomm/messaging/protocol_send.hpp"

namespace gpucomm::msg::proto {

GPUCOMM_MSG_FN uint64_t chunks_of(const StateView& s, uint64_t bytes) {
  return (bytes + s.cfg.chunk_bytes - 1) / s.cfg.chunk_bytes;
}

// Staged send: fills chunks of its staging pair while the receiver has acknowledged all but one,
// announcing each in the receive request's `count` word; completes with the last acknowledgement.
template <class B, class C>
GPUCOMM_MSG_FN bool advance_staged_send(const B& b, C c, const StateView& s, uint32_t id) {
  Req& q = s.reqs[id];
  const uint64_t nchunks = chunks_of(s, q.bytes);
  const uint64_t chunk = s.cfg.chunk_bytes;
  for (;;) {
    struct {
      uint64_t acked;
      uint32_t fill;
    } st{};
    if (b.leader(c)) {
      st.acked = b.ld_sys(&s.req_words[size_t{2} * id + 1], Ord::acquire);
      st.fill = q.moved < nchunks && q.moved - st.acked < 2 ? 1u : 0u;
    }
    st = b.bcast(c, st);
    if (st.acked >= nchunks) {
      if (b.leader(c)) {
        s.ctl->staging_used &= ~(uint64_t(1) << q.pair);
        complete(b, q, send_status(q));
      }
      return true;
    }
    if (!st.fill) return false;
    const uint64_t k = q.moved;
    const uint64_t off = k * chunk;
    char* dst = s.staging + (static_cast<uint64_t>(q.pair) * 2 + (k & 1)) * chunk;
    b.copy(c, dst, q.buf + off, min_of<uint64_t>(chunk, q.bytes - off));
    b.publish_to(c, q.pe);  // the chunk is visible before the receiver learns of it
    if (b.leader(c)) {
      q.moved = k + 1;
      remote_set(b, &s.req_words[size_t{2} * q.peer_req + 1], ((k + 1) << 32) | q.pair, q.pe);
    }
    b.sync(c);
  }
}

// Advances send request `id`. True when it completed.
template <class B, class C>
GPUCOMM_MSG_FN bool advance_send(const B& b, C c, const StateView& s, uint32_t id) {
  Req& q = s.reqs[id];
  // The leader's view of the state: it changes the state below, possibly before another thread
  // of the group read it (and a group must take the same branch to reach the same collectives).
  uint32_t state = b.bcast(c, q.state);
  if (state == kReqSendPending) {
    if (!b.bcast(c, b.leader(c) && slots_free(b, s, q.pe, q.ticket, q.nslots))) return false;
    if (send_write(b, c, s, id)) return true;
    state = b.bcast(c, q.state);
  }
  if (state == kReqSendWaitFin) {
    bool fin = false;
    if (b.leader(c) && (b.ld_sys(&s.req_words[size_t{2} * id], Ord::acquire) & kFin)) {
      complete(b, q, send_status(q));
      fin = true;
    }
    return b.bcast(c, fin);
  }
  if (state == kReqSendWaitCts) {
    bool go = false;
    if (b.leader(c)) {
      const uint64_t v = b.ld_sys(&s.req_words[size_t{2} * id], Ord::acquire);
      const uint64_t free =
          ~s.ctl->staging_used & (s.cfg.staging_pairs >= 64 ? ~uint64_t(0) : (uint64_t(1) << s.cfg.staging_pairs) - 1);
      if ((v & kCts) && free) {
        q.pair = lowest_bit(free);
        s.ctl->staging_used |= uint64_t(1) << q.pair;
        q.peer_req = static_cast<uint32_t>(v & 0xffffffffu);
        q.moved = 0;
        q.state = kReqSendStaging;
        go = true;
      }
    }
    if (!b.bcast(c, go)) return false;
    state = kReqSendStaging;
  }
  if (state == kReqSendStaging) return advance_staged_send(b, c, s, id);
  return false;
}

// Receive by get: one chunk per call, or everything when the caller waits for this very request
// (`whole`: the owner moves its own data with its own group, like a put of the same bytes); FIN
// to the sender after the last byte.
template <class B, class C>
GPUCOMM_MSG_FN bool advance_recv_get(const B& b, C c, const StateView& s, CommState& cm, uint32_t id, bool whole) {
  Req& q = s.reqs[id];
  const uint64_t want = q.status.bytes;
  if (q.moved < want) {
    const uint64_t n = whole ? want - q.moved : min_of<uint64_t>(s.cfg.chunk_bytes, want - q.moved);
    b.get(c, q.buf + q.moved, b.heap_base() + q.offset + q.moved, n, q.pe);
    b.sync(c);
    if (b.leader(c)) q.moved += n;
    b.sync(c);
  }
  if (q.moved < want) return false;
  b.publish_to(c, q.pe);  // the data was read before the sender may reuse its buffer
  if (b.leader(c)) {
    remote_set(b, &s.req_words[size_t{2} * q.peer_req], kFin, q.pe);
    b.count(&cm.counters.received, 1);
    complete(b, q, q.status);
  }
  return true;
}

// Receive through the sender's staging pair: fetches every announced chunk, acknowledging each.
template <class B, class C>
GPUCOMM_MSG_FN bool advance_recv_staged(const B& b, C c, const StateView& s, CommState& cm, uint32_t id) {
  Req& q = s.reqs[id];
  const uint64_t nchunks = chunks_of(s, q.total);
  const uint64_t chunk = s.cfg.chunk_bytes;
  const uint64_t v = b.bcast(c, b.leader(c) ? b.ld_sys(&s.req_words[size_t{2} * id + 1], Ord::acquire) : uint64_t{0});
  const uint64_t ready = v >> 32;
  const auto pair = static_cast<uint32_t>(v & 0xffffffffu);
  while (q.moved < ready) {
    const uint64_t k = q.moved;
    const uint64_t off = k * chunk;
    if (off < q.bytes) {
      const uint64_t n = min_of<uint64_t>(min_of<uint64_t>(chunk, q.total - off), q.bytes - off);
      b.get(c, q.buf + off, s.staging + (static_cast<uint64_t>(pair) * 2 + (k & 1)) * chunk, n, q.pe);
    }
    b.publish_to(c, q.pe);  // the chunk was read before the sender refills it
    if (b.leader(c)) {
      q.moved = k + 1;
      remote_set(b, &s.req_words[size_t{2} * q.peer_req + 1], k + 1, q.pe);
    }
    b.sync(c);
  }
  if (q.moved < nchunks) return false;
  if (b.leader(c)) {
    b.count(&cm.counters.received, 1);
    complete(b, q, q.status);
  }
  return true;
}

// Advances request `id`; `own` is the request the calling group waits for (or -1).
template <class B, class C>
GPUCOMM_MSG_FN bool advance(const B& b, C c, const StateView& s, uint32_t id, int32_t own) {
  Req& q = s.reqs[id];
  if (q.flags & kReqIsSend) return advance_send(b, c, s, id);
  CommState* cm = comm_of(s, q.ctx);
  if (q.state == kReqRecvGet) return advance_recv_get(b, c, s, *cm, id, static_cast<int32_t>(id) == own);
  if (q.state == kReqRecvStaged) return advance_recv_staged(b, c, s, *cm, id);
  return q.state == kReqDone;
}

// Every active request once; finished ones leave the list.
template <class B, class C>
GPUCOMM_MSG_FN bool advance_active(const B& b, C c, const StateView& s, int32_t own) {
  bool any = false;
  for (uint32_t i = 0;;) {
    const int32_t id = b.bcast(c, b.leader(c) ? (i < s.ctl->active_n ? static_cast<int32_t>(s.active[i]) : -1) : 0);
    if (id < 0) break;
    if (advance(b, c, s, static_cast<uint32_t>(id), own)) {
      if (b.leader(c)) s.active[i] = s.active[--s.ctl->active_n];
      any = true;
    } else {
      ++i;
    }
    b.sync(c);
  }
  return any;
}

// Takes the submitted requests in ticket order: receives are matched against the UMQ (or join
// the PRQ), sends join the active list. Stops at a receive whose PRQ is full.
template <class B, class C>
GPUCOMM_MSG_FN bool take_submissions(const B& b, C c, const StateView& s) {
  bool any = false;
  for (;;) {
    // What the group needs of the submission, from the leader's registers: reading the entry's
    // fields back would cost a trip to L2 each (stores do not fill the L1 cache).
    struct {
      int32_t id;
      uint32_t room;
      uint32_t kind;
      int32_t ctx, rank, tag;
    } n{-1, 0, 0, 0, 0, 0};
    if (b.leader(c)) {
      Submission e{};
      if (submission_peek(b, s, e)) {
        n.id = static_cast<int32_t>(e.id);
        n.kind = e.kind;
        n.ctx = e.ctx;
        n.rank = e.rank;
        n.tag = e.tag;
        const CommState* cm = e.kind == kSubmitRecv ? comm_of(s, e.ctx) : nullptr;
        n.room = !cm || cm->prq_n < cm->cap ? 1u : 0u;
        if (n.room) {
          submission_pop(s);
          if (e.kind == kSubmitRecv) {
            // The holder writes a receive's entry (the poster only submitted it).
            Req& q = s.reqs[e.id];
            q.flags = kReqIsRecv;
            q.state = kReqRecvPosted;
            q.ctx = e.ctx;
            q.pe = -1;
            q.rank = e.rank;
            q.tag = e.tag;
            q.buf = e.buf;
            q.bytes = e.bytes;
            q.event = e.event;
            q.moved = 0;
          }
        }
      }
    }
    n = b.bcast(c, n);
    if (n.id < 0 || !n.room) break;
    any = true;
    const auto id = static_cast<uint32_t>(n.id);
    if (n.kind == kSubmitSend) {
      if (b.leader(c)) active_add(s, id);
      b.sync(c);
      continue;
    }
    CommState& cm = s.comms[n.ctx];
    const matching::Envelope env{n.ctx, n.rank, n.tag, id};
    const int32_t u = counted_match(b, c, cm, [&] { return b.match_receive(c, cm, env); });
    if (u >= 0) deliver_unexpected(b, c, s, cm, id, static_cast<uint32_t>(u));
    b.sync(c);
  }
  return any;
}

// Whether a round would find work: a submission waits, a request is active, some sender's next
// slot arrived, or credits are owed to a sender (idle rounds return them). Relaxed polls only (no
// fence), so the holder's L1 copies of the tables survive an idle spin; the group's threads split
// the senders.
template <class B, class C>
GPUCOMM_MSG_FN bool work_pending(const B& b, C c, const StateView& s) {
  bool w = false;
  if (b.leader(c)) w = s.ctl->active_n != 0 || submission_waiting(b, s);
  for (auto pe = static_cast<int32_t>(b.group_rank(c)); pe < s.cfg.npes && !w;
       pe += static_cast<int32_t>(b.group_size(c))) {
    const PeerState& p = s.peers[pe];
    const uint64_t t = p.drained;
    w = credit_word(p) != p.returned ||
        wire::arrived(b.ld_sys(reinterpret_cast<const uint64_t*>(ring_slot(s, pe, t)), Ord::relaxed), t) != 0;
  }
  return b.any(c, w);
}

// One progress round by the group that holds the lock; `own` is the request it waits for (or -1).
template <class B, class C>
GPUCOMM_MSG_OUTLINE bool round(const B& b, C c, const StateView& s, int32_t own = -1) {
  bool any = take_submissions(b, c, s);
  any = advance_active(b, c, s, own) || any;
  for (int32_t pe = 0; pe < s.cfg.npes; ++pe) any = drain_peer(b, c, s, pe) || any;
  return any;
}

// Progresses the PE if no other group does; returns whether this group ran a round.
template <class B, class C>
GPUCOMM_MSG_FN bool progress(const B& b, C c, const StateView& s) {
  if (!b.bcast(c, b.leader(c) && b.try_lock())) return false;
  round(b, c, s);
  b.publish_local(c);  // the round's writes happen before the next holder's
  if (b.leader(c)) b.unlock();
  b.sync(c);
  return true;
}

}  // namespace gpucomm::msg::proto
