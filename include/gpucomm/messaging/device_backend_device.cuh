#pragma once
// The memory backend of GPU PEs (protocol_alloc.hpp lists what a backend provides): the one-sided
// device API under the protocol, so every operation to a peer goes over NVLink/PCIe P2P directly
// or through the proxy that serves the peer (device::put/get/signal route by themselves; LL
// stores only where the route is direct). Local words at device scope, words other PEs touch at
// system scope (gpucomm/base/ordering_device.cuh). Matching: the sequential matcher for one thread,
// the warp engines of gpucomm/matching for a warp or a block (warp 0), on the communicator's
// queues, with their scratch in the state's Control block (only the progress lock holder
// matches, so one scratch suffices and no shared memory is needed).
#if !defined(GPUCOMM_SIMT_EMULATION)
#include <cuda/atomic>
#endif
#include <type_traits>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/handle_device.cuh"
#include "gpucomm/device/rma_device.cuh"
#include "gpucomm/matching/match_device.cuh"
#include "gpucomm/messaging/protocol_complete.hpp"

namespace gpucomm::msg::dev {

__device__ __forceinline__ cuda::memory_order order_of(Ord o) {
  switch (o) {
    case Ord::relaxed:
      return mem::relaxed;
    case Ord::acquire:
      return mem::acquire;
    case Ord::release:
      return mem::release;
    case Ord::acq_rel:
      return mem::acq_rel;
  }
  return mem::seq_cst;
}
__device__ __forceinline__ cuda::memory_order load_order(Ord o) {
  return o == Ord::acquire || o == Ord::acq_rel ? mem::acquire : mem::relaxed;
}
__device__ __forceinline__ cuda::memory_order store_order(Ord o) {
  return o == Ord::release || o == Ord::acq_rel ? mem::release : mem::relaxed;
}

// The leader's value of a trivially copyable T to every thread of the group (synchronizes it).
template <class T>
__device__ inline T bcast_value(coop::Thread, const T& v) {
  return v;
}
template <class T>
__device__ inline T bcast_value(coop::Warp, const T& v) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  uint32_t w[kWords] = {};
  memcpy(w, &v, sizeof(T));
  __syncwarp();
#pragma unroll
  for (int i = 0; i < kWords; ++i) w[i] = __shfl_sync(0xffffffffu, w[i], 0);
  T out;
  memcpy(&out, w, sizeof(T));
  return out;
}
template <class T>
__device__ inline T bcast_value(coop::Block b, const T& v) {
  alignas(16) __shared__ unsigned char slot[sizeof(T)];
  if (coop::thread_rank(b) == 0) memcpy(slot, &v, sizeof(T));
  __syncthreads();
  T out;
  memcpy(&out, slot, sizeof(T));
  __syncthreads();  // nobody overwrites the slot before every thread read it
  return out;
}

class DeviceBackend {
 public:
  __device__ DeviceBackend(const DeviceHandle& h, const StateView& s) : h_(h), s_(s) {}

  // ---- group ----
  template <class C>
  __device__ bool leader(C c) const {
    return coop::thread_rank(c) == 0;
  }
  template <class C>
  __device__ uint32_t group_rank(C c) const {
    return coop::thread_rank(c);
  }
  template <class C>
  __device__ uint32_t group_size(C c) const {
    return coop::size(c);
  }
  template <class C, class T>
  __device__ T bcast(C c, const T& v) const {
    return bcast_value(c, v);
  }
  template <class C>
  __device__ void sync(C c) const {
    coop::sync(c);
  }
  // Every thread's earlier writes visible at system scope (peers, proxies) before the leader's
  // next release: the group publish of the one-sided layer.
  template <class C>
  __device__ void publish(C c) const {
    gpucomm::detail::publish_group(c);
  }
  // The same for this GPU's threads only (the state's local tables).
  template <class C>
  __device__ void publish_local(C c) const {
    mem::fence<mem::kDevice>(mem::acq_rel);
    coop::sync(c);
  }
  __device__ void publish_local(coop::Thread) const {}
  // Copies, puts and gets stay out of line: one copy loop per cooperation level instead of one per
  // call site (the protocol copies in many places).
  template <class C>
  __device__ __noinline__ void copy(C c, void* dst, const void* src, size_t n) const {
    if (n) gpucomm::detail::copy(c, dst, src, n);
  }

