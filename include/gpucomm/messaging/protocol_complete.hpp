#pragma once
// The messaging protocol, part 5: what callers post and wait on (docs/MESSAGING.md, "Posting
// receives", "Waiting", "Error model"): receives, test and wait with their timeout diagnostics,
// probes, matched probes (mprobe/mrecv) and cancel. Calls run with one thread or one warp (the
// device API runs a block's call on its warp 0 and joins the block once, at the end).
#include <cstdint>

#include "gpucomm/messaging/protocol_progress.hpp"

namespace gpucomm::msg::proto {

struct RecvArgs {
  void* buf;
  uint64_t bytes;  // buffer size
  int32_t src;     // rank, kAnySource
  int32_t tag;     // tag, kAnyTag
  int32_t ctx;
  uint32_t mode;
  uint64_t* event;
};

GPUCOMM_MSG_FN Post recv_post(const RecvArgs& a, uint32_t slot) {
  Post p{};
  p.kind = kPostRecv;
  p.mode = a.mode;
  p.slot = slot;
  p.ctx = a.ctx;
  p.src = a.src;
  p.tag = a.tag;
  p.buf = static_cast<char*>(a.buf);
  p.bytes = a.bytes;
  p.event = a.event;
  return p;
}

// Leader: ends the job with DiagKind::resource naming the request table's size.
template <class B>
GPUCOMM_MSG_OUTLINE void request_table_full(const B& b, const StateView& s, DiagOp op, int32_t ctx) {
  Diag d{};
  d.kind = DiagKind::resource;
  d.op = op;
  d.arg = static_cast<uint32_t>(DiagArg::request);
  d.ctx = ctx;
  d.peer = -1;
  d.limit = s.cfg.requests;
  b.fail(d);
}

// A post through the ring with a request slot of its own (leader): the request, or an error.
template <class B>
GPUCOMM_MSG_FN Started post_with_slot(const B& b, const StateView& s, Post p) {
  const int32_t slot = slot_take(b, s, b.slot_hint());
  if (slot < 0) return Started{0, 0, static_cast<uint32_t>(DiagKind::resource)};
  p.slot = static_cast<uint32_t>(slot);
  const uint32_t t = post_ring(b, s, p, true);
  return Started{static_cast<uint32_t>(slot) + 1, request_stamp_ring(t), 0};
}

// Posts a receive (any group; the backend's fast path when it has one). kProcNull sources
// complete at once.
template <class B, class C>
GPUCOMM_MSG_OUTLINE Started recv_start(const B& b, C c, const StateView& s, const RecvArgs& a) {
  if (a.src == kProcNull) {
    if (b.leader(c) && a.event) b.fadd(a.event, 1, Ord::release);
    return Started{Request::kProcNull, 0, 0};
  }
  Started r{};
  if (b.fast_post(c, recv_post(a, 0), r)) return r;
  if (b.leader(c)) r = post_with_slot(b, s, recv_post(a, 0));
  return b.bcast(c, r);
}

GPUCOMM_MSG_FN Status proc_null_status() {
  return Status{kProcNull, kAnyTag, 0, kErrNone, 0};
}

// A diagnostic naming a request, its communicator, the queues and the peer's counters (the
// holder's counts as last published).
template <class B>
GPUCOMM_MSG_OUTLINE Diag request_diag(const B& b, const StateView& s, DiagKind kind, DiagOp op, uint32_t id,
                                      uint64_t start) {
  Diag d{};
  d.kind = kind;
  d.op = op;
  const Req& q = s.reqs[id];
  d.ctx = q.ctx;
  d.peer = q.pe;
  d.rank = q.rank;
  d.tag = q.tag;
  d.req_state = q.state;
  d.bytes = q.bytes;
  if (static_cast<uint32_t>(q.ctx) < static_cast<uint32_t>(kMaxComms)) {
    d.mode = static_cast<uint32_t>(s.comms[q.ctx].mode);
    d.umq = static_cast<uint32_t>(s.home[home::kCommUmq + static_cast<uint32_t>(q.ctx)]);
    d.prq = static_cast<uint32_t>(s.home[home::kCommPrq + static_cast<uint32_t>(q.ctx)]);
  }
  d.active = static_cast<uint32_t>(s.home[home::kActiveN]);
  const uint64_t T = b.ld(&s.ctl->post_tail, Ord::relaxed);
  d.submitted = (post_ring_count(T) - static_cast<uint32_t>(s.home[home::kRingDone])) +
                ((post_fast_count(T) - static_cast<uint32_t>(s.home[home::kFastDone])) & kPostFastMask);
  if (q.pe >= 0 && q.pe < s.cfg.npes) {
    d.value = b.ld_sys(&s.credits[q.pe], Ord::relaxed);
    d.limit = b.ld(&s.peers[q.pe].next_ticket, Ord::relaxed);
    d.drained = s.home[peer_word(s, q.pe, home::kDrained)];
  }
  d.elapsed_ns = b.now_ns() - start;
  return d;
}

// The error policy of the request's communicator: an error in a status ends the job unless the
// communicator returns errors. `ctx` of the request, `total` the message's size (truncation).
template <class B>
GPUCOMM_MSG_OUTLINE void check_status(const B& b, const StateView& s, int32_t ctx, const Status& st, DiagOp op,
                                      uint64_t total) {
  if (st.error == kErrNone || st.error == kErrCancelled) return;
  if (static_cast<uint32_t>(ctx) < static_cast<uint32_t>(kMaxComms) && (s.comms[ctx].flags & kCommErrorsReturn)) return;
  Diag d{};
  d.kind = st.error == kErrTruncated ? DiagKind::truncated : DiagKind::peer_failure;
  d.op = op;
  d.ctx = ctx;
  d.peer = -1;
  d.rank = st.source;
  d.tag = st.tag;
  d.value = st.bytes;
  d.sent_bytes = total;
  if (static_cast<uint32_t>(ctx) < static_cast<uint32_t>(kMaxComms)) d.mode = static_cast<uint32_t>(s.comms[ctx].mode);
  b.fail(d);
}

// A request that needs no progress: null, completed when it was made, or PROC_NULL. True (with its
// status in `st`, the request reset to null) for those.
GPUCOMM_MSG_FN bool trivially_done(Request& r, Status& st) {
  if (r.id == 0 || r.id == Request::kDone) {
    st = Status{};
    r = Request{};
    return true;
  }
  if (r.id == Request::kProcNull) {
    st = proc_null_status();
    r = Request{};
    return true;
  }
  return false;
}

// Finishes a completed receive or send with its completion (the whole group): the payload into
// the buffer (inline), the rendezvous data (get, then FIN to the sender), then the error policy,
// the slot freed and the request null. Returns the status.
template <class B, class C>
GPUCOMM_MSG_FN Status finish(const B& b, C c, const StateView& s, Request& r, const Completion& cp, DiagOp op) {
  // `cp` is the leader's: the group gets only what it moves (rendezvous data).
  const uint32_t slot = id_slot(r.id);
  const uint32_t kind = b.bcast(c, cp.kind & kCompKindMask);
  if (kind == kCompRtsGet) {
    struct {
      char* buf;
      uint64_t bytes, offset;
      int32_t pe;
      uint32_t sreq;
    } g{};
    if (b.leader(c)) {
      g = {cp.buf, cp.st.bytes, (static_cast<uint64_t>(cp.w[2]) << 32) | cp.w[1], static_cast<int32_t>(cp.w[0]),
           cp.w[3]};
    }
    g = b.bcast(c, g);
    b.get(c, g.buf, b.heap_base() + g.offset, g.bytes, g.pe);
    b.publish_to(c, g.pe);  // the data was read before the sender may reuse its buffer
    if (b.leader(c)) remote_set(b, &s.req_words[size_t{2} * g.sreq], kFin, g.pe);
  }
  // A claimed get: the request stays on the holder's active list; the holder frees the slot once
  // it sees the claim done (the data moved and the status taken before that).
  const bool claimed = (cp.kind & kCompClaimed) != 0;
  if (b.leader(c)) {
    if (kind == kCompInline) {
      const uint64_t n = min_of<uint64_t>(cp.st.bytes, kCompInlineBytes);
      auto* dst = reinterpret_cast<uint8_t*>(cp.buf);
      for (uint64_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(cp.w[i / 4] >> (8 * (i % 4)));
    } else if (cp.kind & kCompFenced) {
      b.acquire_fence_local();  // the holder's copy into the buffer happened before its record
    }
    check_status(b, s, cp.ctx, cp.st, op, cp.total);
    if (claimed) {
      b.st_sys(&s.req_words[size_t{2} * slot], (static_cast<uint64_t>(r.stamp) << 32) | kClaimDone, Ord::release);
    } else {
      slot_give(b, s, slot);
    }
  }
  r = Request{};
  return b.bcast(c, cp.st);
}

// A rendezvous send whose owner waits for FIN in its request word: one look. True when it came.
template <class B, class C>
GPUCOMM_MSG_FN bool fin_seen(const B& b, C c, const StateView& s, uint32_t slot) {
  return b.bcast(c, b.leader(c) && (b.ld_sys(&s.req_words[size_t{2} * slot], Ord::acquire) & kFin) != 0);
}
template <class B, class C>
GPUCOMM_MSG_FN Status finish_fin(const B& b, C c, const StateView& s, Request& r) {
  const uint32_t slot = id_slot(r.id);
  const Status st = send_status(s.reqs[slot]);
  b.sync(c);
  if (b.leader(c)) slot_give(b, s, slot);
  r = Request{};
  return st;
}

// One look at request r: its completion, if it has one (the whole group sees the result; the
// record travels to the group only once it is complete).
struct Look {
  Completion cp;
  uint32_t done;
  uint32_t reserved;  // 1: a rendezvous send completed by FIN
};
// The group learns whether it is done (and whether by FIN); the completion itself stays with the
// leader (finish hands the group what it needs of it).
template <class B, class C>
GPUCOMM_MSG_FN Look share(const B& b, C c, Look l) {
  const uint32_t v = b.bcast(c, l.done | (l.reserved << 1));
  l.done = v & 1u;
  l.reserved = v >> 1;
  return l;
}
// Leader: reads request r's completion record. A kCompRtsGet record counts once this waiter
// claimed the get (claim_get); when the holder claimed it first, its own record follows.
template <class B>
GPUCOMM_MSG_FN bool read_record(const B& b, const StateView& s, const Request& r, Completion& cp) {
  if (!comp_read(b, s, id_slot(r.id), r.stamp, cp)) return false;
  if ((cp.kind & kCompKindMask) != kCompRtsGet) return true;
  if (!claim_get(b, s, id_slot(r.id), r.stamp)) return false;
  cp.kind |= kCompClaimed;
  return true;
}
template <class B, class C>
GPUCOMM_MSG_FN Look look(const B& b, C c, const StateView& s, const Request& r) {
  Look l{};
  if (b.leader(c)) l.done = read_record(b, s, r, l.cp) ? 1u : 0u;
  return share(b, c, l);
}

// Runs rounds while holding progress, until the holder's own request r completed (its completion
// in `own`; a rendezvous send: its FIN came, own.reserved = 1) or kHoldPolls rounds passed; without
// a request (r null), until a round finds nothing new (the caller then looks at its records). Then
// parks. False when progress could not be taken.
template <class B, class C>
GPUCOMM_MSG_FN bool hold_for(const B& b, C c, const StateView& s, const Request& r, bool steal, Look& own) {
  if (!b.bcast(c, b.leader(c) && try_hold(b, s, steal))) return false;
  b.set_own(r.id == 0 ? 0xffffffffu : id_slot(r.id), r.stamp);
  bool dirty = false, fin = false;
  for (uint32_t k = 0; k < B::kHoldPolls; ++k) {
    const bool any = round(b, c, s);
    dirty = dirty || any;
    if (b.bcast(c, b.leader(c) && b.own_ready())) break;
    // A send's FIN comes from the receiver's group, not from a round: look after each one.
    fin = (r.id & kIdFin) != 0 && fin_seen(b, c, s, id_slot(r.id));
    if (fin) break;
    if (r.id == 0 && !any) break;
  }
  Look l{};
  if (b.leader(c)) {
    l.done = fin || b.own_ready() ? 1u : 0u;
    l.reserved = fin ? 1u : 0u;
    l.cp = b.own_completion();
    park(b, s, dirty);
  }
  b.set_own(0xffffffffu, 0);
  own = share(b, c, l);
  return true;
}

// The timing of a wait: when it started (read lazily), the holder word it watches for stealing.
struct WaitClock {
  uint64_t start;
  StealWatch steal;
};
// Leader, every 64 polls: 1 when the job failed, 2 when the wait timed out.
template <class B>
GPUCOMM_MSG_FN uint32_t wait_late(const B& b, WaitClock& w) {
  const uint64_t now = b.now_ns();
  if (w.start == 0) w.start = now;
  if (b.job_failed()) return 1;
  if (b.timeout_ns() != 0 && now - w.start > b.timeout_ns()) return 2;
  return 0;
}

// Waits for request r (not trivially done) until its completion; the GPUCOMM_TIMEOUT limit
// applies. A job that failed meanwhile ends the wait with kErrPeerFailure (then the error policy).
// Returns the completion (done = 0 with a peer-failure status when the job failed).
template <class B, class C>
GPUCOMM_MSG_OUTLINE Look wait_completion(const B& b, C c, const StateView& s, const Request& r, DiagOp op) {
  WaitClock w{};
  const uint32_t slot = id_slot(r.id);
  for (uint32_t i = 1;; ++i) {
    if (r.id & kIdFin) {
      if (fin_seen(b, c, s, slot)) return Look{{}, 1, 1};
    } else {
      const Look l = look(b, c, s, r);
      if (l.done) return l;
    }
    // Progress: tried at once (the holder's own block takes it back in one compare-and-swap),
    // then every few looks at the record (another block holds it: its rounds complete the record).
    if (i == 1 || (i & 7u) == 0) {
      const bool steal = (i & 15u) == 0 && b.bcast(c, b.leader(c) && steal_due(b, s, w.steal));
      Look own{};
      if (hold_for(b, c, s, r, steal, own) && own.done) return own;
    }
    b.pause(i);
    if ((i & 63u) == 0) {
      const uint32_t late = b.bcast(c, b.leader(c) ? wait_late(b, w) : 0u);
      if (late == 1) {
        Look f{};
        f.cp.st = Status{s.reqs[slot].rank, s.reqs[slot].tag, 0, kErrPeerFailure, 0};
        f.cp.ctx = s.reqs[slot].ctx;
        return f;
      }
      if (late == 2 && b.leader(c)) b.fail(request_diag(b, s, DiagKind::timeout, op, slot, w.start));
    }
  }
}

// Finishes request r with what wait_completion or test_look found (the whole group).
template <class B, class C>
GPUCOMM_MSG_FN Status finish_look(const B& b, C c, const StateView& s, Request& r, const Look& l, DiagOp op) {
  if (l.reserved == 1) return finish_fin(b, c, s, r);
  if (!l.done) {
    if (b.leader(c)) check_status(b, s, l.cp.ctx, l.cp.st, op, 0);
    r = Request{};
    return l.cp.st;
  }
  return finish(b, c, s, r, l.cp, op);
}

// Waits for the request and finishes it (the group).
template <class B, class C>
GPUCOMM_MSG_OUTLINE Status wait(const B& b, C c, const StateView& s, Request& r, DiagOp op = DiagOp::wait) {
  Status st{};
  if (trivially_done(r, st)) return st;
  b.fast_release(c);
  return finish_look(b, c, s, r, wait_completion(b, c, s, r, op), op);
}

// One look at request r (not trivially done), with one progress round when it is not complete
// and progress can be taken: its completion when it has one (done = 1).
template <class B, class C>
GPUCOMM_MSG_OUTLINE Look test_look(const B& b, C c, const StateView& s, const Request& r) {
  b.fast_release(c);
  if (r.id & kIdFin) {
    bool fin = fin_seen(b, c, s, id_slot(r.id));
    if (!fin) {
      (void)progress(b, c, s);
      fin = fin_seen(b, c, s, id_slot(r.id));
    }
    return Look{{}, fin ? 1u : 0u, 1};
  }
  Look l = look(b, c, s, r);
  if (l.done) return l;
  Look own{};
  if (!hold_for(b, c, s, r, false, own)) return l;
  return own.done ? own : look(b, c, s, r);
}

// True when the request completed (its status in `st`; the request is reset to null and its slot
// freed). Progresses the PE once when it is not complete yet and progress can be taken.
template <class B, class C>
GPUCOMM_MSG_OUTLINE bool test(const B& b, C c, const StateView& s, Request& r, Status& st, DiagOp op = DiagOp::test) {
  if (trivially_done(r, st)) return true;
  const Look l = test_look(b, c, s, r);
  if (!l.done) return false;
  st = finish_look(b, c, s, r, l, op);
  return true;
}

// Waits for rs[0..n) (arrays the whole group sees): each thread looks at its share of the
// completion records in one pass (loads in flight together) and finishes those that completed;
// the group progresses while any is open. A wait that runs past the timeout (or sees the job fail)
// hands the open requests to wait(), one by one, for its diagnostics.
template <class B, class C>
GPUCOMM_MSG_OUTLINE void waitall(const B& b, C c, const StateView& s, Request* rs, int n, Status* statuses,
                                 DiagOp op = DiagOp::wait) {
  b.fast_release(c);
  const auto me = static_cast<int>(b.group_rank(c));
  const auto step = static_cast<int>(b.group_size(c));
  // Each thread finishes its own share with thread-level calls.
  const coop::Thread one{};
  auto sweep = [&] {
    bool open = false;
    for (int k = me; k < n; k += step) {
      Request& r = rs[k];
      Status st{};
      if (trivially_done(r, st)) {
        if (statuses) statuses[k] = st;
        continue;
      }
      if (r.id & kIdFin) {
        if ((b.ld_sys(&s.req_words[size_t{2} * id_slot(r.id)], Ord::acquire) & kFin) == 0) {
          open = true;
          continue;
        }
        st = finish_fin(b, one, s, r);
      } else {
        Completion cp{};
        if (!read_record(b, s, r, cp)) {
          open = true;
          continue;
        }
        st = finish(b, one, s, r, cp, op);
      }
      if (statuses) statuses[k] = st;
    }
    return b.any(c, open);
  };
  WaitClock w{};
  for (uint32_t i = 1; sweep(); ++i) {
    const bool steal = (i & 15u) == 0 && b.bcast(c, b.leader(c) && steal_due(b, s, w.steal));
    Look own{};
    (void)hold_for(b, c, s, Request{}, steal, own);
    b.pause(i);
    if ((i & 63u) == 0 && b.bcast(c, b.leader(c) ? wait_late(b, w) : 0u) != 0) break;  // wait() reports it
  }
  b.sync(c);
  for (int k = 0; k < n; ++k) {
    if (rs[k].id == 0) continue;
    const Status st = wait(b, c, s, rs[k], op);
    if (statuses && b.leader(c)) statuses[k] = st;
    b.sync(c);
  }
}

// Waits until at least one of rs[0..n) completed; finishes every one that did (their indices in
// `indices`, statuses in `statuses` when given) and returns how many; -1 when all are null.
template <class B, class C>
GPUCOMM_MSG_OUTLINE int waitsome(const B& b, C c, const StateView& s, Request* rs, int n, int* indices,
                                 Status* statuses, bool block) {
  bool open = false;
  for (int k = 0; k < n; ++k) open = open || !rs[k].null();
  if (!open) return -1;
  b.fast_release(c);
  WaitClock w{};
  for (uint32_t i = 1;; ++i) {
    int got = 0;
    for (int k = 0; k < n; ++k) {
      if (rs[k].null()) continue;
      Status st{};
      bool done = false;
      if (rs[k].id == Request::kDone || rs[k].id == Request::kProcNull) {
        done = trivially_done(rs[k], st);
      } else if (rs[k].id & kIdFin) {
        if (fin_seen(b, c, s, id_slot(rs[k].id))) {
          st = finish_fin(b, c, s, rs[k]);
          done = true;
        }
      } else {
        const Look l = look(b, c, s, rs[k]);
        if (l.done) {
          st = finish(b, c, s, rs[k], l.cp, DiagOp::wait);
          done = true;
        }
      }
      if (!done) continue;
      if (indices) indices[got] = k;
      if (statuses) statuses[got] = st;
      ++got;
    }
    if (got > 0 || !block) return got;
    const bool steal = (i & 15u) == 0 && b.bcast(c, b.leader(c) && steal_due(b, s, w.steal));
    Look own{};
    (void)hold_for(b, c, s, Request{}, steal, own);
    b.pause(i);
    if ((i & 63u) == 0 && b.bcast(c, b.leader(c) ? wait_late(b, w) : 0u) != 0) {
      // The first open request reports the timeout (or the failure) through wait().
      for (int k = 0; k < n; ++k) {
        if (rs[k].null()) continue;
        const Status st = wait(b, c, s, rs[k], DiagOp::wait);
        if (indices) indices[0] = k;
        if (statuses) statuses[0] = st;
        return 1;
      }
    }
  }
}

// ---- probes ----

// Leader, holding progress: the unexpected message a receive (ctx, src, tag) would take.
template <class B>
GPUCOMM_MSG_FN int32_t probe_held(const B& b, const StateView& s, int32_t ctx, int32_t src, int32_t tag, bool take,
                                  Status& st) {
  const int32_t u = bins::umq_front(b, s, bins::key_of(ctx, src, tag));
  if (u < 0) return -1;
  const Unexp& e = s.unexp[u];
  st = Status{e.env.src, e.env.tag, e.bytes, kErrNone, 0};
  if (take) bins::umq_unlink(b, s, static_cast<uint32_t>(u));
  return u;
}

// Looks for a message that a receive (src, tag) on context `ctx` would take. The holder (or a
// group that can take progress now) runs a round and looks itself; other groups post a probe
// that the holder answers in its next round (no lock per poll), and wait for that answer. With
// `take` (mprobe), the message leaves the lists and *msg is its entry + 1. `standing`: wait until
// one matches (probe, mprobe) instead of answering "none" at once.
template <class B, class C>
GPUCOMM_MSG_OUTLINE bool probe_any(const B& b, C c, const StateView& s, int32_t ctx, uint32_t mode, int32_t src,
                                   int32_t tag, bool take, bool standing, Status& st, uint32_t* msg, DiagOp op) {
  b.fast_release(c);
  Request q{};
  WaitClock w{};
  for (uint32_t i = 1;; ++i) {
    if (q.id == 0) {
      // Holding progress (or able to take it now): look directly.
      if (b.bcast(c, b.leader(c) && try_hold(b, s, false))) {
        const bool dirty = round(b, c, s);
        struct {
          int32_t u;
          Status st;
        } f{-1, {}};
        if (b.leader(c)) {
          f.u = probe_held(b, s, ctx, src, tag, take, f.st);
          park(b, s, dirty || (f.u >= 0 && take));
        }
        f = b.bcast(c, f);
        if (f.u >= 0) {
          st = f.st;
          if (msg) *msg = static_cast<uint32_t>(f.u) + 1;
          return true;
        }
        if (!standing) return false;
      } else {
        // Ask the holder.
        Started r{};
        if (b.leader(c)) {
          Post p{};
          p.kind = kPostProbe;
          p.mode = mode;
          p.flags = (take ? kProbeTake : 0u) | (standing ? 0u : kProbeOnce);
          p.ctx = ctx;
          p.src = src;
          p.tag = tag;
          r = post_with_slot(b, s, p);
          if (r.error) request_table_full(b, s, op, ctx);
        }
        r = b.bcast(c, r);
        q = Request{r.id, r.stamp};
      }
    }
    if (q.id != 0) {
      Look l = look(b, c, s, q);
      if (!l.done) {
        const bool steal = (i & 15u) == 0 && b.bcast(c, b.leader(c) && steal_due(b, s, w.steal));
        Look own{};
        if (hold_for(b, c, s, q, steal, own) && own.done) l = own;
      }
      if (l.done) {
        if (b.leader(c)) slot_give(b, s, id_slot(q.id));
        const bool found = (l.cp.kind & kCompKindMask) == kCompProbe;
        if (found) {
          st = l.cp.st;
          if (msg) *msg = l.cp.w[0];
        }
        return found;
      }
    }
    b.pause(i);
    if ((i & 63u) == 0) {
      const uint32_t late = b.bcast(c, b.leader(c) ? wait_late(b, w) : 0u);
      if (late != 0 && b.leader(c)) {
        Diag d{};
        d.kind = late == 1 ? DiagKind::peer_failure : DiagKind::timeout;
        d.op = op;
        d.ctx = ctx;
        d.mode = mode;
        d.peer = -1;
        d.rank = src;
        d.tag = tag;
        d.req_state = kReqProbe;
        d.umq = static_cast<uint32_t>(s.home[home::kCommUmq + (static_cast<uint32_t>(ctx) & 63u)]);
        d.prq = static_cast<uint32_t>(s.home[home::kCommPrq + (static_cast<uint32_t>(ctx) & 63u)]);
        d.elapsed_ns = b.now_ns() - w.start;
        b.fail(d);
      }
    }
  }
}

// Receives message `m` (entry + 1, from mprobe) into a new request and returns it.
template <class B, class C>
GPUCOMM_MSG_OUTLINE Started mrecv_start(const B& b, C c, const StateView& s, int32_t ctx, uint32_t mode, uint32_t m,
                                        void* buf, uint64_t bytes, uint64_t* event) {
  if (m == Message::kProcNull) return recv_start(b, c, s, RecvArgs{buf, bytes, kProcNull, kAnyTag, ctx, mode, event});
  Started r{};
  if (b.leader(c)) {
    Post p{};
    p.kind = kPostMrecv;
    p.mode = mode;
    p.ctx = ctx;
    p.buf = static_cast<char*>(buf);
    p.bytes = bytes;
    p.event = event;
    p.aux = m - 1;
    r = post_with_slot(b, s, p);
  }
  return b.bcast(c, r);
}

// Takes progress, waiting for it (stealing from a holder parked for steal_ns); false on timeout.
template <class B, class C>
GPUCOMM_MSG_FN bool hold_wait(const B& b, C c, const StateView& s) {
  WaitClock w{};
  for (uint32_t i = 1;; ++i) {
    const bool steal = b.bcast(c, b.leader(c) && steal_due(b, s, w.steal));
    if (b.bcast(c, b.leader(c) && try_hold(b, s, steal))) return true;
    b.pause(i);
    if ((i & 63u) == 0 && b.bcast(c, b.leader(c) ? wait_late(b, w) : 0u) != 0) return false;
  }
}

// Cancels a posted receive that has not matched: it completes with kErrCancelled. A receive that
// matched already completes normally (wait reports which).
template <class B, class C>
GPUCOMM_MSG_OUTLINE void cancel(const B& b, C c, const StateView& s, const Request& r) {
  if (r.id == 0 || r.id >= Request::kProcNull || (r.id & kIdFin)) return;
  b.fast_release(c);
  const uint32_t id = id_slot(r.id);
  if (!hold_wait(b, c, s)) {
    if (b.leader(c)) b.fail(request_diag(b, s, DiagKind::timeout, DiagOp::cancel, id, b.now_ns()));
    return;
  }
  if (b.leader(c)) {
    (void)take_posts(b, s);  // the receive is in its bin or matched now
    Req& q = s.reqs[id];
    if ((q.flags & kReqIsRecv) && q.state == kReqRecvPosted && q.stamp == r.stamp &&
        bins::cancel_receive(b, s, bins::key_of(q.ctx, q.rank, q.tag), id, q.stamp)) {
      q.state = kReqDone;
      Completion cp{};
      cp.kind = kCompDone;
      cp.st = Status{q.rank, q.tag, 0, kErrCancelled, 0};
      cp.buf = q.buf;
      cp.ctx = q.ctx;
      if (q.event) b.fadd(q.event, 1, Ord::release);
      comp_write(b, s, id, q.stamp, cp);
    }
    park(b, s, true);
  }
  b.sync(c);
}

}  // namespace gpucomm::msg::proto
