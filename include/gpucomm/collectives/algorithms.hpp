#pragma once
// The collective algorithms, written once as templates over a memory backend B. The device
// backend (collectives_device.cuh: a warp or block of a kernel on a DeviceHandle) and the host
// backend (src/collectives/host_backend.hpp: a host-memory PE's thread on its mapped peers)
// provide:
//
//   int tid(), nthreads(); bool leader(); void sync();   the cooperating group and its barrier
//   int rank(), size(); uint32_t channel();              team rank, team size, this channel
//   const ChanView& view();                              this PE's channel of the team workspace
//   uint64_t bcast(uint64_t v);                          the leader's value to the group (syncs)
//   uint64_t local_load(const uint64_t*); void local_store(uint64_t*, uint64_t)   own words
//   void put_signal(q, dst, src, bytes, flag, value)     group: copy into q's copy of dst (a
//                                                        workspace address), then release q's copy
//                                                        of flag; src may be reused on return
//   void signal(q, word, value)                          leader: release store into q's copy
//   void publish()                                       group: earlier accesses before the
//                                                        leader's next release (fence + barrier)
//   template <class Each> void wait_flags(flag_of, stamp, sig, each)
//                                                        group: the leader waits until every
//                                                        source's flag reached `stamp`, checks
//                                                        its signature; then the group barrier
//   void wait_ack(const uint64_t* ack, uint64_t round, q) leader: acquire until ack >= round
//   void ll_store(q, uint64_t* word, uint64_t v)         one thread: 8-byte store into q's copy
//   uint64_t ll_wait(const uint64_t* word, uint32_t flag, q)   one thread: poll own word
//   uint64_t ll_wait_acquire(word, flag, q)              the same with acquire (the barrier)
//   void release_group()                                 group: earlier accesses and puts complete,
//                                                        then the leader's release fence at the
//                                                        scope the team crosses
//   bool forced()                                        kCollForceProtocol
//   uint64_t lane_next(bool first)                       optional (a session's backend, with
//                                                        kLaneInRegisters): the lane's next epoch
//                                                        from registers every thread holds (first:
//                                                        the call's seq too); no sync, no memory
//   void fail_counts(q, sent, expected)                  alltoallv count mismatch (does not return)
//   void quiet()                                         group: complete earlier one-sided puts
//
// Protocol (docs/COLLECTIVES.md): a collective is rounds; each round takes the channel's next
// epoch and the buffers of parity epoch % 2. Before writing into peer q's parity p, the writer
// waits for q's acknowledgement of the last round it wrote there (credits); after reading what
// q wrote in a round, the reader acknowledges it. Every word and slot has one writer: flags and
// slots are indexed by source; the ring region is written by the channel's ring predecessor.
#include <cstdint>
#include <cstring>

#include "gpucomm/collectives/layout.hpp"
#include "gpucomm/collectives/numeric.hpp"
#include "gpucomm/collectives/plan.hpp"

#if defined(__CUDACC__)
#define GPUCOMM_COLL_FN __device__ inline
// The bandwidth algorithms stay out of line in kernels: the LL lane and the barrier, inlined into
// the caller, then run as a short straight path instead of through a large function whose code
// (every algorithm of the dispatch) misses the instruction cache on every call.
#define GPUCOMM_COLL_OUTLINE __device__ __noinline__
#else
#define GPUCOMM_COLL_FN inline
#define GPUCOMM_COLL_OUTLINE inline
#endif

