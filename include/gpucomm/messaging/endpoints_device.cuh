#pragma once
// Endpoints on the GPU (docs/MESSAGING.md, "Endpoints"): the device memory backend and the calls
// at each cooperation level. Header-only; a kernel receives the EndpointsHandle by value
// (Endpoints::device()) and keeps the owner state of the endpoint it receives on in shared memory.
//
//   ep::send(g, h, buf, bytes, pe, ep, tag)          any group; returns when the record is written
//   __shared__ ep::OwnerState<...> st;               the receiving group's matching state
//   ep::open(g, h, ep, st) / ep::close(g, h, st)     take and give back endpoint ep (rare: once per kernel)
//   ep::irecv(g, h, st, buf, capacity, src, tag)     a request id; src may be kAnySource, tag kAnyTag
//   ep::wait(g, h, st, id) / ep::test(g, h, st, id, &status)
//   ep::recv(g, h, st, buf, capacity, src, tag)      irecv + wait
//   ep::irecv_lanes(warp, h, st, n, buf, capacity, src, tag)  lanes 0..n-1 post one receive each
//   ep::waitall(g, h, st, ids, n, statuses)          waits for n receives (a warp checks 32 at once)
//   ep::cancel(g, h, st, id)                         a posted receive completes with kErrCancelled
//   ep::iprobe(g, h, st, src, tag, &status) / ep::probe(g, h, st, src, tag)
//   ep::progress(g, h, st)                           drains the rings (waits and tests do it too)
//
// Levels: coop::Thread, coop::Warp (every lane, the same arguments), coop::Block (every thread).
// One elected thread (lane 0, or thread 0 of the block) runs the protocol; a warp drains 32
// records of a ring per pass (one load each, in parallel); the group joins once at the end of the
// call. The owner state must be visible to the group: shared memory (or, at thread level, any
// memory of the owning thread).
#include <cstdint>
#include <type_traits>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/handle_device.cuh"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/messaging/endpoints_layout.hpp"
#include "gpucomm/messaging/endpoints_protocol.hpp"

namespace gpucomm::msg::ep {

namespace detail {

// Records the failure (the endpoints' record, then the base record) and traps. Out of line, with
// every value passed by value, so that no caller's handle has its address taken.
__device__ __noinline__ inline void ep_fail(EpDiag* diag, DeviceDiag* base, int rank, Fail f, int peer, int ep,
                                            const void* addr, uint64_t expected, uint64_t seen, uint64_t elapsed) {
  if (diag && mem::compare_exchange<mem::kSystem>(&diag->state, 0u, 1u, mem::relaxed) == 0u) {
    diag->fail = static_cast<uint32_t>(f);
    diag->peer = peer;
    diag->ep = ep;
    diag->expected = expected;
    diag->seen = seen;
    diag->elapsed_ns = elapsed;
    diag->rank = rank;
    diag->block = blockIdx.x;
    diag->thread = threadIdx.x;
    mem::store<mem::kSystem>(&diag->state, 2u, mem::release);
  }
  DeviceFault df = DeviceFault::bad_argument;
  if (f == Fail::credit_timeout || f == Fail::recv_timeout) df = DeviceFault::timeout;
  if (f == Fail::aborted) df = DeviceFault::aborted;
  DeviceHandle d{};
  d.rank = rank;
  d.diag = base;
  gpucomm::detail::fail(d, df, DeviceOp::message, peer, addr, Cmp::eq, expected, seen, elapsed);
}

// The device memory backend; holds values only (see ep_fail).
struct DeviceEpBackend {
  EpDiag* diag;
  DeviceDiag* base_diag;
  const uint32_t* job_state;
  uint64_t timeout_ns;
  int32_t rank;

