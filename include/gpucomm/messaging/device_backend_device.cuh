#pragma once
// The memory backend of GPU PEs (protocol_alloc.hpp lists what a backend provides): the one-sided
// device API under the protocol, so every operation to a peer goes over NVLink/PCIe P2P directly
// or through the proxy that serves the peer (device::put/get/signal route by themselves; LL
// stores only where the route is direct). Local words at device scope, words other PEs touch at
// system scope (gpucomm/base/ordering_device.cuh).
//
// Shared memory (static, per block; docs/MESSAGING.md "Shared memory a call adds"):
//   HolderCache  the progress holder's hot words (header, wildcard and per-context counts, the
//                first kHotPeers peers) and a direct-mapped cache of key slots, write-through: the
//                same block holding progress again in the same tenure keeps them, another block
//                (a new tenure) reloads them from local memory;
//   FastRole     the fast-post role of a group of this block: the next log entry and a stash of
//                request slots (protocol_alloc.hpp, "Posts").
#if !defined(GPUCOMM_SIMT_EMULATION)
#include <cuda/atomic>
#endif
#include <type_traits>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/handle_device.cuh"
#include "gpucomm/device/rma_device.cuh"
#include "gpucomm/messaging/protocol_am.hpp"
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

// Sizes of the shared-memory state (overridable before the first include).
#ifndef GPUCOMM_MSG_KEY_LINES
#define GPUCOMM_MSG_KEY_LINES 256
#endif
#ifndef GPUCOMM_MSG_HOT_PEERS
#define GPUCOMM_MSG_HOT_PEERS 8
#endif
inline constexpr uint32_t kKeyLines = GPUCOMM_MSG_KEY_LINES;
static_assert((kKeyLines & (kKeyLines - 1)) == 0, "GPUCOMM_MSG_KEY_LINES must be a power of two");
inline constexpr uint32_t kHotPeers = GPUCOMM_MSG_HOT_PEERS;
inline constexpr uint32_t kHotWords = home::kPeers + kHotPeers * home::kPeerWords;

struct HolderCache {
  uint64_t grid;    // the launch whose block filled it
  uint64_t tenure;  // the holder tenure it belongs to
  uint64_t parked;  // the holder word this block parked progress with
  uint32_t block;   // that block
  uint32_t valid;
  uint64_t hot[kHotWords];
  uint32_t tag[kKeyLines];  // key slot + 1 held by the line, 0: none
  uint64_t key[kKeyLines][home::kKeyWords];
};
// The fast poster takes request slots this many at a time (a bounded stash: it never holds a whole
// bitmap word that other posters would find full).
inline constexpr uint32_t kFastStash = 16;
struct FastRole {
  uint64_t grid;
  uint32_t block;
  uint32_t owner;  // the group holding the role (group_id), 0: none
  uint32_t next;   // the next fast-post index
  int32_t word;    // the stash's bitmap word
  uint64_t stash;  // request slots taken and not used yet
};

__device__ inline HolderCache& holder_cache() {
  __shared__ HolderCache c;
  return c;
}
// Fast posts a warp read ahead for its leader (protocol_progress.hpp, read_fast_run).
__device__ inline proto::Post* post_scratch_array() {
  __shared__ proto::Post p[kBatchMax];
  return p;
}
__device__ inline FastRole& fast_role() {
  __shared__ FastRole r;
  return r;
}

__device__ __forceinline__ uint32_t block_linear() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
// The owner of the fast-post role: the thread that posts (calls of a warp or a block post from
// their first thread).
__device__ __forceinline__ uint32_t poster_id() {
  return coop::linear_thread_index() + 1;
}