namespace gpucomm::coll {

// One collective's arguments (a kernel parameter on GPU PEs). Counts and displacements are
// elements; `root` is a team rank (-1 for unrooted operations).
struct Call {
  CollOp op;
  DataType dt;
  RedOp redop;
  Algorithm algo;
  int32_t root;
  uint32_t sig;
  uint32_t channels;
  uint32_t reserved;
  uint64_t count;
  const void* send;
  void* recv;
  const uint64_t* send_counts;  // alltoallv
  const uint64_t* send_displs;
  const uint64_t* recv_counts;
  const uint64_t* recv_displs;
};

// This PE's copy of one channel of the team workspace (layout.hpp).
struct ChanView {
  char* base;
  ChannelLayout lay;
  Sizes s;
  GPUCOMM_HD uint64_t* epoch() const { return reinterpret_cast<uint64_t*>(base + lay.local); }
  GPUCOMM_HD uint64_t* seq() const { return epoch() + 1; }
  GPUCOMM_HD uint64_t* lane() const { return epoch() + 2; }  // the LL lane's epoch
  GPUCOMM_HD uint64_t* sent(uint32_t p, int q) const {
    return epoch() + 3 + static_cast<uint64_t>(p) * static_cast<uint64_t>(s.n) + static_cast<uint64_t>(q);
  }
  GPUCOMM_HD uint64_t* flag(uint32_t p, int src) const {
    return reinterpret_cast<uint64_t*>(base + lay.flags) + static_cast<uint64_t>(p) * static_cast<uint64_t>(s.n) +
           static_cast<uint64_t>(src);
  }
  GPUCOMM_HD uint64_t* ack(int src) const {
    return reinterpret_cast<uint64_t*>(base + lay.acks) + static_cast<uint64_t>(src);
  }
  GPUCOMM_HD char* slot(uint32_t p, int src) const {
    return base + lay.scratch + p * lay.scratch_parity + static_cast<uint64_t>(src) * s.slot;
  }
  GPUCOMM_HD char* ring(uint32_t p) const {
    return base + lay.scratch + p * lay.scratch_parity + static_cast<uint64_t>(s.n) * s.slot;
  }
  GPUCOMM_HD uint64_t* ll(uint32_t p, int src) const {
    return reinterpret_cast<uint64_t*>(base + lay.ll + p * lay.ll_parity + static_cast<uint64_t>(src) * s.ll);
  }
};

GPUCOMM_HD ChanView chan_view(const CollHandle& h, uint32_t c) {
  ChanView v{};
  v.s.n = h.team.size;
  v.s.slot = h.slot_bytes;
  v.s.ring = h.ring_bytes;
  v.s.ll = h.ll_bytes;
  v.s.per_node = h.per_node;
  v.lay = channel_layout(h.team.size, h.slot_bytes, h.ring_bytes, h.ll_bytes);
  v.base = h.ws + h.channel_offset + static_cast<uint64_t>(c) * h.channel_stride;
  return v;
}

// Elements a channel slices: the buffer (allreduce, reduce, broadcast) or one block.
GPUCOMM_HD uint64_t sliced_count(const Call& c) {
  return c.count;
}

namespace algo {

GPUCOMM_HD int mod(int a, int n) {
  return ((a % n) + n) % n;
}
GPUCOMM_HD uint64_t min64(uint64_t a, uint64_t b) {
  return a < b ? a : b;
}
// Part size for cutting `len` into `parts` pieces of at most `cap`, 16-byte aligned where possible.
GPUCOMM_HD uint64_t part_size(uint64_t len, uint64_t parts, size_t elem) {
  const uint64_t a = elem >= 16 ? 1 : 16 / elem;
  const uint64_t p = (len + parts - 1) / parts;
  return (p + a - 1) / a * a;
}

// Peer sets, as "call f(q) for every q of the set".
// Every member but `me`; a one-member team is its own peer (the algorithms run at n == 1 only when
// the protocol is forced: kCollForceProtocol).
struct Others {
  int n, me;
  template <class F>
  GPUCOMM_HD void operator()(F&& f) const {
    if (n == 1) f(me);
    for (int k = 1; k < n; ++k) f((me + k) % n);
  }
};
struct One {
  int q;
  template <class F>
  GPUCOMM_HD void operator()(F&& f) const {
    if (q >= 0) f(q);
  }
};
struct NoPeer {
  template <class F>
  GPUCOMM_HD void operator()(F&&) const {}
};
// Members of one row (a node) or one column (a local rank) of the node table, except `me`.
struct TableLine {
  const int32_t* table;
  int stride, count, step, me;  // member i: table[first + i * step]
  int first;
  template <class F>
  GPUCOMM_HD void operator()(F&& f) const {
    for (int i = 0; i < count; ++i) {
      const int q = table[first + i * step];
      if (q != me) f(q);
    }
  }
};
template <class X, class Y>
struct Both {
  X x;
  Y y;
  template <class F>
  GPUCOMM_HD void operator()(F&& f) const {
    x(f);
    y(f);
  }
};
// The ranks of the dissemination barrier's rounds: targets (me + 2^k) or sources (me - 2^k).
struct Dissemination {
  int n, me, sign;
  template <class F>
  GPUCOMM_HD void operator()(F&& f) const {
    for (int d = 1; d < n; d <<= 1) f(mod(me + sign * d, n));
  }
};

// Starts a collective on this channel: bumps its sequence number (diagnostics name it).
template <class B>
GPUCOMM_COLL_FN void begin_collective(B& b) {
  if (b.leader()) b.local_store(b.view().seq(), b.local_load(b.view().seq()) + 1);
}

// Starts a round: the next epoch, and the credits of every peer this round writes into.
template <class B, class Targets>
GPUCOMM_COLL_FN uint64_t begin_round(B& b, Targets targets) {
  const ChanView& v = b.view();
  uint64_t e = 0;
  if (b.leader()) {
    e = b.local_load(v.epoch()) + 1;
    b.local_store(v.epoch(), e);
    const uint32_t p = static_cast<uint32_t>(e & 1);
    targets([&](int q) {
      const uint64_t last = b.local_load(v.sent(p, q));
      if (last != 0) b.wait_ack(v.ack(q), last, q);
      b.local_store(v.sent(p, q), e);
    });
  }
  return b.bcast(e);
}
// Ends a round: acknowledges to every source that its data of round `e` has been read.
template <class B, class Sources>
GPUCOMM_COLL_FN void end_round(B& b, uint64_t e, Sources sources) {
  b.publish();
  if (b.leader()) {
    const int me = b.rank();
    sources([&](int q) { b.signal(q, b.view().ack(me), e); });
  }
}

template <class B, class Each>
GPUCOMM_COLL_FN void wait_from(B& b, uint32_t p, uint64_t e, uint32_t step, uint32_t sig, Each each) {
  const ChanView& v = b.view();
  b.wait_flags([&](int q) { return v.flag(p, q); }, stamp_of(e, step), sig, each);
}

template <class S, class B>
GPUCOMM_COLL_FN void copy_elems(B& b, S* dst, const S* src, uint64_t n) {
  if (dst == src) return;
  for (uint64_t i = static_cast<uint64_t>(b.tid()); i < n; i += static_cast<uint64_t>(b.nthreads())) dst[i] = src[i];
}
// dst = from_acc(to_acc(src)) elementwise: a one-member reduction.
template <DataType DT, class B>
GPUCOMM_COLL_FN void convert_elems(B& b, typename Num<DT>::S* dst, const typename Num<DT>::S* src, uint64_t n) {
  using N = Num<DT>;
  for (uint64_t i = static_cast<uint64_t>(b.tid()); i < n; i += static_cast<uint64_t>(b.nthreads()))
    dst[i] = N::from_acc(N::to_acc(src[i]));
}

// Rank-order fold of element i: x(r, i) is member r's value.
template <DataType DT, class X>
GPUCOMM_HD typename Num<DT>::A fold_ranks(RedOp op, int n, X&& x) {
  using N = Num<DT>;
  typename N::A acc = N::to_acc(x(0));
  for (int r = 1; r < n; ++r) acc = apply(op, acc, N::to_acc(x(r)));
  return acc;
}

// ---------------------------------------------------------------- one-shot (push)

// allreduce, reduce (to root), reduce-scatter: every source pushes into its slot of the reducer.
template <DataType DT, class B>
GPUCOMM_COLL_OUTLINE void reduce_oneshot(B& b, const Call& call, Range sl) {
  using N = Num<DT>;
  using S = typename N::S;
  const ChanView& v = b.view();
  const int n = b.size(), me = b.rank();
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const uint64_t w = window_elems(call.op, Algorithm::oneshot, DT, v.s);
  const bool scatter = call.op == CollOp::reduce_scatter;
  const bool to_root = call.op == CollOp::reduce;
  const uint64_t blk = call.count;
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    const bool reducer = !to_root || me == call.root;
    uint64_t e;
    if (to_root) {
      e = me == call.root ? begin_round(b, NoPeer{}) : begin_round(b, One{call.root});
    } else {
      e = begin_round(b, Others{n, me});
    }
    const uint32_t p = static_cast<uint32_t>(e & 1);
    auto push = [&](int q) {
      const S* src = send + (scatter ? static_cast<uint64_t>(q) * blk : 0) + off;
      b.put_signal(q, v.slot(p, me), src, len * sizeof(S), v.flag(p, me), flag_word(call.sig, e, 0));
    };
    if (to_root) {
      if (me != call.root) push(call.root);
    } else {
      Others{n, me}(push);
    }
    if (reducer) {
      wait_from(b, p, e, 0, call.sig, Others{n, me});
      const S* mine = send + (scatter ? static_cast<uint64_t>(me) * blk : 0) + off;
      for (uint64_t i = static_cast<uint64_t>(b.tid()); i < len; i += static_cast<uint64_t>(b.nthreads())) {
        recv[off + i] = N::from_acc(fold_ranks<DT>(
            call.redop, n, [&](int r) { return r == me ? mine[i] : reinterpret_cast<const S*>(v.slot(p, r))[i]; }));
      }
      end_round(b, e, Others{n, me});
    } else {
      end_round(b, e, NoPeer{});
    }
  }
}

// allgather, alltoall, broadcast: blocks pushed into the destinations' slots and copied out.
template <class S, class B>
GPUCOMM_COLL_OUTLINE void move_oneshot(B& b, const Call& call, Range sl) {
  const ChanView& v = b.view();
  const int n = b.size(), me = b.rank();
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const uint64_t w = v.s.slot / sizeof(S);
  const uint64_t blk = call.count;
  const bool bcast = call.op == CollOp::broadcast, a2a = call.op == CollOp::alltoall;
  // This PE's own part.
  if (bcast) {
    if (me == call.root) copy_elems(b, recv + sl.lo, send + sl.lo, sl.size());
  } else {
    const uint64_t src = a2a ? static_cast<uint64_t>(me) * blk : 0;
    copy_elems(b, recv + static_cast<uint64_t>(me) * blk + sl.lo, send + src + sl.lo, sl.size());
  }
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    uint64_t e;
    if (bcast) {
      e = me == call.root ? begin_round(b, Others{n, me}) : begin_round(b, NoPeer{});
    } else {
      e = begin_round(b, Others{n, me});
    }
    const uint32_t p = static_cast<uint32_t>(e & 1);
    auto push = [&](int q) {
      const S* src = send + (a2a ? static_cast<uint64_t>(q) * blk : 0) + off;
      b.put_signal(q, v.slot(p, me), src, len * sizeof(S), v.flag(p, me), flag_word(call.sig, e, 0));
    };
    if (!bcast || me == call.root) Others{n, me}(push);
    if (bcast) {
      if (me != call.root) {
        wait_from(b, p, e, 0, call.sig, One{call.root});
        copy_elems(b, recv + off, reinterpret_cast<const S*>(v.slot(p, call.root)), len);
        end_round(b, e, One{call.root});
      } else {
        end_round(b, e, NoPeer{});
      }
      continue;
    }
    wait_from(b, p, e, 0, call.sig, Others{n, me});
    Others{n, me}([&](int q) {
      copy_elems(b, recv + static_cast<uint64_t>(q) * blk + off, reinterpret_cast<const S*>(v.slot(p, q)), len);
    });
    end_round(b, e, Others{n, me});
  }
}

