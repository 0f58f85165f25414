#pragma once
// The messaging protocol, part 5: what callers wait on (docs/MESSAGING.md, "Progress", "Error
// model"): receives, test and wait with their timeout diagnostics, probes against the UMQ as it
// stands, matched probes (mprobe/mrecv) and cancel.
#include <cstdint>

#include "gpucomm/messaging/protocol_progress.hpp"
#include "gpucomm/messaging/seq_match.hpp"

namespace gpucomm::msg::proto {

struct RecvArgs {
  void* buf;
  uint64_t bytes;  // buffer size
  int32_t src;     // rank, kAnySource
  int32_t tag;     // tag, kAnyTag
  int32_t ctx;
  uint32_t reserved;
  uint64_t* event;
};

// Posts a receive (any thread group). kProcNull sources complete at once.
template <class B, class C>
GPUCOMM_MSG_OUTLINE Started recv_start(const B& b, C c, const StateView& s, const RecvArgs& a) {
  if (a.src == kProcNull) {
    if (b.leader(c) && a.event) b.fadd(a.event, 1, Ord::release);
    return Started{Request::kProcNull, 0};
  }
  // The entry's fields are written by the progress holder when it takes the submission.
  int32_t id = -1;
  if (b.leader(c)) {
    id = request_take(b, s);
    if (id >= 0) {
      submit(b, s,
             Submission{static_cast<uint32_t>(id), kSubmitRecv, a.ctx, a.src, a.tag, static_cast<char*>(a.buf), a.bytes,
                        a.event});
    }
  }
  id = b.bcast(c, id);
  if (id < 0) return Started{0, static_cast<uint32_t>(DiagKind::resource)};
  return Started{static_cast<uint32_t>(id) + 1, 0};
}

GPUCOMM_MSG_FN Status proc_null_status() {
  return Status{kProcNull, kAnyTag, 0, kErrNone, 0};
}

// A diagnostic naming a request, its communicator, the queues and the peer's counters.
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
  if (const CommState* cm = comm_of(s, q.ctx)) {
    d.mode = static_cast<uint32_t>(cm->mode);
    d.umq = cm->umq_n;
    d.prq = cm->prq_n;
  }
  d.active = static_cast<uint32_t>(s.ctl->active_n);
  d.submitted = static_cast<uint32_t>(b.ld(&s.ctl->submit_tail, Ord::relaxed) - s.ctl->submit_head);
  if (q.pe >= 0 && q.pe < s.cfg.npes) {
    d.value = b.ld_sys(&s.credits[q.pe], Ord::relaxed);
    d.limit = b.ld(&s.peers[q.pe].next_ticket, Ord::relaxed);
    d.drained = s.peers[q.pe].drained;
  }
  d.elapsed_ns = b.now_ns() - start;
  return d;
}

// The error policy of the request's communicator: an error in a status ends the job unless the
// communicator returns errors.
template <class B>
GPUCOMM_MSG_OUTLINE void check_status(const B& b, const StateView& s, uint32_t id, const Status& st, DiagOp op) {
  if (st.error == kErrNone || st.error == kErrCancelled) return;
  const CommState* cm = comm_of(s, s.reqs[id].ctx);
  if (cm && (cm->flags & kCommErrorsReturn)) return;
  Diag d =
      request_diag(b, s, st.error == kErrTruncated ? DiagKind::truncated : DiagKind::peer_failure, op, id, b.now_ns());
  d.value = st.bytes;
  b.fail(d);
}

// Whether request `id` completed (the group's view of its owner's flag).
template <class B, class C>
GPUCOMM_MSG_FN bool is_done(const B& b, C c, const StateView& s, uint32_t id) {
  return b.bcast(c, b.leader(c) && b.ld(&s.reqs[id].done, Ord::acquire) != 0);
}