class DeviceBackend {
 public:
  // `sticky`: a holder parks (user kernels); the library's own short kernels free progress.
  __device__ DeviceBackend(const DeviceHandle& h, const StateView& s, bool sticky = true)
      : h_(h), s_(s), sticky_(sticky) {}

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
  // Posted: the relaxed and/or of a bitmap whose old value nobody needs.
  __device__ uint64_t fand(uint64_t* p, uint64_t v, Ord o) const {
    if (o == Ord::relaxed) {
      mem::red_and<mem::kDevice>(p, v, mem::relaxed);
      return 0;
    }
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
  __device__ void st2(uint64_t* p, uint64_t a, uint64_t b) const { mem::store2<mem::kDevice>(p, a, b); }
  __device__ void ld2(const uint64_t* p, uint64_t& a, uint64_t& b) const { mem::load2<mem::kDevice>(p, a, b); }
  __device__ void ld2_sys(const uint64_t* p, uint64_t& a, uint64_t& b) const { mem::load2<mem::kSystem>(p, a, b); }
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
  // Acquire fences after a relaxed load that saw a flag: of this GPU's threads (posts, records),
  // of any PE (ring slots, words peers write).
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
    if (pe == h_.rank) return static_cast<char*>(const_cast<void*>(sym));  // no peer table to read
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
  // Where a grab of request slots starts: spread over the bitmap by SM and warp.
  __device__ uint32_t slot_hint() const {
    uint32_t sm = 0;
#if defined(__CUDA_ARCH__)
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
#endif
    return sm * 4 + coop::warp_id();
  }

  // ---- the holder's words (valid while this group holds progress) ----
  __device__ uint64_t hw(uint32_t i) const { return i < kHotWords ? holder_cache().hot[i] : s_.home[i]; }
  __device__ void set_hw(uint32_t i, uint64_t v) const {
    s_.home[i] = v;
    if (i < kHotWords) holder_cache().hot[i] = v;
    dirty_ = true;
  }
  __device__ uint64_t hw_peek(uint32_t i) const { return hw(i); }
  __device__ uint64_t kw(uint32_t slot, uint32_t w) const {
    HolderCache& c = holder_cache();
    const uint32_t l = slot & (kKeyLines - 1);
    if (c.tag[l] != slot + 1) {
      const uint64_t* g = &s_.home[s_.hm.keys + slot * home::kKeyWords];
      for (uint32_t i = 0; i < home::kKeyWords; ++i) c.key[l][i] = g[i];
      c.tag[l] = slot + 1;
    }
    return c.key[l][w];
  }
  __device__ void set_kw(uint32_t slot, uint32_t w, uint64_t v) const {
    s_.home[s_.hm.keys + slot * home::kKeyWords + w] = v;
    HolderCache& c = holder_cache();
    const uint32_t l = slot & (kKeyLines - 1);
    if (c.tag[l] == slot + 1) c.key[l][w] = v;
    dirty_ = true;
  }
  // Lanes reading in parallel: no fill (two lanes filling one line could mix their words).
  __device__ uint64_t kw_peek(uint32_t slot, uint32_t w) const {
    const HolderCache& c = holder_cache();
    const uint32_t l = slot & (kKeyLines - 1);
    return c.tag[l] == slot + 1 ? c.key[l][w] : s_.home[s_.hm.keys + slot * home::kKeyWords + w];
  }

  // ---- holding progress (protocol_progress.hpp) ----
  // The tenure this block's cache belongs to, or ~0 when it holds nothing of this launch.
  __device__ uint64_t cache_tenure() const {
    const HolderCache& c = holder_cache();
    if (c.valid != 1 || c.grid != mem::grid_id() || c.block != block_linear()) return ~uint64_t(0);
    return c.tenure;
  }
  // Progress taken in `tenure`; `claim`: a new tenure (the cache is reloaded from local memory).
  __device__ void held(uint64_t tenure, bool claim) const {
    tenure_ = tenure;
    dirty_ = false;
    if (!claim) return;
    HolderCache& c = holder_cache();
    c.valid = 0;
    for (uint32_t i = 0; i < kHotWords; ++i) c.hot[i] = s_.home[i];
    for (uint32_t l = 0; l < kKeyLines; ++l) c.tag[l] = 0;
    c.grid = mem::grid_id();
    c.block = block_linear();
    c.tenure = tenure;
    c.valid = 1;
  }
  __device__ uint64_t tenure() const { return tenure_; }
  // Progress left with holder word `w` (try_hold tries it first).
  __device__ void unheld(uint64_t w) const {
    dirty_ = false;
    holder_cache().parked = w;
  }
  __device__ uint64_t parked_word() const { return holder_cache().parked; }
  __device__ proto::Post* post_scratch() const { return post_scratch_array(); }
  __device__ bool dirty() const { return dirty_; }
  __device__ bool sticky() const { return sticky_; }

  // ---- the request the holder's group waits for (its completion stays in registers) ----
  __device__ void set_own(uint32_t slot, uint32_t stamp) const {
    own_slot_ = slot;
    own_stamp_ = stamp;
    own_ready_ = false;
  }
  __device__ bool is_own(uint32_t slot, uint32_t stamp) const { return slot == own_slot_ && stamp == own_stamp_; }
  __device__ void own_done(const proto::Completion& cp) const {
    own_ = cp;
    own_ready_ = true;
  }
  __device__ bool own_ready() const { return own_ready_; }
  __device__ proto::Completion own_completion() const { return own_; }

  // ---- fast posts (protocol_alloc.hpp, "Posts") ----
  // Posts a plain receive through the fast-post log when this group holds the role or takes it
  // now; otherwise through the ring with a slot of the same grab. True when it posted (r holds the
  // request, or the error); false when the ring path of the caller must post (events, blocks).
  template <class C>
  __device__ bool fast_post(C c, const proto::Post& p, proto::Started& r) const {
    if constexpr (std::is_same_v<C, coop::Block>) {
      return false;
    } else {
      if (p.event != nullptr) return false;
      FastRole& f = fast_role();
      const uint32_t me = poster_id();
      if (leader(c)) {
        const uint64_t grid = mem::grid_id();
        const bool mine = f.owner == me && f.grid == grid && f.block == block_linear();
        r = proto::Started{};
        if (!mine) {
          // The role and a grab of slots in one round trip (two independent atomics).
          const uint64_t old = mem::fetch_or<mem::kDevice>(&s_.ctl->post_tail, kPostRole, mem::relaxed);
          const proto::Grab g = proto::slots_grab(*this, s_, slot_hint(), kFastStash);
          if (g.word < 0) {
            if ((old & kPostRole) == 0) mem::red_and<mem::kDevice>(&s_.ctl->post_tail, ~kPostRole, mem::relaxed);
            r.error = static_cast<uint32_t>(DiagKind::resource);
          } else if ((old & kPostRole) == 0) {
            f.grid = grid;
            f.block = block_linear();
            f.owner = me;
            f.next = post_fast_count(old);
            f.word = g.word;
            f.stash = g.bits;
          } else {
            // Someone else posts fast: this post goes through the ring with one slot of the grab.
            const uint32_t i = lowest_bit(g.bits);
            proto::slots_give(*this, s_, static_cast<uint32_t>(g.word), g.bits & ~(uint64_t(1) << i));
            proto::Post q = p;
            q.slot = static_cast<uint32_t>(g.word) * 64 + i;
            const uint32_t t = proto::post_ring(*this, s_, q, true);
            r = proto::Started{q.slot + 1, proto::request_stamp_ring(t), 0};
          }
        }
        if (r.id == 0 && r.error == 0) {
          if (f.stash == 0) {
            const proto::Grab g = proto::slots_grab(*this, s_, slot_hint(), kFastStash);
            f.word = g.word;
            f.stash = g.bits;
          }
          if (f.word < 0) {
            r.error = static_cast<uint32_t>(DiagKind::resource);
          } else {
            const uint32_t i = lowest_bit(f.stash);
            f.stash &= ~(uint64_t(1) << i);
            const uint32_t k = f.next;
            f.next = (k + 1) & static_cast<uint32_t>(kPostFastMask);
            proto::Post q = p;
            q.slot = static_cast<uint32_t>(f.word) * 64 + i;
            q.stamp = proto::request_stamp_fast(k);
            uint32_t w[kFastWords];
            proto::fast_fields(q, w);
            uint64_t* e = proto::fast_entry(s_, k);
            const uint32_t st = proto::fast_stamp(k);
            for (uint32_t j = 0; j < kFastWords; j += 2)
              mem::store2<mem::kDevice>(&e[j], proto::stamped(st, w[j]), proto::stamped(st, w[j + 1]));
            mem::red_add<mem::kDevice>(&s_.ctl->post_tail, uint64_t(1) << kPostFastShift, mem::relaxed);
            // The add that wraps the fast field carries into bit 62: take it back out.
            if (k == static_cast<uint32_t>(kPostFastMask))
              mem::red_add<mem::kDevice>(&s_.ctl->post_tail, ~(uint64_t(1) << 62) + 1, mem::relaxed);
            r = proto::Started{q.slot + 1, q.stamp, 0};
          }
        }
      }
      r = bcast(c, r);
      return true;
    }
  }
  // Gives the role back (and the slots of its stash) if this group holds it: before a call that
  // may wait, so that another group can post fast meanwhile.
  template <class C>
  __device__ void fast_release(C c) const {
    if (!leader(c)) return;
    FastRole& f = fast_role();
    if (f.owner != poster_id() || f.grid != mem::grid_id() || f.block != block_linear()) return;
    mem::red_and<mem::kDevice>(&s_.ctl->post_tail, ~kPostRole, mem::relaxed);
    if (f.word >= 0) proto::slots_give(*this, s_, static_cast<uint32_t>(f.word), f.stash);
    f.stash = 0;
    f.owner = 0;
  }

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
  __device__ uint32_t batch_match_any(uint32_t v) const { return __match_any_sync(0xffffffffu, v); }

  // ---- time and failures ----
  __device__ uint64_t now_ns() const { return mem::globaltimer(); }
  // Waits spin for a few thousand polls (a millisecond) before they sleep between polls: a
  // sleep is latency added to whatever the wait sees next.
  __device__ void pause(uint32_t i) const {
    if (i > 4096) __nanosleep(i > 65536 ? 512 : 64);
  }
  // Rounds a waiter runs while it holds progress (protocol_complete.hpp, hold_for) before it looks
  // at the clock and the job's state: some 50-100 us.
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
  const DeviceHandle& h_;
  const StateView& s_;
  bool sticky_;
  mutable bool dirty_ = false;
  mutable uint64_t tenure_ = 0;
  mutable uint32_t own_slot_ = 0xffffffffu;
  mutable uint32_t own_stamp_ = 0;
  mutable bool own_ready_ = false;
  mutable proto::Completion own_{};
};

}  // namespace gpucomm::msg::dev