// ---------------------------------------------------------------- low latency (LL): the lane
//
// The LL algorithms run on the channel's lane: its own epoch (`lane`, this PE's word, apart from
// the rounds' epoch) and the LL slots of parity lane % 2. Every word a writer stores carries
// ll_flag(lane) beside 4 bytes of payload (the header word: the call's signature), so a reader
// polls the words themselves: no flag, no fence, no credit and no acknowledgement. Reuse is safe
// because every lane round is all-to-all: a writer starts round e + 2 into q's parity p only after
// reading q's round e + 1, which q wrote after its whole group finished reading round e (each lane
// round begins with a group barrier, lane_begin). The barrier is a lane round of header words only,
// released and acquired at the scope the team crosses (docs/COLLECTIVES.md, "The lane").

// The leader's next lane epoch; the call's first round also bumps the sequence number
// (begin_collective), both words loaded before either is stored: one memory trip.
struct LaneWords {
  uint64_t seq, lane;
};
template <class B>
GPUCOMM_COLL_FN LaneWords load_lane(B& b, bool first) {
  const ChanView& v = b.view();
  return LaneWords{first ? b.local_load(v.seq()) : 0, b.local_load(v.lane())};
}
template <class B>
GPUCOMM_COLL_FN uint64_t store_lane(B& b, bool first, LaneWords w) {
  const ChanView& v = b.view();
  if (first) b.local_store(v.seq(), w.seq + 1);
  b.local_store(v.lane(), w.lane + 1);
  return w.lane + 1;
}
template <class B>
GPUCOMM_COLL_FN uint64_t next_lane(B& b, bool first) {
  return store_lane(b, first, load_lane(b, first));
}
// Whether the backend keeps the lane's words in its group's registers (a session): then a round
// takes the next epoch without a memory trip (b.lane_next) and the words go back to memory once,
// when the session ends.
template <class B>
inline constexpr bool lane_in_registers = requires { B::kLaneInRegisters; };
// Starts a lane round: the next lane epoch, to the whole group (after a group barrier).
template <class B>
GPUCOMM_COLL_FN uint64_t lane_begin(B& b, bool first) {
  if constexpr (lane_in_registers<B>) {
    b.sync();
    return b.lane_next(first);
  } else {
    return b.bcast(b.leader() ? next_lane(b, first) : 0);
  }
}

// Pushes `bytes` of src as LL words into q's LL slot of this PE (header word: the signature).
template <class B>
GPUCOMM_COLL_FN void ll_push(B& b, int q, uint32_t p, uint32_t flag, uint32_t sig, const unsigned char* src,
                             uint64_t bytes) {
  const ChanView& v = b.view();
  uint64_t* slot = v.ll(p, b.rank());
  const uint64_t words = (bytes + 3) / 4;
  for (uint64_t w = static_cast<uint64_t>(b.tid()); w < words; w += static_cast<uint64_t>(b.nthreads())) {
    uint32_t payload = 0;
    const uint64_t at = w * 4, take = bytes - at < 4 ? bytes - at : 4;
    std::memcpy(&payload, src + at, take);
    b.ll_store(q, slot + 1 + w, ll_word(flag, payload));
  }
  if (b.tid() == b.nthreads() - 1) b.ll_store(q, slot, ll_word(flag, sig));
}
// One thread (the group's last: it has the least data work) checks every source's header word
// against this call's signature while the others read data; a mismatch fails the call.
template <class B, class Each>
GPUCOMM_COLL_FN void ll_headers(B& b, uint32_t p, uint32_t flag, uint32_t sig, Each each) {
  if (b.tid() != b.nthreads() - 1) return;
  each([&](int q) {
    const uint32_t theirs = static_cast<uint32_t>(b.ll_wait(b.view().ll(p, q), flag, q));
    if (theirs != sig) b.fail_mismatch(q, sig, theirs);
  });
}
// Bytes [at, at + take) of source q's LL slot (take <= 8, within one or two words).
template <class B>
GPUCOMM_COLL_FN void ll_read(B& b, uint32_t p, int q, uint32_t flag, uint64_t at, unsigned char* out, uint64_t take) {
  const uint64_t* slot = b.view().ll(p, q) + 1;
  uint64_t w = at / 4;
  uint64_t done = 0;
  while (done < take) {
    const uint32_t payload = static_cast<uint32_t>(b.ll_wait(slot + w, flag, q));
    const uint64_t in = (at + done) % 4, n = (4 - in) < (take - done) ? (4 - in) : (take - done);
    unsigned char bytes[4];
    std::memcpy(bytes, &payload, 4);
    std::memcpy(out + done, bytes + in, n);
    done += n;
    ++w;
  }
}