  // ---- words ----
  // Posted relaxed add (counters): nobody waits for the old value.
  __device__ void count(uint64_t* p, uint64_t v) const { mem::red_add<mem::kDevice>(p, v, mem::relaxed); }
  __device__ uint64_t ld(const uint64_t* p, Ord o) const { return mem::load<mem::kDevice>(p, load_order(o)); }
  __device__ void st(uint64_t* p, uint64_t v, Ord o) const { mem::store<mem::kDevice>(p, v, store_order(o)); }
  __device__ uint64_t fadd(uint64_t* p, uint64_t v, Ord o) const {
    return mem::fetch_add<mem::kDevice>(p, v, order_of(o));
  }
  __device__ uint64_t fand(uint64_t* p, uint64_t v, Ord o) const {
    return mem::fetch_and<mem::kDevice>(p, v, order_of(o));
  }
  __device__ uint64_t for_(uint64_t* p, uint64_t v, Ord o) const {
    return mem::fetch_or<mem::kDevice>(p, v, order_of(o));
  }
  __device__ bool cas(uint64_t* p, uint64_t& expected, uint64_t desired, Ord o) const {
    const uint64_t old = mem::compare_exchange<mem::kDevice>(p, expected, desired, order_of(o));
    const bool ok = old == expected;
    expected = old;
    return ok;
  }
  __device__ uint64_t ld_sys(const uint64_t* p, Ord o) const { return mem::load<mem::kSystem>(p, load_order(o)); }
  __device__ void st_sys(uint64_t* p, uint64_t v, Ord o) const { mem::store<mem::kSystem>(p, v, store_order(o)); }
  // A store into `pe`'s memory through a direct address: device scope when `pe` is this PE (its
  // readers are this GPU's threads; a release at device scope costs half of one at system scope),
  // system scope otherwise.
  __device__ void st_to(int32_t pe, uint64_t* p, uint64_t v, Ord o) const {
    if (pe == h_.rank) {
      mem::store<mem::kDevice>(p, v, store_order(o));
    } else {
      mem::store<mem::kSystem>(p, v, store_order(o));
    }
  }
  // Acquire fences after a relaxed load that saw a flag: of this GPU's threads (submissions), of
  // any PE (ring slots, words peers write).
  __device__ void acquire_fence_local() const { mem::fence<mem::kDevice>(mem::acq_rel); }
  __device__ void release_fence_local() const { mem::fence<mem::kDevice>(mem::acq_rel); }
  __device__ void acquire_fence_sys() const { mem::fence<mem::kSystem>(mem::acq_rel); }
  // True on every thread of the group when `v` is true on any.
  __device__ bool any(coop::Thread, bool v) const { return v; }
  __device__ bool any(coop::Warp, bool v) const { return __any_sync(0xffffffffu, v) != 0; }
  __device__ bool any(coop::Block, bool v) const { return __syncthreads_or(v) != 0; }
  // publish(c) for stores that only `pe` reads: publish_local when `pe` is this PE.
  template <class C>
  __device__ void publish_to(C c, int32_t pe) const {
    if (pe == h_.rank) {
      publish_local(c);
    } else {
      publish(c);
    }
  }

  // ---- remote ----
  __device__ char* peer(const void* sym, int32_t pe) const {
    if (proxy::serves(h_, pe)) return nullptr;
    return device::ptr(h_, static_cast<char*>(const_cast<void*>(sym)), pe);
  }
  template <class C>
  __device__ __noinline__ void put(C c, void* sym_dst, const void* src, size_t n, int32_t pe) const {
    if (n) device::put(c, h_, sym_dst, src, n, pe);
  }
  template <class C>
  __device__ __noinline__ void get(C c, void* dst, const void* sym_src, size_t n, int32_t pe) const {
    if (n) device::get(c, h_, dst, sym_src, n, pe);
  }
  __device__ __noinline__ void signal_set(uint64_t* sym, uint64_t v, int32_t pe) const {
    device::signal(h_, sym, v, SignalOp::set, pe);
  }
  // Adds v to `pe`'s copy of the symmetric word, posted, after this thread's earlier accesses
  // (release): directly, or as a signal through the proxy.
  __device__ __noinline__ void publish_remote_add(uint64_t* sym, uint64_t v, int32_t pe) const {
    if (pe == h_.rank) {
      mem::red_add<mem::kDevice>(sym, v, mem::release);
    } else if (char* p = peer(sym, pe)) {
      mem::red_add<mem::kSystem>(reinterpret_cast<uint64_t*>(p), v, mem::release);
    } else {
      device::signal(h_, sym, v, SignalOp::add, pe);
    }
  }
  __device__ bool in_heap(const void* p, size_t n) const { return gpucomm::detail::in_heap(h_, p, n); }
  __device__ uint64_t heap_offset(const void* p) const {
    return static_cast<uint64_t>(static_cast<const char*>(p) - h_.heap_base);
  }
  __device__ char* heap_base() const { return h_.heap_base; }

