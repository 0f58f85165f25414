#pragma once
// The messaging protocol, part 4: progress (docs/MESSAGING.md, "Who matches", "Progress"). One
// group at a time holds progress (Control::holder); a round takes the new posts (merged from the
// post ring and the fast-post log), advances the active requests (pending slot writes, FIN and
// CTS, rendezvous chunks), and drains every sender's ring.
#include <cstdint>

#include "gpucomm/messaging/protocol_recv.hpp"
#include "gpucomm/messaging/protocol_send.hpp"

namespace gpucomm::msg::proto {

// ---- holding progress ----
//
// The holder word: free, busy (a group runs a round) or parked (the last holder left its state
// published and may come back). A group takes it
//   - at once when it is free, or parked by its own block in the same tenure (a GPU block keeps the
//     holder's hot words in shared memory: the same block continues without reloading them);
//   - after the word stayed parked for steal_ns (a holder busy computing, or whose kernel exited),
//     starting a new tenure (it reloads the words from local memory).
// Parking publishes the round's writes: a fence, then a relaxed store of the word (a release
// pattern); taking is a compare-and-swap with acquire. Host PEs and the library's own kernels free
// the word instead of parking (they keep no cache).

// Leader: tries to take progress; `steal` allows taking a word another block parked recently. A
// block that parked progress itself tries the word it stored first: one compare-and-swap.
template <class B>
GPUCOMM_MSG_FN bool try_hold(const B& b, const StateView& s, bool steal) {
  uint64_t* hw = &s.ctl->holder;
  const uint64_t mine = b.cache_tenure();
  uint64_t w = b.parked_word();
  if (mine != ~uint64_t(0) && holder_state(w) == kHolderParked && holder_tenure(w) == mine) {
    if (b.cas(hw, w, holder_word(kHolderBusy, mine, 0), Ord::acquire)) {
      b.held(mine, false);
      return true;
    }
  } else {
    w = b.ld(hw, Ord::relaxed);
  }
  const uint64_t st = holder_state(w);
  if (st == kHolderBusy) return false;
  const uint64_t tenure = holder_tenure(w);
  if (st == kHolderParked && mine == tenure) {
    uint64_t e = w;
    if (!b.cas(hw, e, holder_word(kHolderBusy, tenure, 0), Ord::acquire)) return false;
    b.held(tenure, false);
    return true;
  }
  if (st == kHolderParked && !steal) {
    const uint64_t elapsed = ((b.now_ns() >> 10) - holder_parked_at(w)) & ((uint64_t(1) << 22) - 1);
    if (elapsed < (s.cfg.steal_ns >> 10)) return false;
  }
  uint64_t e = w;
  if (!b.cas(hw, e, holder_word(kHolderBusy, tenure + 1, 0), Ord::acquire)) return false;
  b.held(tenure + 1, true);
  return true;
}

// Leader: leaves progress. `dirty`: the round wrote holder state (fence first).
template <class B>
GPUCOMM_MSG_FN void park(const B& b, const StateView& s, bool dirty) {
  const uint64_t tenure = b.tenure();
  if (dirty || b.dirty()) b.release_fence_local();
  const uint64_t w =
      b.sticky() ? holder_word(kHolderParked, tenure, b.now_ns() >> 10) : holder_word(kHolderFree, tenure, 0);
  b.st(&s.ctl->holder, w, Ord::relaxed);
  b.unheld(w);
}

// A waiter's view of whether it may steal: the word it saw parked, and since when.
struct StealWatch {
  uint64_t word;
  uint64_t since;
};
// Leader: true when the holder word stayed the same parked value for steal_ns of this caller's
// own observation (the parked time in the word covers a holder that parked long before).
template <class B>
GPUCOMM_MSG_FN bool steal_due(const B& b, const StateView& s, StealWatch& w) {
  const uint64_t now_w = b.ld(&s.ctl->holder, Ord::relaxed);
  const uint64_t now = b.now_ns();
  if (holder_state(now_w) != kHolderParked || now_w != w.word) {
    w.word = now_w;
    w.since = now;
    return false;
  }
  return now - w.since >= s.cfg.steal_ns;
}

// ---- standing probes ----

GPUCOMM_MSG_FN bool probe_fits(uint64_t pk, const matching::Envelope& env) {
  return bins::key_ctx(pk) == static_cast<uint32_t>(env.comm) &&
         (bins::key_any_src(pk) || ((pk >> 31) & 0xffffffu) == (static_cast<uint32_t>(env.src) & 0xffffffu)) &&
         (bins::key_any_tag(pk) || (pk & 0x3fffffffu) == (static_cast<uint32_t>(env.tag) & 0x3fffffffu));
}
inline constexpr uint64_t kProbeTakeBit = uint64_t(1) << 62;

// Leader: the answer to a probe by request `slot` (stamp): the status of unexpected entry u (taken
// off the lists for an mprobe), or none.
template <class B>
GPUCOMM_MSG_OUTLINE void answer_probe(const B& b, const StateView& s, uint32_t slot, uint32_t stamp, int32_t u,
                                      bool take) {
  Completion cp{};
  if (u < 0) {
    cp.kind = kCompNone;
  } else {
    const Unexp& e = s.unexp[u];
    cp.kind = kCompProbe;
    cp.st = Status{e.env.src, e.env.tag, e.bytes, kErrNone, 0};
    cp.ctx = e.env.comm;
    if (take) {
      bins::umq_unlink(b, s, static_cast<uint32_t>(u));
      cp.w[0] = static_cast<uint32_t>(u) + 1;
    }
  }
  if (b.is_own(slot, stamp)) {
    b.own_done(cp);
  } else {
    comp_write(b, s, slot, stamp, cp);
  }
}

template <class B>
GPUCOMM_MSG_OUTLINE bool answer_probes(const B& b, const StateView& s, uint32_t u) {
  uint64_t n = b.hw(home::kProbesN);
  for (uint64_t i = 0; i < n;) {
    const uint32_t at = s.hm.probes + static_cast<uint32_t>(i) * home::kProbeWords;
    const uint64_t who = b.hw(at), pk = b.hw(at + 1);
    if (!probe_fits(pk & ~kProbeTakeBit, s.unexp[u].env)) {
      ++i;
      continue;
    }
    const bool take = (pk & kProbeTakeBit) != 0;
    answer_probe(b, s, lo32(who), hi32(who), static_cast<int32_t>(u), take);
    n -= 1;
    const uint32_t last = s.hm.probes + static_cast<uint32_t>(n) * home::kProbeWords;
    b.set_hw(at, b.hw(last));
    b.set_hw(at + 1, b.hw(last + 1));
    b.set_hw(home::kProbesN, n);
    if (take) return true;
  }
  return false;
}

// ---- taking posts ----

// The target of a posted receive.
GPUCOMM_MSG_FN Target post_target(const Post& p) {
  return Target{p.slot, p.stamp, p.bytes, p.buf, p.event != nullptr ? 1u : 0u, 0};
}

// Takes a post other than a plain receive: a send the holder advances, a matched receive, a probe.
template <class B, class C>
GPUCOMM_MSG_OUTLINE void take_other_post(const B& b, C c, const StateView& s, const Post& p) {
  if (p.kind == kPostSend) {
    if (b.leader(c)) {
      b.acquire_fence_local();  // the send's fields were released before its post
      s.reqs[p.slot].stamp = p.stamp;
      active_add(b, s, p.slot);
    }
    b.sync(c);
    return;
  }
  if (p.kind == kPostMrecv) {
    deliver_unexpected(b, c, s, post_target(p), p.aux);
    return;
  }
  if (b.leader(c)) {
    const uint64_t k = bins::key_of(p.ctx, p.src, p.tag);
    const int32_t u = bins::umq_front(b, s, k);
    const bool take = (p.flags & kProbeTake) != 0;
    const uint64_t n = b.hw(home::kProbesN);
    if (u >= 0 || (p.flags & kProbeOnce) != 0 || n >= home::kMaxProbes) {
      answer_probe(b, s, p.slot, p.stamp, u, take);
    } else {
      const uint32_t at = s.hm.probes + static_cast<uint32_t>(n) * home::kProbeWords;
      b.set_hw(at, stamped(p.stamp, p.slot));
      b.set_hw(at + 1, k | (take ? kProbeTakeBit : 0));
      b.set_hw(home::kProbesN, n + 1);
    }
  }
  b.sync(c);
}

// Leader: takes one post. False when it cannot be taken now (the receive's communicator has Q
// receives posted, or the key table is full): it stays first in line.
template <class B>
GPUCOMM_MSG_FN bool take_post(const B& b, const StateView& s, const Post& p) {
  const coop::Thread one{};
  if (p.kind != kPostRecv) {
    take_other_post(b, one, s, p);
    return true;
  }
  // A receive: the earliest compatible unexpected message, or its key's bin.
  Req& q = s.reqs[p.slot];
  q.state = kReqRecvPosted;
  q.flags = kReqIsRecv | (p.event ? kReqHasEvent : 0u);
  q.ctx = p.ctx;
  q.pe = -1;
  q.rank = p.src;
  q.tag = p.tag;
  q.buf = p.buf;
  q.bytes = p.bytes;
  q.event = p.event;
  q.moved = 0;
  q.stamp = p.stamp;
  q.mode = p.mode;
  count(b, s, p.ctx, &Counters::matches, 1);
  const uint64_t k = bins::key_of(p.ctx, p.src, p.tag);
  const int32_t u = bins::match_receive(b, s, k);
  if (u >= 0) {
    deliver_unexpected(b, one, s, post_target(p), static_cast<uint32_t>(u));
    return true;
  }
  const auto ctx = static_cast<uint32_t>(p.ctx) & 63u;
  if (b.hw(home::kCommPrq + ctx) >= s.cfg.queue_cap) return false;
  const auto order = static_cast<uint32_t>(b.hw(home::kSeq));
  const uint32_t cap = p.bytes >= kBinCapLarge ? kBinCapLarge : static_cast<uint32_t>(p.bytes);
  const BinEntry e{order, p.stamp, p.slot, cap | (p.event || p.bytes >= kBinCapLarge ? kBinSlow : 0u),
                   static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p.buf))};
  if (!bins::post_receive(b, s, k, e)) return false;
  b.set_hw(home::kSeq, order + 1u);
  return true;
}