// allreduce and reduce-scatter in LL words: groups of elements that fill whole words. A one-member
// team (the protocol forced) reads its own contribution back from its LL slot.
template <DataType DT, class B>
GPUCOMM_COLL_FN void reduce_ll(B& b, const Call& call, Range sl) {
  using N = Num<DT>;
  using S = typename N::S;
  using A = typename N::A;
  const ChanView& v = b.view();
  const int n = b.size(), me = b.rank();
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const bool scatter = call.op == CollOp::reduce_scatter;
  const uint64_t blk = call.count;
  const uint64_t w = window_elems(call.op, Algorithm::oneshot_ll, DT, v.s);
  constexpr uint64_t per = sizeof(S) >= 4 ? 1 : 4 / sizeof(S);  // elements per group
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    const uint64_t e = lane_begin(b, off == sl.lo);
    const uint32_t p = static_cast<uint32_t>(e & 1), f = ll_flag(e);
    Others{n, me}([&](int q) {
      const S* src = send + (scatter ? static_cast<uint64_t>(q) * blk : 0) + off;
      ll_push(b, q, p, f, call.sig, reinterpret_cast<const unsigned char*>(src), len * sizeof(S));
    });
    ll_headers(b, p, f, call.sig, Others{n, me});
    const S* mine = send + (scatter ? static_cast<uint64_t>(me) * blk : 0) + off;
    const uint64_t groups = (len + per - 1) / per;
    for (uint64_t g = static_cast<uint64_t>(b.tid()); g < groups; g += static_cast<uint64_t>(b.nthreads())) {
      const uint64_t first = g * per, cnt = len - first < per ? len - first : per;
      A acc[per] = {};
      for (int r = 0; r < n; ++r) {
        S vals[per];
        if (r == me && n > 1) {
          for (uint64_t j = 0; j < cnt; ++j) vals[j] = mine[first + j];
        } else {
          ll_read(b, p, r, f, first * sizeof(S), reinterpret_cast<unsigned char*>(vals), cnt * sizeof(S));
        }
        for (uint64_t j = 0; j < cnt; ++j)
          acc[j] = r == 0 ? N::to_acc(vals[j]) : apply(call.redop, acc[j], N::to_acc(vals[j]));
      }
      for (uint64_t j = 0; j < cnt; ++j) recv[off + first + j] = N::from_acc(acc[j]);
    }
  }
}

// allgather in LL words.
template <class S, class B>
GPUCOMM_COLL_FN void allgather_ll(B& b, const Call& call, Range sl) {
  const ChanView& v = b.view();
  const int n = b.size(), me = b.rank();
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const uint64_t blk = call.count;
  const uint64_t w = ll_payload(v.s) / sizeof(S);
  if (n > 1) copy_elems(b, recv + static_cast<uint64_t>(me) * blk + sl.lo, send + sl.lo, sl.size());
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    const uint64_t e = lane_begin(b, off == sl.lo);
    const uint32_t p = static_cast<uint32_t>(e & 1), f = ll_flag(e);
    Others{n, me}([&](int q) {
      ll_push(b, q, p, f, call.sig, reinterpret_cast<const unsigned char*>(send + off), len * sizeof(S));
    });
    ll_headers(b, p, f, call.sig, Others{n, me});
    const uint64_t bytes = len * sizeof(S), words = (bytes + 3) / 4;
    Others{n, me}([&](int q) {
      unsigned char* dst = reinterpret_cast<unsigned char*>(recv + static_cast<uint64_t>(q) * blk + off);
      for (uint64_t wd = static_cast<uint64_t>(b.tid()); wd < words; wd += static_cast<uint64_t>(b.nthreads())) {
        const uint64_t at = wd * 4, take = bytes - at < 4 ? bytes - at : 4;
        ll_read(b, p, q, f, at, dst + at, take);
      }
    });
  }
}

// The barrier on the lane: the group's earlier accesses and puts complete, then the leader
// releases them with one fence, stores the header word (the signature) into every peer's LL slot
// and acquires every peer's header word in its own: one fence, one store and one poll per peer.
// The leader loads its lane words before the release, so their trip overlaps the group barrier
// and the fence (only this PE's leaders write them, one collective per team at a time); a
// session's group holds them in registers and touches no lane word at all.
template <class B>
GPUCOMM_COLL_FN void barrier_ll(B& b, const Call& call) {
  const ChanView& v = b.view();
  const int n = b.size(), me = b.rank();
  const bool lead = b.leader();
  LaneWords words{};
  if constexpr (!lane_in_registers<B>) {
    if (lead) words = load_lane(b, true);
  }
  b.release_group();
  uint64_t e = 0;
  if constexpr (lane_in_registers<B>) {
    e = b.lane_next(true);
  } else {
    if (lead) e = store_lane(b, true, words);
  }
  if (lead) {
    const uint32_t p = static_cast<uint32_t>(e & 1), f = ll_flag(e);
    Others{n, me}([&](int q) { b.ll_store(q, v.ll(p, me), ll_word(f, call.sig)); });
    Others{n, me}([&](int q) {
      const uint32_t theirs = static_cast<uint32_t>(b.ll_wait_acquire(v.ll(p, q), f, q));
      if (theirs != call.sig) b.fail_mismatch(q, call.sig, theirs);
    });
  }
  b.sync();
}

// ---------------------------------------------------------------- two-shot

// allreduce and reduce: reduce-scatter of shards, then all-gather (or gather to the root).
template <DataType DT, class B>
GPUCOMM_COLL_OUTLINE void reduce_twoshot(B& b, const Call& call, Range sl) {
  using N = Num<DT>;
  using S = typename N::S;
  const ChanView& v = b.view();
  const int n = b.size(), me = b.rank();
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const bool to_root = call.op == CollOp::reduce;
  const uint64_t half = align_down16(v.s.slot / 2);
  const uint64_t w = window_elems(call.op, Algorithm::twoshot, DT, v.s);
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    const uint64_t part = part_size(len, static_cast<uint64_t>(n), sizeof(S));
    const uint64_t e = begin_round(b, Others{n, me});
    const uint32_t p = static_cast<uint32_t>(e & 1);
    Others{n, me}([&](int q) {
      const Range r = part_range(len, part, static_cast<uint64_t>(q));
      b.put_signal(q, v.slot(p, me), send + off + r.lo, r.size() * sizeof(S), v.flag(p, me), flag_word(call.sig, e, 0));
    });
    wait_from(b, p, e, 0, call.sig, Others{n, me});
    const Range mr = part_range(len, part, static_cast<uint64_t>(me));
    // This PE's reduced shard: into recv (allreduce, or the root's reduce), else into its own slot.
    S* out = (!to_root || me == call.root) ? recv + off + mr.lo : reinterpret_cast<S*>(v.slot(p, me));
    for (uint64_t i = static_cast<uint64_t>(b.tid()); i < mr.size(); i += static_cast<uint64_t>(b.nthreads())) {
      out[i] = N::from_acc(fold_ranks<DT>(call.redop, n, [&](int r) {
        return r == me ? send[off + mr.lo + i] : reinterpret_cast<const S*>(v.slot(p, r))[i];
      }));
    }
    b.sync();
    auto gather = [&](int q) {
      b.put_signal(q, v.slot(p, me) + half, out, mr.size() * sizeof(S), v.flag(p, me), flag_word(call.sig, e, 1));
    };
    auto collect = [&](int q) {
      const Range r = part_range(len, part, static_cast<uint64_t>(q));
      copy_elems(b, recv + off + r.lo, reinterpret_cast<const S*>(v.slot(p, q) + half), r.size());
    };
    if (!to_root) {
      Others{n, me}(gather);
      wait_from(b, p, e, 1, call.sig, Others{n, me});
      Others{n, me}(collect);
    } else if (me != call.root) {
      gather(call.root);
    } else {
      wait_from(b, p, e, 1, call.sig, Others{n, me});
      Others{n, me}(collect);
    }
    end_round(b, e, Others{n, me});
  }
}