  __device__ static void ld2(const uint64_t* p, uint64_t& a, uint64_t& b) {
    asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
  }
  __device__ static void st2(uint64_t* p, uint64_t a, uint64_t b) {
    asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
  }
  __device__ static uint64_t ld_acq(const uint64_t* p) { return mem::load<mem::kSystem>(p, mem::acquire); }
  __device__ static void st_rel(uint64_t* p, uint64_t v) { mem::store<mem::kSystem>(p, v, mem::release); }
  __device__ static void st_rel_local(uint64_t* p, uint64_t v) { mem::store<mem::kDevice>(p, v, mem::release); }
  // Tickets are words of this PE that only its own threads touch.
  __device__ static uint64_t fadd(uint64_t* p, uint64_t v) { return mem::fetch_add<mem::kDevice>(p, v, mem::relaxed); }
  __device__ static bool cas_acq(uint64_t* p, uint64_t expected, uint64_t desired) {
    return mem::compare_exchange<mem::kDevice>(p, expected, desired, mem::acquire) == expected;
  }
  __device__ static uint64_t now() { return mem::globaltimer(); }

  __device__ __forceinline__ void fail(Fail f, int peer, int ep, const void* addr, uint64_t expected, uint64_t seen,
                                       uint64_t elapsed = 0) const {
    ep_fail(diag, base_diag, rank, f, peer, ep, addr, expected, seen, elapsed);
  }
  // The periodic part of a wait: the job's state, then the timeout.
  __device__ __forceinline__ void check_wait(uint64_t start, Fail f, int peer, int ep, const void* addr,
                                             uint64_t expected, uint64_t seen) const {
    const uint64_t waited = now() - start;
    const uint32_t j = job_state ? mem::load<mem::kSystem>(job_state, mem::relaxed) : 0u;
    if (j != 0) fail(Fail::aborted, peer, ep, addr, expected, j - 1, waited);
    if (timeout_ns != 0 && waited > timeout_ns) fail(f, peer, ep, addr, expected, seen, waited);
  }
};

__device__ __forceinline__ DeviceEpBackend backend(const EndpointsHandle& h) {
  return DeviceEpBackend{h.diag, h.dev.diag, h.dev.job_state, h.timeout_ns, h.rank};
}

__device__ __forceinline__ bool leader(coop::Thread) {
  return true;
}
__device__ __forceinline__ bool leader(coop::Warp) {
  return coop::lane_id() == 0;
}
__device__ __forceinline__ bool leader(coop::Block) {
  return coop::linear_thread_index() == 0;
}

// Matches a warp's batch of k complete records of sender s (tickets next .. next + k - 1, each
// of at most 8 bytes, lane i holding the first four words of ticket next + i) with the lanes at
// once; false (nothing done) where the batch needs the serial matcher. Applies when no (source,
// ANY) or (ANY, ANY) receive is posted: a record can then only take a receive from its exact bin
// or its (ANY, tag) bin. Lanes whose records share the bin of the posted class (both bins' key
// when both classes are posted) form a group whose first lane takes their receives in ticket
// order with the serial matcher; groups touch disjoint bins (checked), so their takes commute and
// the outcome is the serial one. Then lane 0 consumes the records taken (their credit), every lane
// delivers its own record from its registers, records without a receive join the unexpected list
// in ticket order, and lane 0 updates the counters once.
template <class S>
__device__ __forceinline__ bool match_batch_warp(const DeviceEpBackend& b, const EndpointsHandle& h, S& st, uint32_t s,
                                                 uint64_t next, uint32_t k, const uint64_t (&w)[4]) {
  constexpr uint32_t kAll = 0xffffffffu;
  const uint32_t lane = coop::lane_id();
  SenderState& q = st.sender[s];
  const uint64_t off = next - q.base;
  if (k == 0 || st.in_class[2] != 0 || st.in_class[3] != 0 || off + k > 64) return false;
  const bool exact = st.in_class[0] != 0, any = st.in_class[1] != 0;
  const bool in = lane < k;
  const uint32_t live = k == 32 ? kAll : (1u << k) - 1u;
  const auto tag = static_cast<int32_t>(static_cast<uint32_t>(w[0]));
  const uint32_t exact_bin = bin_of<S>(static_cast<int32_t>(s), tag), any_bin = bin_of<S>(kAnySource, tag);
  uint32_t group = 0;
  if (in) group = __match_any_sync(live, exact ? exact_bin : any_bin);
  const bool first = in && static_cast<uint32_t>(__ffs(group) - 1) == lane;
  if (exact && any) {
    const uint32_t firsts = __ballot_sync(kAll, first);
    uint32_t sharing = 0;
    if (first) sharing = __match_any_sync(firsts, any_bin);
    if (__any_sync(kAll, first && sharing != (1u << lane))) return false;  // two groups, one (ANY, tag) bin
  }
  const uint64_t* slot = ring_slot(h.region, h.lay, st.ep, s, next + lane);
  if (in) proto::record_bytes(b, h, st, s, w[1], slot);
  if (first) {
    for (uint32_t m = group; m != 0; m &= m - 1) {
      const auto j = static_cast<uint32_t>(__ffs(m) - 1);
      st.taken[j] = take_posted_uncounted(st, static_cast<int32_t>(s),
                                          static_cast<int32_t>(static_cast<uint32_t>(st.stage[j][0])));
    }
  }
  __syncwarp();
  const uint16_t id = in ? st.taken[lane] : kNone;
  const uint32_t got = __ballot_sync(kAll, id != kNone);
  const uint32_t got_any = __ballot_sync(kAll, id != kNone && st.recv[id].src == kAnySource);
  const uint32_t missed = live & ~got;
  const uint32_t bytes = static_cast<uint32_t>(w[1] >> 16) & 0xffffu;
  // The records taken are consumed (and credited) before they are delivered: their payloads are
  // in the lanes' registers, so the senders get the slots back without waiting for the deliveries.
  if (lane == 0) {
    q.next = next + k;
    if (got != 0) proto::consume_bits(b, h, st, s, static_cast<uint64_t>(got) << off);
  }
  if (id != kNone) {
    proto::deliver(b, st, id, s, tag, bytes, w[2], w[3], slot);
  } else if (in) {
    umq_put(st, st.umq_tail + static_cast<uint32_t>(__popc(missed & ((1u << lane) - 1u))), next + lane, tag, s, bytes);
  }
  __syncwarp();
  if (lane == 0) {
    const auto n_any = static_cast<uint32_t>(__popc(got_any)), n = static_cast<uint32_t>(__popc(got));
    st.posted -= n;
    st.in_class[0] -= n - n_any;
    st.in_class[1] -= n_any;
    st.umq_tail += static_cast<uint32_t>(__popc(missed));
  }
  __syncwarp();
  return true;
}

// A warp's drain of sender s: lane i reads the record of ticket next + i; the complete prefix
// (records of at most 8 bytes; a longer one ends the prefix and is taken by the leader) is matched
// by the lanes at once (match_batch_warp), or on lane 0 in ticket order where the batch needs the
// serial matcher. Returns the records taken (all lanes).
template <class S>
__device__ __forceinline__ uint32_t drain_sender_warp(const DeviceEpBackend& b, const EndpointsHandle& h, S& st,
                                                      uint32_t s, bool once = false) {
  const uint32_t lane = coop::lane_id();
  uint32_t total = 0;
  // The next batch's records, loaded before this batch is matched (the loads' trip to L2 overlaps
  // the matching): valid for ticket pre_t + lane while pre_t is the next ticket to read.
  uint64_t pre[4] = {0, 0, 0, 0};
  uint64_t pre_t = ~0ull;
  auto complete = [&](const uint64_t (&x)[4], uint64_t t) {
    const uint32_t stamp = stamp_of(t);
    return has_stamp(x[0], stamp) && has_stamp(x[1], stamp) && has_stamp(x[2], stamp) && has_stamp(x[3], stamp);
  };
  for (;;) {
    SenderState& q = st.sender[s];
    if (lane == 0 && static_cast<int64_t>(q.next - q.base) < 0) q.next = q.base;  // the prefix grew past it
    __syncwarp();
    const uint64_t next = q.next, off = next - q.base;
    const uint32_t room = S::unexp - (st.umq_tail - st.umq_head);  // unexpected entries left
    // Tickets at or past `next` consumed already (after a reopen): the leader skips them.
    const bool clean = off >= 64 || (q.mask >> off) == 0;
    bool ok = false;
    uint64_t w[4] = {0, 0, 0, 0};
    if (clean && lane < q.base + h.lay.slots - next) {
      const uint64_t t = next + lane;
      // A record is immutable from its last stamped word until it is consumed and credited: a
      // complete prefetched copy is the record; an incomplete one is loaded again.
      if (pre_t == next && complete(pre, t)) {
        for (int i = 0; i < 4; ++i) w[i] = pre[i];
      } else {
        const uint64_t* rec = ring_slot(h.region, h.lay, st.ep, s, t);
        DeviceEpBackend::ld2(rec, w[0], w[1]);
        DeviceEpBackend::ld2(rec + 2, w[2], w[3]);
      }
      ok = complete(w, t) && (static_cast<uint32_t>(w[1] >> 16) & 0xffffu) <= 8u;
    }
    const uint32_t good = __ballot_sync(0xffffffffu, ok);
    uint32_t k = good == 0xffffffffu ? 32u : static_cast<uint32_t>(__ffs(~good) - 1);  // the complete prefix
    if (k > room) k = room;
    if (lane < k) {
      for (int i = 0; i < 4; ++i) st.stage[lane][i] = w[i];
    }
    pre_t = ~0ull;
    if (k == 32 && !once) {  // a full batch: the loop goes on with the next 32 tickets
      pre_t = next + 32;
      const uint64_t* rec = ring_slot(h.region, h.lay, st.ep, s, pre_t + lane);
      DeviceEpBackend::ld2(rec, pre[0], pre[1]);
      DeviceEpBackend::ld2(rec + 2, pre[2], pre[3]);
    }
    __syncwarp();
    uint32_t more = 0;
    if (match_batch_warp(b, h, st, s, next, k, w)) {
      // taken by the lanes
    } else if (lane == 0) {
      for (uint32_t i = 0; i < k; ++i) {
        const uint64_t t = next + i;
        const uint64_t* rec = ring_slot(h.region, h.lay, st.ep, s, t);
        const uint64_t* x = st.stage[i];
        proto::record_bytes(b, h, st, s, x[1], rec);
        proto::arrived(b, h, st, s, t, x[0], x[1], x[2], x[3], rec);
      }
      q.next = next + k;
      // Nothing the lanes could take (a longer record first, tickets consumed after a reopen, or
      // no record yet): lane 0 takes at most one record, and the lanes go on after it. (Draining
      // on serially here would take every record that keeps arriving one at a time.)
      if (k == 0) more = proto::drain_sender(b, h, st, s, 1);
    }
    more = __shfl_sync(0xffffffffu, more, 0);
    total += k + more;
    __syncwarp();
    if ((k < 32 && more == 0) || once) return total;
  }
}

template <class S>
__device__ __forceinline__ uint32_t progress_warp(const DeviceEpBackend& b, const EndpointsHandle& h, S& st,
                                                  bool once = false) {
  uint32_t n = 0;
  for (uint32_t s = 0; s < st.senders; ++s) n += drain_sender_warp(b, h, st, s, once);
  return n;
}

}  // namespace detail

// ---- sending ---------------------------------------------------------------------------------------

template <class G>
__device__ __forceinline__ void send(G g, const EndpointsHandle& h, const void* buf, uint32_t bytes, int pe, int ep,
                                     int tag) {
  coop::sync(g);  // the group's writes of buf come before the leader reads it
  if (detail::leader(g)) proto::send(detail::backend(h), h, pe, ep, tag, buf, bytes);
  coop::sync(g);  // the buffer is free for every thread of the group
}

// ---- owning ----------------------------------------------------------------------------------------

template <class G, class S>
__device__ __forceinline__ void open(G g, const EndpointsHandle& h, int ep, S& st) {
  if (detail::leader(g)) proto::open(detail::backend(h), h, ep, st);
  coop::sync(g);
}

template <class G, class S>
__device__ __forceinline__ void close(G g, const EndpointsHandle& h, S& st) {
  coop::sync(g);
  if (detail::leader(g)) proto::close(detail::backend(h), h, st);
  coop::sync(g);
}

// Thread and block level: the elected thread drains one record at a time; a warp drains 32.
template <class S>
__device__ __forceinline__ uint32_t progress(coop::Thread, const EndpointsHandle& h, S& st) {
  return proto::progress(detail::backend(h), h, st);
}
template <class S>
__device__ __forceinline__ uint32_t progress(coop::Warp, const EndpointsHandle& h, S& st) {
  return detail::progress_warp(detail::backend(h), h, st);
}
template <class S>
__device__ __forceinline__ uint32_t progress(coop::Block, const EndpointsHandle& h, S& st) {
  __shared__ uint32_t n;
  if (coop::warp_id() == 0) {
    const uint32_t k = detail::progress_warp(detail::backend(h), h, st);
    if (coop::lane_id() == 0) n = k;
  }
  __syncthreads();
  return n;
}

template <class G, class S>
__device__ __forceinline__ uint16_t irecv(G g, const EndpointsHandle& h, S& st, void* buf, uint32_t capacity, int src,
                                          int tag) {
  __shared__ uint16_t id_out;
  uint16_t id = 0;
  if (detail::leader(g)) id = proto::irecv(detail::backend(h), h, st, buf, capacity, src, tag);
  if constexpr (std::is_same_v<G, coop::Thread>) {
    return id;
  } else if constexpr (std::is_same_v<G, coop::Warp>) {
    return static_cast<uint16_t>(__shfl_sync(0xffffffffu, id, 0));
  } else {
    if (detail::leader(g)) id_out = id;
    __syncthreads();
    id = id_out;
    __syncthreads();
    return id;
  }
}

// Waits for receive `id`: the group drains the rings until the owner state marks it done.
template <class G, class S>
__device__ __forceinline__ Status wait(G g, const EndpointsHandle& h, S& st, uint16_t id) {
  const auto b = detail::backend(h);
  if constexpr (std::is_same_v<G, coop::Thread>) {
    return proto::wait(b, h, st, id);
  } else {
    const bool in_warp0 = std::is_same_v<G, coop::Warp> || coop::warp_id() == 0;
    if (in_warp0) {
      if (coop::lane_id() == 0) proto::check_request(b, st, id);
      uint64_t start = 0;
      for (uint32_t i = 1;; ++i) {
        const bool done = __shfl_sync(0xffffffffu, st.recv[id].state == kRecvDone, 0);
        if (done) break;
        detail::progress_warp(b, h, st, true);
        if (coop::lane_id() == 0) {
          if (i == 1) start = b.now();
          if ((i & 255u) == 0) {
            const Recv& r = st.recv[id];
            b.check_wait(start, Fail::recv_timeout, r.src, st.ep, nullptr, proto::envelope_word(r.src, r.tag),
                         st.posted);
          }
        }
      }
    }
    coop::sync(g);
    const Recv& r = st.recv[id];
    const Status out{r.src, r.tag, r.seq, r.error};
    coop::sync(g);
    if (detail::leader(g)) give_recv(st, id);
    coop::sync(g);
    return out;
  }
}

// Lanes 0..n-1 of the warp each post one receive (their own buf, capacity, src, tag), in lane
// order: the same outcome as n irecv calls in that order; returns each posting lane's request id
// (kNone on lanes >= n). With no unexpected message held, the receives go into their bins at once:
// each lane takes a free entry from the stack, and the lanes whose receives share a bin
// (__match_any_sync) chain themselves in lane order, the lowest one appending the chain to the
// bin. Otherwise lane 0 posts them one by one (each may take an unexpected message).
template <class S>
__device__ __forceinline__ uint16_t irecv_lanes(coop::Warp, const EndpointsHandle& h, S& st, uint32_t n, void* buf,
                                                uint32_t capacity, int src, int tag) {
  constexpr uint32_t kAll = 0xffffffffu;
  const auto b = detail::backend(h);
  const uint32_t lane = coop::lane_id();
  if (n > 32) n = 32;
  const bool in = lane < n;
  if (in) proto::check_recv_args(b, h, st, src, tag);
  __syncwarp();
  if (st.umq_head != st.umq_tail || st.held + n > S::recvs) {
    uint16_t mine = kNone;
    for (uint32_t i = 0; i < n; ++i) {
      const auto bi = reinterpret_cast<void*>(__shfl_sync(kAll, reinterpret_cast<uintptr_t>(buf), static_cast<int>(i)));
      const uint32_t ci = __shfl_sync(kAll, capacity, static_cast<int>(i));
      const int si = __shfl_sync(kAll, src, static_cast<int>(i)), ti = __shfl_sync(kAll, tag, static_cast<int>(i));
      uint16_t id = 0;
      if (lane == 0) id = proto::irecv(b, h, st, bi, ci, si, ti);
      id = static_cast<uint16_t>(__shfl_sync(kAll, id, 0));
      if (lane == i) mine = id;
    }
    return mine;
  }
  // n entries are free (checked above): lane i takes the i-th from the top of the stack.
  const uint16_t id = in ? st.free_ids[S::recvs - 1 - st.held - lane] : kNone;
  if (in) {
    st.taken[lane] = id;
    st.recv[id].state = kRecvPosted;
  }
  __syncwarp();
  const uint32_t live = n == 32 ? kAll : (1u << n) - 1u;
  const uint32_t bin = bin_of<S>(src, tag);
  uint32_t group = 0;
  if (in) {
    Recv& r = st.recv[id];
    r.buf = buf;
    r.capacity = capacity;
    r.src = src;
    r.tag = tag;
    r.seq = st.post_seq + lane;
    group = __match_any_sync(live, bin);
    const uint32_t after = group & ~((2u << lane) - 1u);  // the group's lanes above this one (lane 31: none)
    r.next = after != 0 ? st.taken[__ffs(after) - 1] : kNone;
  }
  const uint32_t cls = (src == kAnySource ? 1u : 0u) + (tag == kAnyTag ? 2u : 0u);
  uint32_t count[4];
  for (uint32_t c = 0; c < 4; ++c) count[c] = static_cast<uint32_t>(__popc(__ballot_sync(kAll, in && cls == c)));
  if (in && static_cast<uint32_t>(__ffs(group) - 1) == lane) {  // the group's first lane appends the chain
    const uint16_t old = st.bin_tail[bin];
    if (old == kNone) {
      st.bin_head[bin] = id;
    } else {
      st.recv[old].next = id;
    }
    st.bin_tail[bin] = st.taken[31 - __clz(group)];
  }
  __syncwarp();
  if (lane == 0) {
    st.held += n;
    st.post_seq += n;
    st.posted += n;
    for (uint32_t c = 0; c < 4; ++c) st.in_class[c] += count[c];
  }
  __syncwarp();
  return id;
}

// Waits for the n receives ids[0 .. n-1] (each at most once) and writes their statuses to
// statuses[0 .. n-1] (when not null). A warp (a block's warp 0) checks 32 of them at a time, one
// per lane, drains the rings until all 32 are done and gives them back at once; a thread waits for
// them in order.
template <class G, class S>
__device__ __forceinline__ void waitall(G g, const EndpointsHandle& h, S& st, const uint16_t* ids, uint32_t n,
                                        Status* statuses) {
  const auto b = detail::backend(h);
  if constexpr (std::is_same_v<G, coop::Thread>) {
    for (uint32_t i = 0; i < n; ++i) {
      const Status s = proto::wait(b, h, st, ids[i]);
      if (statuses) statuses[i] = s;
    }
  } else {
    constexpr uint32_t kAll = 0xffffffffu;
    const bool in_warp0 = std::is_same_v<G, coop::Warp> || coop::warp_id() == 0;
    if (in_warp0) {
      const uint32_t lane = coop::lane_id();
      for (uint32_t base = 0; base < n; base += 32) {
        const uint32_t m = n - base < 32 ? n - base : 32;
        const bool in = lane < m;
        const uint16_t id = in ? ids[base + lane] : kNone;
        if (in) proto::check_request(b, st, id);
        const uint32_t live = m == 32 ? kAll : (1u << m) - 1u;
        if (in && __match_any_sync(live, id) != (1u << lane))  // the same request twice
          b.fail(Fail::bad_request, -1, st.ep, nullptr, S::recvs, id);
        uint64_t start = 0;
        for (uint32_t i = 1;; ++i) {
          const uint32_t pending = __ballot_sync(kAll, in && st.recv[id].state != kRecvDone);
          if (pending == 0) break;
          detail::progress_warp(b, h, st, true);
          if (i == 1) start = b.now();
          if ((i & 255u) == 0 && lane == static_cast<uint32_t>(__ffs(pending) - 1)) {
            const Recv& r = st.recv[id];
            b.check_wait(start, Fail::recv_timeout, r.src, st.ep, nullptr, proto::envelope_word(r.src, r.tag),
                         st.posted);
          }
        }
        // Back to the free stack at once, lane i's entry i-th above its top.
        if (in) {
          Recv& r = st.recv[id];
          if (statuses) statuses[base + lane] = Status{r.src, r.tag, r.seq, r.error};
          r.state = kRecvFree;
          st.free_ids[S::recvs - st.held + lane] = id;
        }
        __syncwarp();
        if (lane == 0) st.held -= m;
        __syncwarp();
      }
    }
    coop::sync(g);
  }
}

template <class G, class S>
__device__ __forceinline__ Status recv(G g, const EndpointsHandle& h, S& st, void* buf, uint32_t capacity, int src,
                                       int tag) {
  return ep::wait(g, h, st, ep::irecv(g, h, st, buf, capacity, src, tag));
}

template <class G, class S>
__device__ __forceinline__ bool test(G g, const EndpointsHandle& h, S& st, uint16_t id, Status* status) {
  const auto b = detail::backend(h);
  if constexpr (std::is_same_v<G, coop::Thread>) {
    return proto::test(b, h, st, id, status);
  } else {
    if (detail::leader(g)) proto::check_request(b, st, id);
    coop::sync(g);
    if (st.recv[id].state != kRecvDone) ep::progress(G{}, h, st);
    coop::sync(g);
    const bool done = st.recv[id].state == kRecvDone;
    const Recv& r = st.recv[id];
    if (done && status) *status = Status{r.src, r.tag, r.seq, r.error};
    coop::sync(g);
    if (done && detail::leader(g)) give_recv(st, id);
    coop::sync(g);
    return done;
  }
}

template <class G, class S>
__device__ __forceinline__ void cancel(G g, const EndpointsHandle& h, S& st, uint16_t id) {
  coop::sync(g);
  if (detail::leader(g)) proto::cancel(detail::backend(h), st, id);
  coop::sync(g);
}

template <class G, class S>
__device__ __forceinline__ bool iprobe(G g, const EndpointsHandle& h, S& st, int src, int tag, Status* status) {
  __shared__ Status out_s;
  __shared__ uint32_t found_s;
  Status out{};
  bool found = false;
  if (detail::leader(g)) found = proto::iprobe(detail::backend(h), h, st, src, tag, &out);
  if constexpr (!std::is_same_v<G, coop::Thread>) {
    if (detail::leader(g)) {
      out_s = out;
      found_s = found ? 1u : 0u;
    }
    coop::sync(g);
    out = out_s;
    found = found_s != 0;
    coop::sync(g);
  }
  if (found && status) *status = out;
  return found;
}

template <class G, class S>
__device__ __forceinline__ Status probe(G g, const EndpointsHandle& h, S& st, int src, int tag) {
  Status out{};
  const uint64_t start = mem::globaltimer();
  for (uint32_t i = 1; !ep::iprobe(g, h, st, src, tag, &out); ++i) {
    if ((i & 255u) == 0 && detail::leader(g)) {
      detail::backend(h).check_wait(start, Fail::recv_timeout, src, st.ep, nullptr, proto::envelope_word(src, tag),
                                    st.posted);
    }
  }
  return out;
}

}  // namespace gpucomm::msg::ep