// Hands a completed request's status to its owner: applies the communicator's error policy, frees
// the entry and resets the request to null.
template <class B, class C>
GPUCOMM_MSG_FN Status finish(const B& b, C c, const StateView& s, Request& r, DiagOp op) {
  const uint32_t id = r.id - 1;
  const Status st = s.reqs[id].status;
  b.sync(c);  // everyone read the status before the entry is reused
  if (b.leader(c)) {
    check_status(b, s, id, st, op);
    request_give(b, s, id);
  }
  r.id = 0;
  return st;
}

// A request that needs no progress: null, completed when it was made, or PROC_NULL. True (with its
// status in `st`, the request reset to null) for those.
GPUCOMM_MSG_FN bool trivially_done(Request& r, Status& st) {
  if (r.id == 0 || r.id == Request::kDone) {
    st = Status{};
    r.id = 0;
    return true;
  }
  if (r.id == Request::kProcNull) {
    st = proc_null_status();
    r.id = 0;
    return true;
  }
  return false;
}

// True when the request completed (its status in `st`; the request is reset to null and its
// entry freed). Progresses the PE once when it is not complete yet.
template <class B, class C>
GPUCOMM_MSG_OUTLINE bool test(const B& b, C c, const StateView& s, Request& r, Status& st, DiagOp op = DiagOp::test) {
  if (trivially_done(r, st)) return true;
  const uint32_t id = r.id - 1;
  if (!is_done(b, c, s, id)) {
    progress(b, c, s);
    if (!is_done(b, c, s, id)) return false;
  }
  st = finish(b, c, s, r, op);
  return true;
}

// Waits for the request with the GPUCOMM_TIMEOUT limit; on failure records who waited for what.
// A job that failed meanwhile ends the wait with kErrPeerFailure (then the error policy applies).
// A waiter that gets the progress lock keeps it for up to B::kHoldPolls polls while its request
// is in flight (GPUs: many; host threads: one, then they yield to the PEs that share the cores):
// each round serves every request of the PE, and the waiter sees its own completion at once
// instead of through another group's hand-off; others poll their own `done` meanwhile.
template <class B, class C>
GPUCOMM_MSG_OUTLINE Status wait(const B& b, C c, const StateView& s, Request& r, DiagOp op = DiagOp::wait) {
  Status st{};
  if (trivially_done(r, st)) return st;
  const uint32_t id = r.id - 1;
  uint64_t start = 0;  // read lazily: the global timer costs as much as a round's memory access
  for (uint32_t i = 1;; ++i) {
    if (is_done(b, c, s, id)) return finish(b, c, s, r, op);
    if (b.bcast(c, b.leader(c) && b.try_lock())) {
      // Spin on relaxed polls while nothing is new; a round when something is.
      bool done = false;
      b.set_own(static_cast<int32_t>(id));
      for (uint32_t k = 0; k < B::kHoldPolls && !done; ++k) {
        if (!work_pending(b, c, s)) continue;
        round(b, c, s, static_cast<int32_t>(id));
        // Only lock holders complete requests: a relaxed read sees this group's own completion.
        done = b.bcast(c, b.leader(c) && b.ld(&s.reqs[id].done, Ord::relaxed) != 0);
      }
      b.set_own(-1);
      if (done) {
        st = s.reqs[id].status;
        b.sync(c);  // everyone read the status before the entry is freed
        if (b.leader(c)) {
          check_status(b, s, id, st, op);
          s.reqs[id].state = kReqFree;
          s.reqs[id].done = 0;  // ordered before the bit's release by unlock_and_give's fence
        }
        b.unlock_and_give(c, s.req_bits, id);
        r.id = 0;
        return st;
      }
      b.publish_local(c);  // the rounds' writes happen before the next holder's
      if (b.leader(c)) b.unlock();
      b.sync(c);
    }
    b.pause(i);
    if ((i & 63u) == 0) {
      struct {
        uint32_t failed, late;
      } f{};
      if (b.leader(c)) {
        const uint64_t now = b.now_ns();
        if (start == 0) start = now;
        f.failed = b.job_failed();
        f.late = b.timeout_ns() != 0 && now - start > b.timeout_ns();
      }
      f = b.bcast(c, f);
      if (f.failed || f.late) {
        if (test(b, c, s, r, st, op)) return st;  // what was waited for wins
        if (f.failed) {
          st = s.reqs[id].status;
          st.error = kErrPeerFailure;
          if (b.leader(c)) check_status(b, s, id, st, op);
          r.id = 0;
          return st;
        }
        if (b.leader(c)) b.fail(request_diag(b, s, DiagKind::timeout, op, id, start));
        return st;
      }
    }
  }
}