// broadcast: the root scatters shards, then every PE all-gathers them.
template <class S, class B>
GPUCOMM_COLL_OUTLINE void broadcast_twoshot(B& b, const Call& call, Range sl) {
  const ChanView& v = b.view();
  const int n = b.size(), me = b.rank(), root = call.root;
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const uint64_t half = align_down16(v.s.slot / 2);
  const uint64_t w = n * (half / sizeof(S));
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    const uint64_t part = part_size(len, static_cast<uint64_t>(n), sizeof(S));
    const uint64_t e = begin_round(b, Others{n, me});
    const uint32_t p = static_cast<uint32_t>(e & 1);
    const Range mr = part_range(len, part, static_cast<uint64_t>(me));
    if (me == root) {
      Others{n, me}([&](int q) {
        const Range r = part_range(len, part, static_cast<uint64_t>(q));
        b.put_signal(q, v.slot(p, me), send + off + r.lo, r.size() * sizeof(S), v.flag(p, me),
                     flag_word(call.sig, e, 0));
      });
      copy_elems(b, recv + off + mr.lo, send + off + mr.lo, mr.size());
    } else {
      wait_from(b, p, e, 0, call.sig, One{root});
      copy_elems(b, recv + off + mr.lo, reinterpret_cast<const S*>(v.slot(p, root)), mr.size());
    }
    b.sync();
    Others{n, me}([&](int q) {
      b.put_signal(q, v.slot(p, me) + half, recv + off + mr.lo, mr.size() * sizeof(S), v.flag(p, me),
                   flag_word(call.sig, e, 1));
    });
    wait_from(b, p, e, 1, call.sig, Others{n, me});
    Others{n, me}([&](int q) {
      const Range r = part_range(len, part, static_cast<uint64_t>(q));
      copy_elems(b, recv + off + r.lo, reinterpret_cast<const S*>(v.slot(p, q) + half), r.size());
    });
    end_round(b, e, Others{n, me});
  }
}

// ---------------------------------------------------------------- ring (one ring per channel)

struct RingPos {
  int n, pos, next, prev;
  bool fwd;
};
template <class B>
GPUCOMM_COLL_FN RingPos ring_of(B& b) {
  RingPos r{};
  r.n = b.size();
  r.fwd = ring_forward(b.channel());
  r.pos = ring_pos(b.rank(), r.n, r.fwd);
  r.next = ring_rank(r.pos + 1, r.n, r.fwd);
  r.prev = ring_rank(r.pos - 1, r.n, r.fwd);
  return r;
}

// allreduce and reduce: reduce-scatter along the ring (chunk k starts at position k, owner k - 1),
// partials rounded to the storage type at every hop, then all-gather (allreduce) or a gather of
// the owned chunks at the root (reduce).
template <DataType DT, class B>
GPUCOMM_COLL_OUTLINE void reduce_ring(B& b, const Call& call, Range sl) {
  using N = Num<DT>;
  using S = typename N::S;
  const ChanView& v = b.view();
  const RingPos rp = ring_of(b);
  const int n = rp.n, me = b.rank();
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const bool to_root = call.op == CollOp::reduce;
  const uint64_t sub = ring_sub_bytes(call.op, v.s);
  const uint64_t w = window_elems(call.op, Algorithm::ring, DT, v.s);
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    const uint64_t part = part_size(len, static_cast<uint64_t>(n), sizeof(S));
    auto chunk = [&](int k) { return part_range(len, part, static_cast<uint64_t>(mod(k, n))); };
    uint64_t e;
    if (to_root && me != call.root && call.root != rp.next) {
      e = begin_round(b, Both<One, One>{One{rp.next}, One{call.root}});
    } else {
      e = begin_round(b, One{rp.next});
    }
    const uint32_t p = static_cast<uint32_t>(e & 1);
    // Partials live in recv (allreduce) or in this PE's own slot (reduce: recv may be absent).
    S* temp = to_root ? reinterpret_cast<S*>(v.slot(p, me)) : recv + off;
    const uint64_t tbase = 0;
    auto tptr = [&](Range r) { return to_root ? temp + tbase : temp + r.lo; };
    for (int s = 0; s < n - 1; ++s) {
      const Range rs = chunk(rp.pos - s);
      const S* src = s == 0 ? send + off + rs.lo : tptr(rs);
      b.put_signal(rp.next, v.ring(p) + static_cast<uint64_t>(s) * sub, src, rs.size() * sizeof(S), v.flag(p, me),
                   flag_word(call.sig, e, static_cast<uint32_t>(s)));
      wait_from(b, p, e, static_cast<uint32_t>(s), call.sig, One{rp.prev});
      const Range rr = chunk(rp.pos - s - 1);
      const S* in = reinterpret_cast<const S*>(v.ring(p) + static_cast<uint64_t>(s) * sub);
      S* out = tptr(rr);
      for (uint64_t i = static_cast<uint64_t>(b.tid()); i < rr.size(); i += static_cast<uint64_t>(b.nthreads()))
        out[i] = N::from_acc(apply(call.redop, N::to_acc(in[i]), N::to_acc(send[off + rr.lo + i])));
      b.sync();
    }
    // This PE now owns chunk pos + 1.
    const Range own = chunk(rp.pos + 1);
    if (!to_root) {
      for (int s = 0; s < n - 1; ++s) {
        const uint32_t step = static_cast<uint32_t>(n - 1 + s);
        const Range rs = chunk(rp.pos + 1 - s);
        b.put_signal(rp.next, v.ring(p) + static_cast<uint64_t>(step) * sub, recv + off + rs.lo, rs.size() * sizeof(S),
                     v.flag(p, me), flag_word(call.sig, e, step));
        wait_from(b, p, e, step, call.sig, One{rp.prev});
        const Range rr = chunk(rp.pos - s);
        copy_elems(b, recv + off + rr.lo, reinterpret_cast<const S*>(v.ring(p) + static_cast<uint64_t>(step) * sub),
                   rr.size());
        b.sync();
      }
      end_round(b, e, One{rp.prev});
      continue;
    }
    const uint32_t gstep = static_cast<uint32_t>(n - 1);
    if (me != call.root) {
      b.put_signal(call.root, v.slot(p, me), temp, own.size() * sizeof(S), v.flag(p, me),
                   flag_word(call.sig, e, gstep));
      end_round(b, e, One{rp.prev});
      continue;
    }
    copy_elems(b, recv + off + own.lo, temp, own.size());
    wait_from(b, p, e, gstep, call.sig, Others{n, me});
    Others{n, me}([&](int q) {
      const Range rq = chunk(ring_pos(q, n, rp.fwd) + 1);
      copy_elems(b, recv + off + rq.lo, reinterpret_cast<const S*>(v.slot(p, q)), rq.size());
    });
    end_round(b, e, Others{n, me});
  }
}