// a before b among the fast posts (30-bit serial numbers).
GPUCOMM_MSG_FN bool fast_before(uint32_t a, uint32_t b) {
  const uint32_t d = (b - a) & static_cast<uint32_t>(kPostFastMask);
  return d != 0 && d < (1u << 29);
}

// The next post in take order (leader): ring ticket n0 when its place (the fast posts before it)
// is not after fast post f0, else fast post f0. False when that post has not (fully) arrived.
struct NextPost {
  Post p;
  uint32_t ring;  // 1: from the ring
  uint32_t ok;
};
template <class B>
GPUCOMM_MSG_FN NextPost next_post(const B& b, const StateView& s, uint32_t f0, uint32_t F, uint32_t n0, uint32_t N) {
  NextPost r{};
  if (n0 != N) {
    const uint64_t* e = ring_entry(s, n0);
    uint64_t v[kPostWords];
    for (uint32_t i = 0; i < kPostWords; i += 2) b.ld2(&e[i], v[i], v[i + 1]);
    const uint32_t st = ring_stamp(n0);
    bool ok = true;
    for (uint32_t i = 0; i < kPostWords; ++i) ok = ok && hi32(v[i]) == st;
    if (!ok) return r;
    uint32_t hpc = 0;
    const Post p = decode_post(v, hpc);
    if (!fast_before(f0, hpc & static_cast<uint32_t>(kPostFastMask))) {
      r.p = p;
      r.ring = 1;
      r.ok = 1;
      return r;
    }
  }
  if (f0 != F) {
    const uint64_t* e = fast_entry(s, f0);
    uint64_t v[kFastWords];
    for (uint32_t i = 0; i < kFastWords; i += 2) b.ld2(&e[i], v[i], v[i + 1]);
    const uint32_t st = fast_stamp(f0);
    for (uint32_t i = 0; i < kFastWords; ++i)
      if (hi32(v[i]) != st) return r;
    r.p = decode_fast(v);
    r.ok = 1;
  }
  return r;
}