  // ---- matching ----
  __device__ int32_t match_message(coop::Thread, CommState& cm, const matching::Envelope& e) const {
    return seq::match_message(cm.prq, &cm.prq_n, cm.umq, &cm.umq_n, e);
  }
  __device__ int32_t match_receive(coop::Thread, CommState& cm, const matching::Envelope& e) const {
    return seq::match_receive(cm.umq, &cm.umq_n, cm.prq, &cm.prq_n, e);
  }
  template <class C>
  __device__ int32_t match_message(C c, CommState& cm, const matching::Envelope& e) const {
    return run_engine(c, cm, e, false);
  }
  template <class C>
  __device__ int32_t match_receive(C c, CommState& cm, const matching::Envelope& e) const {
    return run_engine(c, cm, e, true);
  }

  // ---- the request the calling group waits for (complete() needs no release for it) ----
  __device__ void set_own(int32_t id) const { own_ = id; }
  __device__ bool owns(const Req& q) const { return own_ >= 0 && &q == s_.reqs + own_; }

  // ---- batches (warps and blocks: warp 0 drains; protocol_recv.hpp, drain_ll_batch) ----
  // This thread's lane when it takes part in a batch (a warp caller's lanes, warp 0 of a block).
  template <class C>
  __device__ bool batch_lane(C, uint32_t& lane) const {
    lane = coop::lane_id();
    return std::is_same_v<C, coop::Warp> || coop::warp_id() == 0;
  }
  __device__ uint32_t batch_ballot(bool p) const { return __ballot_sync(0xffffffffu, p); }
  __device__ void batch_sync() const { __syncwarp(); }
  __device__ uint32_t batch_shfl(uint32_t v, int src) const { return __shfl_sync(0xffffffffu, v, src); }
  __device__ uint64_t batch_shfl(uint64_t v, int src) const {
    const auto lo = __shfl_sync(0xffffffffu, static_cast<uint32_t>(v), src);
    const auto hi = __shfl_sync(0xffffffffu, static_cast<uint32_t>(v >> 32), src);
    return (static_cast<uint64_t>(hi) << 32) | lo;
  }
  // Matches the first `n` lanes' messages (`mine`, arrival order = lane order) against `cm`'s PRQ
  // in one engine call; unmatched ones join the UMQ in lane order with their lane as handle. Returns
  // this lane's receive handle, or -1.
  __device__ int32_t batch_match(CommState& cm, const matching::Envelope& mine, uint32_t lane, uint32_t n) const {
    MatchScratch& m = s_.ctl->match;
    if (lane < n) m.batch[lane] = mine;
    if (lane == 0) {
      m.n_matches = 0;
      m.status = 0;
    }
    __syncwarp();
    run_warp_engine(cm, m.batch, n, nullptr, 0, m.batch_matches, m.batch_scratch);
    int32_t recv = -1;
    const uint32_t nm = m.n_matches;
    for (uint32_t j = 0; j < nm; ++j)
      if (m.batch_matches[j].msg == lane) recv = static_cast<int32_t>(m.batch_matches[j].recv);
    __syncwarp();
    return recv;
  }

  // ---- progress lock ----
  __device__ bool try_lock() const {
    return mem::compare_exchange<mem::kDevice>(&s_.ctl->lock, uint64_t{0}, uint64_t{1}, mem::acquire) == 0;
  }
  __device__ void unlock() const { mem::store<mem::kDevice>(&s_.ctl->lock, uint64_t{0}, mem::release); }
  // Leaves the lock and frees request `id` with one fence for both (the group's earlier writes
  // first: every thread fences, the group syncs, then the leader's two relaxed writes each form a
  // release pattern with its fence). The caller read what it needs of the request before.
  template <class C>
  __device__ void unlock_and_give(C c, uint64_t* req_bits, uint32_t id) const {
    mem::fence<mem::kDevice>(mem::acq_rel);
    coop::sync(c);
    if (coop::thread_rank(c) == 0) {
      mem::red_and<mem::kDevice>(&req_bits[id / 64], ~(uint64_t(1) << (id % 64)), mem::relaxed);
      mem::store<mem::kDevice>(&s_.ctl->lock, uint64_t{0}, mem::relaxed);
    }
  }