// reduce-scatter along the ring: block of position k starts at position k + 1 and ends at k.
template <DataType DT, class B>
GPUCOMM_COLL_OUTLINE void reduce_scatter_ring(B& b, const Call& call, Range sl) {
  using N = Num<DT>;
  using S = typename N::S;
  const ChanView& v = b.view();
  const RingPos rp = ring_of(b);
  const int n = rp.n, me = b.rank();
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const uint64_t blk = call.count;
  const uint64_t sub = ring_sub_bytes(call.op, v.s);
  const uint64_t w = window_elems(call.op, Algorithm::ring, DT, v.s);
  auto block = [&](int k) { return static_cast<uint64_t>(ring_rank(k, n, rp.fwd)) * blk; };
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    const uint64_t e = begin_round(b, One{rp.next});
    const uint32_t p = static_cast<uint32_t>(e & 1);
    S* temp = reinterpret_cast<S*>(v.slot(p, me));
    for (int s = 0; s < n - 1; ++s) {
      const S* src = s == 0 ? send + block(rp.pos - 1) + off : temp;
      b.put_signal(rp.next, v.ring(p) + static_cast<uint64_t>(s) * sub, src, len * sizeof(S), v.flag(p, me),
                   flag_word(call.sig, e, static_cast<uint32_t>(s)));
      wait_from(b, p, e, static_cast<uint32_t>(s), call.sig, One{rp.prev});
      const int kr = rp.pos - s - 2;
      const S* in = reinterpret_cast<const S*>(v.ring(p) + static_cast<uint64_t>(s) * sub);
      const S* mine = send + block(kr) + off;
      S* out = s == n - 2 ? recv + off : temp;
      for (uint64_t i = static_cast<uint64_t>(b.tid()); i < len; i += static_cast<uint64_t>(b.nthreads()))
        out[i] = N::from_acc(apply(call.redop, N::to_acc(in[i]), N::to_acc(mine[i])));
      b.sync();
    }
    end_round(b, e, One{rp.prev});
  }
}

// allgather along the ring.
template <class S, class B>
GPUCOMM_COLL_OUTLINE void allgather_ring(B& b, const Call& call, Range sl) {
  const ChanView& v = b.view();
  const RingPos rp = ring_of(b);
  const int n = rp.n, me = b.rank();
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const uint64_t blk = call.count;
  const uint64_t sub = ring_sub_bytes(call.op, v.s);
  const uint64_t w = sub / sizeof(S);
  auto block = [&](int k) { return recv + static_cast<uint64_t>(ring_rank(k, n, rp.fwd)) * blk; };
  copy_elems(b, recv + static_cast<uint64_t>(me) * blk + sl.lo, send + sl.lo, sl.size());
  b.sync();
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    const uint64_t e = begin_round(b, One{rp.next});
    const uint32_t p = static_cast<uint32_t>(e & 1);
    for (int s = 0; s < n - 1; ++s) {
      b.put_signal(rp.next, v.ring(p) + static_cast<uint64_t>(s) * sub, block(rp.pos - s) + off, len * sizeof(S),
                   v.flag(p, me), flag_word(call.sig, e, static_cast<uint32_t>(s)));
      wait_from(b, p, e, static_cast<uint32_t>(s), call.sig, One{rp.prev});
      copy_elems(b, block(rp.pos - s - 1) + off, reinterpret_cast<const S*>(v.ring(p) + static_cast<uint64_t>(s) * sub),
                 len);
      b.sync();
    }
    end_round(b, e, One{rp.prev});
  }
}

// broadcast along the ring from the root: kChainSlots pieces per round, each forwarded as soon
// as it arrived (a pipelined chain).
template <class S, class B>
GPUCOMM_COLL_OUTLINE void broadcast_ring(B& b, const Call& call, Range sl) {
  const ChanView& v = b.view();
  const RingPos rp = ring_of(b);
  const int n = rp.n, me = b.rank();
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const uint64_t sub = ring_sub_bytes(call.op, v.s);
  const uint64_t w = kChainSlots * (sub / sizeof(S));
  const int dist = mod(rp.pos - ring_pos(call.root, n, rp.fwd), n);
  const bool last = dist == n - 1;
  if (dist == 0) copy_elems(b, recv + sl.lo, send + sl.lo, sl.size());
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    const uint64_t part = part_size(len, kChainSlots, sizeof(S));
    const uint64_t e = last ? begin_round(b, NoPeer{}) : begin_round(b, One{rp.next});
    const uint32_t p = static_cast<uint32_t>(e & 1);
    for (uint32_t j = 0; j < kChainSlots; ++j) {
      const Range r = part_range(len, part, j);
      char* piece = v.ring(p) + static_cast<uint64_t>(j) * sub;
      if (dist != 0) wait_from(b, p, e, j, call.sig, One{rp.prev});
      if (!last) {
        const void* src = dist == 0 ? static_cast<const void*>(send + off + r.lo) : piece;
        b.put_signal(rp.next, piece, src, r.size() * sizeof(S), v.flag(p, me), flag_word(call.sig, e, j));
      }
      if (dist != 0) copy_elems(b, recv + off + r.lo, reinterpret_cast<const S*>(piece), r.size());
    }
    if (dist != 0) {
      end_round(b, e, One{rp.prev});
    } else {
      end_round(b, e, NoPeer{});
    }
  }
}

// ---------------------------------------------------------------- hierarchical