// Leader: takes the posts in take order until none is waiting (or one cannot be taken yet).
// `T`: the post word as the caller read it (posts announced after it wait for the next round).
// `ahead`: fast posts f0 .. f0 + n_ahead - 1 a warp read in parallel (null: none).
template <class B>
GPUCOMM_MSG_FN bool take_posts(const B& b, const StateView& s, uint64_t T, const Post* ahead = nullptr,
                               uint32_t n_ahead = 0) {
  bool any = false;
  const auto first = static_cast<uint32_t>(b.hw(home::kFastDone));
  for (;;) {
    const auto f0 = static_cast<uint32_t>(b.hw(home::kFastDone));
    const auto n0 = static_cast<uint32_t>(b.hw(home::kRingDone));
    if (post_fast_count(T) == f0 && post_ring_count(T) == n0) break;  // later posts: the next round
    const uint32_t k = (f0 - first) & static_cast<uint32_t>(kPostFastMask);
    NextPost n{};
    if (post_ring_count(T) == n0 && k < n_ahead) {
      n.p = ahead[k];
      n.ok = 1;
    } else {
      n = next_post(b, s, f0, post_fast_count(T), n0, post_ring_count(T));
    }
    if (!n.ok) break;
    if (!take_post(b, s, n.p)) break;
    if (n.ring) {
      b.set_hw(home::kRingDone, (n0 + 1) & static_cast<uint32_t>(kPostRingMask));
    } else {
      b.set_hw(home::kFastDone, (f0 + 1) & static_cast<uint32_t>(kPostFastMask));
    }
    any = true;
  }
  return any;
}
template <class B>
GPUCOMM_MSG_FN bool take_posts(const B& b, const StateView& s) {
  return take_posts(b, s, b.ld(&s.ctl->post_tail, Ord::relaxed));
}

