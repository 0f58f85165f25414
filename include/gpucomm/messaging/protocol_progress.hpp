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
    b.publish(c);  // the chunk is visible before the receiver learns of it
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

// Receive by get: one chunk per call; FIN to the sender after the last.
template <class B, class C>
GPUCOMM_MSG_FN bool advance_recv_get(const B& b, C c, const StateView& s, CommState& cm, uint32_t id) {
  Req& q = s.reqs[id];
  const uint64_t want = q.status.bytes;
  if (q.moved < want) {
    const uint64_t n = min_of<uint64_t>(s.cfg.chunk_bytes, want - q.moved);
    b.get(c, q.buf + q.moved, b.heap_base() + q.offset + q.moved, n, q.pe);
    b.sync(c);
    if (b.leader(c)) q.moved += n;
    b.sync(c);
  }
  if (q.moved < want) return false;
  b.publish(c);  // the data was read before the sender may reuse its buffer
  if (b.leader(c)) {
    remote_set(b, &s.req_words[size_t{2} * q.peer_req], kFin, q.pe);
    b.fadd(&cm.counters.received, 1, Ord::relaxed);
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
    b.publish(c);  // the chunk was read before the sender refills it
    if (b.leader(c)) {
      q.moved = k + 1;
      remote_set(b, &s.req_words[size_t{2} * q.peer_req + 1], k + 1, q.pe);
    }
    b.sync(c);
  }
  if (q.moved < nchunks) return false;
  if (b.leader(c)) {
    b.fadd(&cm.counters.received, 1, Ord::relaxed);
    complete(b, q, q.status);
  }
  return true;
}

template <class B, class C>
GPUCOMM_MSG_FN bool advance(const B& b, C c, const StateView& s, uint32_t id) {
  Req& q = s.reqs[id];
  if (q.flags & kReqIsSend) return advance_send(b, c, s, id);
  CommState* cm = comm_of(s, q.ctx);
  if (q.state == kReqRecvGet) return advance_recv_get(b, c, s, *cm, id);
  if (q.state == kReqRecvStaged) return advance_recv_staged(b, c, s, *cm, id);
  return q.state == kReqDone;
}

// Every active request once; finished ones leave the list.
template <class B, class C>
GPUCOMM_MSG_FN bool advance_active(const B& b, C c, const StateView& s) {
  bool any = false;
  for (uint32_t i = 0;;) {
    const int32_t id = b.bcast(c, b.leader(c) ? (i < s.ctl->active_n ? static_cast<int32_t>(s.active[i]) : -1) : 0);
    if (id < 0) break;
    if (advance(b, c, s, static_cast<uint32_t>(id))) {
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
    struct {
      int32_t id;
      uint32_t room;
    } n{-1, 0};
    if (b.leader(c)) {
      n.id = submission_peek(b, s);
      if (n.id >= 0) {
        const Req& q = s.reqs[n.id];
        const CommState* cm = (q.flags & kReqIsRecv) ? comm_of(s, q.ctx) : nullptr;
        n.room = !cm || cm->prq_n < cm->cap ? 1u : 0u;
        if (n.room) submission_pop(s);
      }
    }
    n = b.bcast(c, n);
    if (n.id < 0 || !n.room) break;
    any = true;
    const auto id = static_cast<uint32_t>(n.id);
    Req& q = s.reqs[id];
    if (q.flags & kReqIsSend) {
      if (b.leader(c)) active_add(s, id);
      b.sync(c);
      continue;
    }
    CommState& cm = s.comms[q.ctx];
    const matching::Envelope env{q.ctx, q.rank, q.tag, id};
    const uint64_t t0 = b.now_ns();
    const int32_t u = b.match_receive(c, cm, env);
    if (b.leader(c)) {
      b.fadd(&cm.counters.matches, 1, Ord::relaxed);
      b.fadd(&cm.counters.match_ns, b.now_ns() - t0, Ord::relaxed);
    }
    if (u >= 0) deliver_unexpected(b, c, s, cm, id, static_cast<uint32_t>(u));
    b.sync(c);
  }
  return any;
}

// One progress round by the group that holds the lock.
template <class B, class C>
GPUCOMM_MSG_OUTLINE bool round(const B& b, C c, const StateView& s) {
  bool any = take_submissions(b, c, s);
  any = advance_active(b, c, s) || any;
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