// allreduce over nodes of equal size m: node-local reduce-scatter into partials of the
// accumulation type, one-shot exchange of each shard among the PEs of the same local index
// (the rail; across nodes through the proxy), node-local all-gather of the results.
template <DataType DT, class B>
GPUCOMM_COLL_OUTLINE void allreduce_hierarchical(B& b, const Call& call, Range sl, const CollHandle& h) {
  using N = Num<DT>;
  using S = typename N::S;
  using A = typename N::A;
  const ChanView& v = b.view();
  const int me = b.rank();
  const int m = static_cast<int>(h.per_node), k = static_cast<int>(h.nodes);
  const int a = h.node_index, l = h.local_index;
  const int32_t* t = h.node_table;
  const TableLine row{t, m, m, 1, me, a * m};
  const TableLine col{t, m, k, m, me, l};
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const uint64_t shard = hier_shard(DT, v.s);
  const uint64_t o2 = align_up(shard * sizeof(S), 16), o3 = o2 + align_up(shard * sizeof(A), 16);
  const uint64_t w = static_cast<uint64_t>(m) * shard;
  for (uint64_t off = sl.lo; off < sl.hi; off += w) {
    const uint64_t len = min64(w, sl.hi - off);
    const uint64_t part = part_size(len, static_cast<uint64_t>(m), sizeof(S));
    const uint64_t e = begin_round(b, Both<TableLine, TableLine>{row, col});
    const uint32_t p = static_cast<uint32_t>(e & 1);
    const Range mr = part_range(len, part, static_cast<uint64_t>(l));
    // 1: node-local shards (storage type) to their owners.
    for (int j = 0; j < m; ++j) {
      const int q = t[a * m + j];
      if (q == me) continue;
      const Range r = part_range(len, part, static_cast<uint64_t>(j));
      b.put_signal(q, v.slot(p, me), send + off + r.lo, r.size() * sizeof(S), v.flag(p, me), flag_word(call.sig, e, 0));
    }
    wait_from(b, p, e, 0, call.sig, row);
    A* partial = reinterpret_cast<A*>(v.slot(p, me) + o2);  // this PE's own slot: nobody else writes it
    for (uint64_t i = static_cast<uint64_t>(b.tid()); i < mr.size(); i += static_cast<uint64_t>(b.nthreads())) {
      A acc{};
      for (int j = 0; j < m; ++j) {
        const int q = t[a * m + j];
        const S x = q == me ? send[off + mr.lo + i] : reinterpret_cast<const S*>(v.slot(p, q))[i];
        acc = j == 0 ? N::to_acc(x) : apply(call.redop, acc, N::to_acc(x));
      }
      partial[i] = acc;
    }
    b.sync();
    // 2: node partials along the rail, folded in node order.
    for (int j = 0; j < k; ++j) {
      const int q = t[j * m + l];
      if (q == me) continue;
      b.put_signal(q, v.slot(p, me) + o2, partial, mr.size() * sizeof(A), v.flag(p, me), flag_word(call.sig, e, 1));
    }
    wait_from(b, p, e, 1, call.sig, col);
    for (uint64_t i = static_cast<uint64_t>(b.tid()); i < mr.size(); i += static_cast<uint64_t>(b.nthreads())) {
      A acc{};
      for (int j = 0; j < k; ++j) {
        const int q = t[j * m + l];
        const A x = q == me ? partial[i] : reinterpret_cast<const A*>(v.slot(p, q) + o2)[i];
        acc = j == 0 ? x : apply(call.redop, acc, x);
      }
      recv[off + mr.lo + i] = N::from_acc(acc);
    }
    b.sync();
    // 3: node-local all-gather of the results.
    for (int j = 0; j < m; ++j) {
      const int q = t[a * m + j];
      if (q == me) continue;
      b.put_signal(q, v.slot(p, me) + o3, recv + off + mr.lo, mr.size() * sizeof(S), v.flag(p, me),
                   flag_word(call.sig, e, 2));
    }
    wait_from(b, p, e, 2, call.sig, row);
    for (int j = 0; j < m; ++j) {
      const int q = t[a * m + j];
      if (q == me) continue;
      const Range r = part_range(len, part, static_cast<uint64_t>(j));
      copy_elems(b, recv + off + r.lo, reinterpret_cast<const S*>(v.slot(p, q) + o3), r.size());
    }
    end_round(b, e, Both<TableLine, TableLine>{row, col});
  }
}

// ---------------------------------------------------------------- alltoallv, barrier

// alltoallv: a first round exchanges, per pair, this channel's share of the count and the
// sender's largest share (so every PE knows how many rounds follow); then rounds of at most one
// slot per pair. Shares: each pair's count is sliced over the channels like a buffer.
template <class S, class B>
GPUCOMM_COLL_OUTLINE void alltoallv_oneshot(B& b, const Call& call) {
  const ChanView& v = b.view();
  const int n = b.size(), me = b.rank();
  const uint32_t c = b.channel();
  const S* send = static_cast<const S*>(call.send);
  S* recv = static_cast<S*>(call.recv);
  const uint64_t w = v.s.slot / sizeof(S);
  auto share = [&](uint64_t cnt) { return channel_slice(cnt, call.channels, c, sizeof(S)); };
  // Round 0: records {share of count to q, largest share of this PE} staged in this PE's own slot.
  const uint64_t e0 = begin_round(b, Others{n, me});
  const uint32_t p0 = static_cast<uint32_t>(e0 & 1);
  auto* stage = reinterpret_cast<uint64_t*>(v.slot(p0, me));
  if (b.leader()) {
    uint64_t mx = 0;
    for (int q = 0; q < n; ++q) mx = share(call.send_counts[q]).size() > mx ? share(call.send_counts[q]).size() : mx;
    for (int q = 0; q < n; ++q) {
      stage[2 * static_cast<uint64_t>(q)] = call.send_counts[q];
      stage[2 * static_cast<uint64_t>(q) + 1] = mx;
    }
  }
  b.sync();
  Others{n, me}([&](int q) {
    b.put_signal(q, v.slot(p0, me), stage + 2 * static_cast<uint64_t>(q), 16, v.flag(p0, me),
                 flag_word(call.sig, e0, 0));
  });
  wait_from(b, p0, e0, 0, call.sig, Others{n, me});
  uint64_t rounds = 0;
  if (b.leader()) {
    uint64_t mx = stage[1];
    for (int q = 0; q < n; ++q) {
      const uint64_t* rec =
          q == me ? stage + 2 * static_cast<uint64_t>(q) : reinterpret_cast<const uint64_t*>(v.slot(p0, q));
      if (rec[0] != call.recv_counts[q]) b.fail_counts(q, rec[0], call.recv_counts[q]);
      mx = rec[1] > mx ? rec[1] : mx;
    }
    rounds = (mx + w - 1) / w;
  }
  rounds = b.bcast(rounds);
  end_round(b, e0, Others{n, me});
  {
    const Range r = share(call.send_counts[me]);
    copy_elems(b, recv + call.recv_displs[me] + r.lo, send + call.send_displs[me] + r.lo, r.size());
  }
  for (uint64_t rd = 0; rd < rounds; ++rd) {
    const uint64_t e = begin_round(b, Others{n, me});
    const uint32_t p = static_cast<uint32_t>(e & 1);
    Others{n, me}([&](int q) {
      const Range r = share(call.send_counts[q]);
      const uint64_t lo = r.lo + rd * w, len = lo < r.hi ? min64(w, r.hi - lo) : 0;
      b.put_signal(q, v.slot(p, me), send + call.send_displs[q] + lo, len * sizeof(S), v.flag(p, me),
                   flag_word(call.sig, e, 0));
    });
    wait_from(b, p, e, 0, call.sig, Others{n, me});
    Others{n, me}([&](int q) {
      const Range r = share(call.recv_counts[q]);
      const uint64_t lo = r.lo + rd * w, len = lo < r.hi ? min64(w, r.hi - lo) : 0;
      copy_elems(b, recv + call.recv_displs[q] + lo, reinterpret_cast<const S*>(v.slot(p, q)), len);
    });
    end_round(b, e, Others{n, me});
  }
}