  // ---- time and failures ----
  __device__ uint64_t now_ns() const { return mem::globaltimer(); }
  __device__ void pause(uint32_t i) const {
    if (i > 64) __nanosleep(i > 4096 ? 512 : 64);
  }
  // Whether to time this match for the `match_ns` counter: about one match in 32 (reading the
  // global timer twice costs more than a short match), counted 32 times.
  __device__ bool sample_match() const {
#if defined(__CUDA_ARCH__)
    return (clock() & 31u) == 0u;
#else
    return (now_ns() & 31u) == 0u;  // the SIMT emulation of the tests
#endif
  }
  static constexpr uint64_t kMatchSampleScale = 32;
  // Polls a waiter makes while it holds the progress lock (protocol_complete.hpp, wait): some
  // 50-100 us before it checks the clock and the job's state and lets other groups in.
  static constexpr uint32_t kHoldPolls = 256;
  __device__ uint64_t timeout_ns() const { return h_.timeout_ns; }
  __device__ uint32_t job_failed() const { return gpucomm::detail::job_failed(h_); }
  // Leaves the messaging record (the first failing thread of the PE wins), then the base record,
  // and traps; the host reads both (Messenger::check_device).
  __device__ __noinline__ void fail(const Diag& d) const {
    Diag* rec = s_.diag;
    if (mem::compare_exchange<mem::kSystem>(&rec->state, 0u, 1u, mem::relaxed) == 0u) {
      Diag copy = d;
      copy.state = 1;
      *rec = copy;
      mem::store<mem::kSystem>(&rec->state, 2u, mem::release);
    }
    DeviceFault f = DeviceFault::bad_argument;
    if (d.kind == DiagKind::timeout) f = DeviceFault::timeout;
    if (d.kind == DiagKind::peer_failure) f = DeviceFault::aborted;
    gpucomm::detail::fail(h_, f, DeviceOp::message, d.peer, nullptr, Cmp::eq, d.value, d.limit, d.elapsed_ns);
  }

 private:
  // The warp engine of `cm`'s mode on a batch of messages and receives against its queues (one
  // warp; results in `matches`, their count and the status in the Control block's scratch).
  __device__ void run_warp_engine(CommState& cm, const matching::Envelope* msgs, uint32_t n_msgs,
                                  const matching::Envelope* recvs, uint32_t n_recvs, matching::Match* matches,
                                  int32_t* scratch) const {
    MatchScratch& m = s_.ctl->match;
    auto& warp_shared = reinterpret_cast<matching::WarpMatchShared&>(m.taken);
    matching::MatchJob job{};
    job.umq = cm.umq;
    job.umq_size = &cm.umq_n;
    job.umq_cap = cm.cap;
    job.prq = cm.prq;
    job.prq_size = &cm.prq_n;
    job.prq_cap = cm.cap;
    job.msgs = msgs;
    job.n_msgs = n_msgs;
    job.recvs = recvs;
    job.n_recvs = n_recvs;
    job.matches = matches;
    job.n_matches = &m.n_matches;
    job.scratch = scratch;
    job.status = &m.status;
    switch (cm.mode) {
      case Mode::no_any_source:
        matching::match_partitioned(coop::Warp{}, job, warp_shared);
        break;
      case Mode::no_unexpected:
        matching::match_no_unexpected(coop::Warp{}, job, warp_shared);
        break;
      default:
        matching::match_ordered(coop::Warp{}, job, warp_shared);
        break;
    }
    __syncwarp();
  }

  // One envelope against a communicator's queues with the engine of its mode (a warp; warp 0 of a
  // block), the reference semantics (appends when unmatched). Returns the partner's handle or -1.
  template <class C>
  __device__ __noinline__ int32_t run_engine(C c, CommState& cm, const matching::Envelope& e, bool is_recv) const {
    static_assert(sizeof(MatchScratch::taken) == sizeof(matching::WarpMatchShared));
    MatchScratch& m = s_.ctl->match;
    // A warp-level caller's own warp runs the engine; warp 0 for a block.
    if (std::is_same_v<C, coop::Warp> || coop::warp_id() == 0) {
      if (coop::lane_id() == 0) {
        m.probe = e;
        m.n_matches = 0;
        m.status = 0;
      }
      __syncwarp();
      run_warp_engine(cm, is_recv ? nullptr : &m.probe, is_recv ? 0u : 1u, is_recv ? &m.probe : nullptr,
                      is_recv ? 1u : 0u, m.matches, m.scratch);
    }
    coop::sync(c);  // warp 0's results (global memory) visible to the group
    if (m.n_matches == 0) return -1;
    return static_cast<int32_t>(is_recv ? m.matches[0].msg : m.matches[0].recv);
  }

  const DeviceHandle& h_;
  const StateView& s_;
  mutable int32_t own_ = -1;
};

}  // namespace gpucomm::msg::dev