// Waits for rs[0..n) (arrays the whole group sees): each thread checks the `done` words of its
// share in one pass (loads in flight together), the group progresses while any is open (holding
// the lock like wait), then each thread finishes its share. A wait that runs past the timeout (or
// sees the job fail) hands the open requests to wait(), one by one, for its diagnostics.
template <class B, class C>
GPUCOMM_MSG_OUTLINE void waitall(const B& b, C c, const StateView& s, Request* rs, int n, Status* statuses,
                                 DiagOp op = DiagOp::wait) {
  const auto me = static_cast<int>(b.group_rank(c));
  const auto step = static_cast<int>(b.group_size(c));
  auto any_open = [&] {
    bool open = false;
    for (int k = me; k < n && !open; k += step) {
      const uint32_t id = rs[k].id;
      open = id != 0 && id < Request::kProcNull && b.ld(&s.reqs[id - 1].done, Ord::acquire) == 0;
    }
    return b.any(c, open);
  };
  uint64_t start = 0;
  for (uint32_t i = 1; any_open(); ++i) {
    if (b.bcast(c, b.leader(c) && b.try_lock())) {
      for (uint32_t k = 0; k < B::kHoldPolls; ++k) {
        if (!work_pending(b, c, s)) continue;
        round(b, c, s, -1);
        if ((k & 7u) == 7u) break;  // re-check the requests every few rounds
      }
      b.publish_local(c);
      if (b.leader(c)) b.unlock();
      b.sync(c);
    }
    b.pause(i);
    if ((i & 63u) == 0) {
      uint32_t late = 0;
      if (b.leader(c)) {
        const uint64_t now = b.now_ns();
        if (start == 0) start = now;
        late = b.job_failed() || (b.timeout_ns() != 0 && now - start > b.timeout_ns());
      }
      if (b.bcast(c, late)) break;  // wait() below reports it
    }
  }
  for (int k = me; k < n; k += step) {
    Status st{};
    Request r = rs[k];
    if (!trivially_done(r, st)) {
      const uint32_t id = r.id - 1;
      if (b.ld(&s.reqs[id].done, Ord::acquire) == 0) continue;  // still open: wait() below
      st = s.reqs[id].status;
      check_status(b, s, id, st, op);
      request_give(b, s, id);
    }
    rs[k].id = 0;
    if (statuses) statuses[k] = st;
  }
  b.sync(c);
  for (int k = 0; k < n; ++k) {
    if (rs[k].id == 0) continue;
    const Status st = wait(b, c, s, rs[k], op);
    if (statuses && b.leader(c)) statuses[k] = st;
    b.sync(c);
  }
}

// Takes the progress lock, waiting for the holder (a round is short); false on timeout.
template <class B, class C>
GPUCOMM_MSG_FN bool lock_wait(const B& b, C c) {
  const uint64_t start = b.now_ns();
  for (uint32_t i = 1;; ++i) {
    if (b.bcast(c, b.leader(c) && b.try_lock())) return true;
    b.pause(i);
    if ((i & 63u) == 0 && b.timeout_ns() != 0 && b.now_ns() - start > b.timeout_ns()) return false;
  }
}
template <class B, class C>
GPUCOMM_MSG_FN void unlock(const B& b, C c) {
  b.publish_local(c);
  if (b.leader(c)) b.unlock();
  b.sync(c);
}