template <class B>
GPUCOMM_COLL_OUTLINE void barrier_oneshot(B& b, const Call& call) {
  const ChanView& v = b.view();
  const int n = b.size(), me = b.rank();
  const uint64_t e = begin_round(b, Others{n, me});
  const uint32_t p = static_cast<uint32_t>(e & 1);
  Others{n, me}([&](int q) { b.put_signal(q, v.slot(p, me), nullptr, 0, v.flag(p, me), flag_word(call.sig, e, 0)); });
  wait_from(b, p, e, 0, call.sig, Others{n, me});
  end_round(b, e, Others{n, me});
}

template <class B>
GPUCOMM_COLL_OUTLINE void barrier_dissemination(B& b, const Call& call) {
  const ChanView& v = b.view();
  const int n = b.size(), me = b.rank();
  const uint64_t e = begin_round(b, Dissemination{n, me, 1});
  const uint32_t p = static_cast<uint32_t>(e & 1);
  uint32_t k = 0;
  for (int d = 1; d < n; d <<= 1, ++k) {
    b.put_signal(mod(me + d, n), v.slot(p, me), nullptr, 0, v.flag(p, me), flag_word(call.sig, e, k));
    wait_from(b, p, e, k, call.sig, One{mod(me - d, n)});
  }
  end_round(b, e, Dissemination{n, me, -1});
}

}  // namespace algo

// ---------------------------------------------------------------- dispatch

// Whether a one-member team runs `call`'s protocol with itself as its peer (kCollForceProtocol and
// force_applies); the other calls keep the one-member short-cut.
template <class B>
GPUCOMM_COLL_FN bool forced_alone(const B& b, const Call& call) {
  return b.forced() && force_applies(call.op, call.algo);
}

// The part of `call` this channel does, for operations that combine values. Every member calls it
// with the same call on every channel (0 .. call.channels-1).
template <DataType DT, class B>
GPUCOMM_COLL_FN void run_reduction(B& b, const Call& call, const CollHandle& h) {
  using S = typename Num<DT>::S;
  const Range sl = channel_slice(call.count, call.channels, b.channel(), sizeof(S));
  const bool lane = call.algo == Algorithm::oneshot_ll && (b.size() > 1 || forced_alone(b, call));
  if (lane && sl.size() > 0) return algo::reduce_ll<DT>(b, call, sl);  // its first round bumps seq
  algo::begin_collective(b);
  if (lane) return;  // an empty slice
  if (b.size() == 1 && !forced_alone(b, call)) {
    if (call.recv) {
      algo::convert_elems<DT>(b, static_cast<S*>(call.recv) + sl.lo, static_cast<const S*>(call.send) + sl.lo,
                              sl.size());
    }
    return;
  }
  switch (call.algo) {
    case Algorithm::twoshot:
      return algo::reduce_twoshot<DT>(b, call, sl);
    case Algorithm::ring:
    case Algorithm::multiring:
      if (call.op == CollOp::reduce_scatter) return algo::reduce_scatter_ring<DT>(b, call, sl);
      return algo::reduce_ring<DT>(b, call, sl);
    case Algorithm::hierarchical:
      return algo::allreduce_hierarchical<DT>(b, call, sl, h);
    default:
      return algo::reduce_oneshot<DT>(b, call, sl);
  }
}

// Operations that move data (S: any type of the element size) and the barrier.
template <class S, class B>
GPUCOMM_COLL_FN void run_movement(B& b, const Call& call) {
  const bool lane = call.algo == Algorithm::oneshot_ll && (b.size() > 1 || forced_alone(b, call));
  if (call.op == CollOp::barrier && lane && b.channel() == 0) return algo::barrier_ll(b, call);  // bumps seq
  const Range sl = channel_slice(call.count, call.channels, b.channel(), sizeof(S));
  if (call.op == CollOp::allgather && lane && sl.size() > 0) return algo::allgather_ll<S>(b, call, sl);
  algo::begin_collective(b);
  if (call.op == CollOp::barrier) {
    b.quiet();
    if ((b.size() == 1 && !forced_alone(b, call)) || b.channel() != 0) return;
    if (call.algo == Algorithm::dissemination) return algo::barrier_dissemination(b, call);
    return algo::barrier_oneshot(b, call);
  }
  if (call.op == CollOp::alltoallv) {
    if (b.size() == 1) {
      const Range r = channel_slice(call.send_counts[0], call.channels, b.channel(), sizeof(S));
      if (call.send_counts[0] != call.recv_counts[0]) b.fail_counts(0, call.send_counts[0], call.recv_counts[0]);
      algo::copy_elems(b, static_cast<S*>(call.recv) + call.recv_displs[0] + r.lo,
                       static_cast<const S*>(call.send) + call.send_displs[0] + r.lo, r.size());
      return;
    }
    return algo::alltoallv_oneshot<S>(b, call);
  }
  if (lane) return;  // an empty slice
  if (b.size() == 1 && !forced_alone(b, call)) {
    if (call.op != CollOp::broadcast || call.recv)
      algo::copy_elems(b, static_cast<S*>(call.recv) + sl.lo, static_cast<const S*>(call.send) + sl.lo, sl.size());
    return;
  }
  switch (call.algo) {
    case Algorithm::twoshot:
      return algo::broadcast_twoshot<S>(b, call, sl);
    case Algorithm::ring:
    case Algorithm::multiring:
      if (call.op == CollOp::broadcast) return algo::broadcast_ring<S>(b, call, sl);
      return algo::allgather_ring<S>(b, call, sl);
    default:
      return algo::move_oneshot<S>(b, call, sl);
  }
}

}  // namespace gpucomm::coll