// ---- active requests ----

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
        b.set_hw(home::kStagingUsed, b.hw(home::kStagingUsed) & ~(uint64_t(1) << q.pair));
        complete_send(b, s, id);
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
    if (send_write(b, c, s, id, true)) return true;
    state = b.bcast(c, q.state);
  }
  if (state == kReqSendWaitFin) {
    bool fin = false;
    if (b.leader(c) && (b.ld_sys(&s.req_words[size_t{2} * id], Ord::acquire) & kFin)) {
      complete_send(b, s, id);
      fin = true;
    }
    return b.bcast(c, fin);
  }
  if (state == kReqSendWaitCts) {
    bool go = false;
    if (b.leader(c)) {
      const uint64_t v = b.ld_sys(&s.req_words[size_t{2} * id], Ord::acquire);
      const uint64_t used = b.hw(home::kStagingUsed);
      const uint64_t free =
          ~used & (s.cfg.staging_pairs >= 64 ? ~uint64_t(0) : (uint64_t(1) << s.cfg.staging_pairs) - 1);
      if ((v & kCts) && free) {
        q.pair = lowest_bit(free);
        b.set_hw(home::kStagingUsed, used | (uint64_t(1) << q.pair));
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

// Leader: completes a receive the holder moved itself: its event and its record.
template <class B>
GPUCOMM_MSG_OUTLINE void complete_recv(const B& b, const StateView& s, uint32_t id) {
  Req& q = s.reqs[id];
  q.state = kReqDone;
  Completion cp{};
  cp.kind = kCompDone | kCompFenced;
  cp.st = q.status;
  cp.buf = q.buf;
  cp.total = q.total;
  cp.ctx = q.ctx;
  const Target t{id, q.stamp, q.bytes, q.buf, (q.flags & kReqHasEvent) ? 1u : 0u, 0};
  if (b.is_own(id, q.stamp)) {
    b.own_done(cp);
    return;
  }
  b.release_fence_local();  // the data before the event and the record
  if (t.slow && q.event) b.fadd(q.event, 1, Ord::release);
  comp_write(b, s, id, q.stamp, cp);
}

// Leader, a claimable receive by get (rendezvous_matched): 0 while its waiter may still claim it
// or moves it, 1 once the holder claimed it (the flag clears: the holder moves it from now on), 2
// when the waiter finished it (the holder frees the slot; the request leaves the list).
template <class B>
GPUCOMM_MSG_FN uint32_t holder_claim(const B& b, const StateView& s, uint32_t id) {
  Req& q = s.reqs[id];
  uint64_t* w = &s.req_words[size_t{2} * id];
  const uint64_t open = (static_cast<uint64_t>(q.stamp) << 32) | kClaimOpen;
  uint64_t v = b.ld(w, Ord::relaxed);
  if (v == open && b.now_ns() - q.ticket >= s.cfg.steal_ns) {
    if (b.cas(w, v, (static_cast<uint64_t>(q.stamp) << 32) | kClaimHolder, Ord::relaxed)) {
      q.flags &= ~uint32_t{kReqClaimable};
      return 1;
    }
  }
  if (v == ((static_cast<uint64_t>(q.stamp) << 32) | kClaimDone)) {
    q.state = kReqDone;
    slot_give(b, s, id);
    return 2;
  }
  return 0;
}

// Receive by get: one chunk per round; FIN to the sender after the last byte.
template <class B, class C>
GPUCOMM_MSG_FN bool advance_recv_get(const B& b, C c, const StateView& s, uint32_t id) {
  Req& q = s.reqs[id];
  if (b.bcast(c, q.flags) & kReqClaimable) {
    const uint32_t k = b.bcast(c, b.leader(c) ? holder_claim(b, s, id) : 0u);
    if (k != 1) return k == 2;
  }
  const uint64_t want = q.status.bytes;
  if (q.moved < want) {
    const uint64_t n = min_of<uint64_t>(s.cfg.chunk_bytes, want - q.moved);
    b.get(c, q.buf + q.moved, b.heap_base() + q.offset + q.moved, n, q.pe);
    b.sync(c);
    if (b.leader(c)) q.moved += n;
    b.sync(c);
  }
  if (q.moved < want) return false;
  b.publish_to(c, q.pe);  // the data was read before the sender may reuse its buffer
  if (b.leader(c)) {
    remote_set(b, &s.req_words[size_t{2} * q.peer_req], kFin, q.pe);
    complete_recv(b, s, id);
  }
  return true;
}

// Receive through the sender's staging pair: fetches every announced chunk, acknowledging each.
template <class B, class C>
GPUCOMM_MSG_FN bool advance_recv_staged(const B& b, C c, const StateView& s, uint32_t id) {
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
  if (b.leader(c)) complete_recv(b, s, id);
  return true;
}

// Advances request `id`. True when it completed.
template <class B, class C>
GPUCOMM_MSG_FN bool advance(const B& b, C c, const StateView& s, uint32_t id) {
  Req& q = s.reqs[id];
  if (b.bcast(c, q.flags) & kReqIsSend) return advance_send(b, c, s, id);
  const uint32_t state = b.bcast(c, q.state);
  if (state == kReqRecvGet) return advance_recv_get(b, c, s, id);
  if (state == kReqRecvStaged) return advance_recv_staged(b, c, s, id);
  return true;
}

// Every active request once; finished ones leave the list.
template <class B, class C>
GPUCOMM_MSG_OUTLINE bool advance_active(const B& b, C c, const StateView& s) {
  bool any = false;
  for (uint32_t i = 0;;) {
    const int32_t id =
        b.bcast(c, b.leader(c) ? (i < b.hw(home::kActiveN) ? static_cast<int32_t>(s.active[i]) : -1) : 0);
    if (id < 0) break;
    if (advance(b, c, s, static_cast<uint32_t>(id))) {
      if (b.leader(c)) {
        const uint64_t n = b.hw(home::kActiveN) - 1;
        s.active[i] = s.active[n];
        b.set_hw(home::kActiveN, n);
      }
      any = true;
    } else {
      ++i;
    }
    b.sync(c);
  }
  return any;
}

// ---- rounds ----

// A warp reads fast posts f0 .. f0 + n - 1 (lane i the i-th) into `out` (shared memory); returns
// how many of them, from the first, had arrived complete.
template <class B, class C>
GPUCOMM_MSG_OUTLINE uint32_t read_fast_run(const B& b, C c, const StateView& s, uint32_t f0, uint32_t n, Post* out) {
  uint32_t got = 0;
  uint32_t lane = 0;
  if (b.batch_lane(c, lane)) {
    bool ok = false;
    if (lane < n) {
      const uint32_t k = (f0 + lane) & static_cast<uint32_t>(kPostFastMask);
      const uint64_t* e = fast_entry(s, k);
      uint64_t v[kFastWords];
      for (uint32_t i = 0; i < kFastWords; i += 2) b.ld2(&e[i], v[i], v[i + 1]);
      ok = true;
      for (uint32_t i = 0; i < kFastWords; ++i) ok = ok && hi32(v[i]) == fast_stamp(k);
      if (ok) out[lane] = decode_fast(v);
    }
    const uint32_t m = b.batch_ballot(ok);
    got = m == 0xffffffffu ? kBatchMax : lowest_bit(~uint64_t{m});
    b.batch_sync();
  }
  return b.bcast(c, got);
}

// Peers whose next ring slot a round reads ahead, together with the post word (one round trip).
inline constexpr int32_t kReadAhead = 2;

// One progress round by the group that holds progress: the leader reads the post word and the
// first peers' next slots at once, takes the posts, the group advances the active requests
// (rendezvous data), a warp drains LL runs in batches, the leader the rest.
template <class B, class C>
GPUCOMM_MSG_OUTLINE bool round(const B& b, C c, const StateView& s) {
  struct {
    uint32_t any, active;
  } d{0, 0};
  Arrival ahead[kReadAhead];
  const int32_t na = min_of(s.cfg.npes, kReadAhead);
  uint64_t T = 0;
  if (b.leader(c)) {
    T = b.ld(&s.ctl->post_tail, Ord::relaxed);
    for (int32_t pe = 0; pe < na; ++pe) ahead[pe] = read_slot(b, s, pe, b.hw(peer_word(s, pe, home::kDrained)));
  }
  // A warp reads a run of fast posts in parallel (a window of receives posted by one group).
  uint32_t n_ahead = 0;
  Post* posts = nullptr;
  if constexpr (!std::is_same_v<C, coop::Thread>) {
    struct {
      uint64_t T;
      uint32_t f0;
    } w{T, b.leader(c) ? static_cast<uint32_t>(b.hw(home::kFastDone)) : 0u};
    w = b.bcast(c, w);
    T = w.T;
    const uint32_t pending = (post_fast_count(T) - w.f0) & static_cast<uint32_t>(kPostFastMask);
    if (pending > 1 &&
        post_ring_count(T) == static_cast<uint32_t>(b.bcast(c, b.leader(c) ? b.hw(home::kRingDone) : 0))) {
      posts = b.post_scratch();
      n_ahead = read_fast_run(b, c, s, w.f0, min_of<uint32_t>(pending, kBatchMax), posts);
    }
  }
  if (b.leader(c)) {
    d.any = take_posts(b, s, T, posts, n_ahead) ? 1u : 0u;
    d.active = b.hw(home::kActiveN) != 0 ? 1u : 0u;
  }
  d = b.bcast(c, d);
  bool any = d.any != 0;
  if (d.active) any = advance_active(b, c, s) || any;
  for (int32_t pe = 0; pe < s.cfg.npes; ++pe) any = drain_peer(b, c, s, pe, pe < na ? &ahead[pe] : nullptr) || any;
  return any;
}

// Progresses the PE if progress can be taken now (or `steal`); returns whether this group ran a
// round.
template <class B, class C>
GPUCOMM_MSG_FN bool progress(const B& b, C c, const StateView& s, bool steal = false) {
  if (!b.bcast(c, b.leader(c) && try_hold(b, s, steal))) return false;
  const bool any = round(b, c, s);
  b.sync(c);
  if (b.leader(c)) park(b, s, any);
  b.sync(c);
  return true;
}

// A service loop's step: takes progress (from a parked holder at once), runs a round, parks.
// Returns whether the round found work.
template <class B, class C>
GPUCOMM_MSG_FN bool serve(const B& b, C c, const StateView& s) {
  if (!b.bcast(c, b.leader(c) && try_hold(b, s, true))) return false;
  const bool any = round(b, c, s);
  b.sync(c);
  if (b.leader(c)) park(b, s, any);
  b.sync(c);
  return any;
}

// The calling group waits for credits (protocol_send.hpp): progressing this PE meanwhile.
template <class B, class C>
GPUCOMM_MSG_FN bool wait_credits(const B& b, C c, const StateView& s, int32_t pe, uint64_t t, uint32_t n) {
  uint64_t start = 0;
  StealWatch sw{};
  for (uint32_t i = 1;; ++i) {
    if (b.bcast(c, b.leader(c) && slots_free(b, s, pe, t, n))) return true;
    const bool steal = b.bcast(c, b.leader(c) && steal_due(b, s, sw));
    (void)progress(b, c, s, steal);
    b.pause(i);
    if ((i & 63u) == 0) {
      uint32_t bad = 0;
      if (b.leader(c)) {
        const uint64_t now = b.now_ns();
        if (start == 0) start = now;
        bad = b.job_failed() || (b.timeout_ns() != 0 && now - start > b.timeout_ns());
      }
      if (b.bcast(c, bad)) return false;
    }
  }
}

}  // namespace gpucomm::msg::proto