// Looks for a message that a receive (src, tag) on `cm` would take, after a progress round; with
// `take`, removes it from the UMQ and returns its entry + 1 in *msg (mprobe). False when none is
// there (or another group is progressing: try again).
template <class B, class C>
GPUCOMM_MSG_OUTLINE bool iprobe(const B& b, C c, const StateView& s, CommState& cm, int32_t src, int32_t tag,
                                Status& st, bool take, uint32_t* msg) {
  if (!b.bcast(c, b.leader(c) && b.try_lock())) return false;
  round(b, c, s);
  struct {
    int32_t found;
    Status st;
  } f{-1, {}};
  if (b.leader(c)) {
    const matching::Envelope probe{cm.ctx, src, tag, 0};
    const int32_t i = seq::find<true>(cm.umq, cm.umq_n, probe);
    if (i >= 0) {
      const uint32_t u = cm.umq[i].handle;
      const Unexp& e = s.unexp[u];
      f.found = static_cast<int32_t>(u);
      f.st = Status{e.env.src, e.env.tag, e.bytes, kErrNone, 0};
      if (take) seq::remove_at(cm.umq, &cm.umq_n, static_cast<uint32_t>(i));
    }
  }
  unlock(b, c);
  f = b.bcast(c, f);
  if (f.found < 0) return false;
  st = f.st;
  if (msg) *msg = static_cast<uint32_t>(f.found) + 1;
  return true;
}

// Receives message `m` (from mprobe) into a new receive request and returns it.
template <class B, class C>
GPUCOMM_MSG_OUTLINE Started mrecv_start(const B& b, C c, const StateView& s, CommState& cm, uint32_t m, void* buf,
                                        uint64_t bytes, uint64_t* event) {
  if (m == Message::kProcNull) return recv_start(b, c, s, RecvArgs{buf, bytes, kProcNull, kAnyTag, cm.ctx, 0, event});
  int32_t id = -1;
  if (b.leader(c)) {
    id = request_take(b, s);
    if (id >= 0) {
      Req& q = s.reqs[id];
      q.flags = kReqIsRecv;
      q.state = kReqRecvPosted;
      q.ctx = cm.ctx;
      q.pe = -1;
      q.rank = kAnySource;
      q.tag = kAnyTag;
      q.buf = static_cast<char*>(buf);
      q.bytes = bytes;
      q.event = event;
    }
  }
  id = b.bcast(c, id);
  if (id < 0) return Started{0, static_cast<uint32_t>(DiagKind::resource)};
  if (!lock_wait(b, c)) {
    if (b.leader(c))
      b.fail(request_diag(b, s, DiagKind::timeout, DiagOp::mrecv, static_cast<uint32_t>(id), b.now_ns()));
    return Started{0, static_cast<uint32_t>(DiagKind::timeout)};
  }
  deliver_unexpected(b, c, s, cm, static_cast<uint32_t>(id), m - 1);
  unlock(b, c);
  return Started{static_cast<uint32_t>(id) + 1, 0};
}

// Cancels a posted receive that has not matched: it completes with kErrCancelled. A receive that
// matched already completes normally (wait reports which).
template <class B, class C>
GPUCOMM_MSG_OUTLINE void cancel(const B& b, C c, const StateView& s, const Request& r) {
  if (r.id == 0 || r.id >= Request::kProcNull) return;
  const uint32_t id = r.id - 1;
  if (!lock_wait(b, c)) {
    if (b.leader(c)) b.fail(request_diag(b, s, DiagKind::timeout, DiagOp::cancel, id, b.now_ns()));
    return;
  }
  take_submissions(b, c, s);  // the receive is in the PRQ or matched now
  if (b.leader(c)) {
    Req& q = s.reqs[id];
    if ((q.flags & kReqIsRecv) && q.state == kReqRecvPosted && b.ld(&q.done, Ord::relaxed) == 0) {
      CommState& cm = s.comms[q.ctx];
      for (uint32_t i = 0; i < cm.prq_n; ++i) {
        if (cm.prq[i].handle == id) {
          seq::remove_at(cm.prq, &cm.prq_n, i);
          complete(b, q, Status{q.rank, q.tag, 0, kErrCancelled, 0});
          break;
        }
      }
    }
  }
  unlock(b, c);
}

}  // namespace gpucomm::msg::proto
