#pragma once
// The memory backend of host-memory PEs (protocol_alloc.hpp lists what a backend provides): the
// protocol's local words through std::atomic_ref, the peers' rings and words through their mapped
// heap regions where the route is direct (shared memory of the node), otherwise through the
// Runtime's put/get/signal (the CPU proxy, UCX to other nodes). Cooperation level: coop::Thread.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "core/host_wait.hpp"
#include "diag.hpp"
#include "gpucomm/base/coop.cuh"
#include "gpucomm/messaging/layout.hpp"
#include "gpucomm/messaging/protocol_alloc.hpp"
#include "gpucomm/messaging/protocol_send.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::msg::detail {

constexpr std::memory_order host_order(Ord o) {
  switch (o) {
    case Ord::relaxed:
      return std::memory_order_relaxed;
    case Ord::acquire:
      return std::memory_order_acquire;
    case Ord::release:
      return std::memory_order_release;
    case Ord::acq_rel:
      return std::memory_order_acq_rel;
  }
  return std::memory_order_seq_cst;
}
constexpr std::memory_order load_order(Ord o) {
  return o == Ord::acquire || o == Ord::acq_rel ? std::memory_order_acquire : std::memory_order_relaxed;
}
constexpr std::memory_order store_order(Ord o) {
  return o == Ord::release || o == Ord::acq_rel ? std::memory_order_release : std::memory_order_relaxed;
}

class HostBackend {
 public:
  // `direct[pe]`: pe's heap as mapped here when the route to it is direct, else nullptr.
  HostBackend(Runtime& rt, const Config& cfg, const std::vector<char*>& direct, const StateView& view,
              uint64_t timeout_ns)
      : rt_(&rt),
        cfg_(&cfg),
        direct_(&direct),
        view_(&view),
        heap_base_(rt.heap().base()),
        heap_size_(rt.heap().size()),
        timeout_ns_(timeout_ns) {}

  // ---- group (one host thread) ----
  static bool leader(coop::Thread) { return true; }
  static uint32_t group_rank(coop::Thread) { return 0; }
  static uint32_t group_size(coop::Thread) { return 1; }
  template <class T>
  static T bcast(coop::Thread, const T& v) {
    return v;
  }
  static void sync(coop::Thread) {}
  static void publish(coop::Thread) {}
  static void publish_local(coop::Thread) {}
  static void publish_to(coop::Thread, int32_t) {}
  static void acquire_fence_local() { std::atomic_thread_fence(std::memory_order_acquire); }
  static void release_fence_local() { std::atomic_thread_fence(std::memory_order_release); }
  static void acquire_fence_sys() { std::atomic_thread_fence(std::memory_order_acquire); }
  static bool any(coop::Thread, bool v) { return v; }
  static void copy(coop::Thread, void* dst, const void* src, size_t n) {
    if (n) std::memcpy(dst, src, n);
  }

  // ---- words ----
  static uint64_t ld(const uint64_t* p, Ord o) {
    return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(load_order(o));
  }
  static void st(uint64_t* p, uint64_t v, Ord o) { std::atomic_ref<uint64_t>(*p).store(v, store_order(o)); }
  static uint64_t fadd(uint64_t* p, uint64_t v, Ord o) {
    return std::atomic_ref<uint64_t>(*p).fetch_add(v, host_order(o));
  }
  static uint64_t fand(uint64_t* p, uint64_t v, Ord o) {
    return std::atomic_ref<uint64_t>(*p).fetch_and(v, host_order(o));
  }
  static uint64_t for_(uint64_t* p, uint64_t v, Ord o) {
    return std::atomic_ref<uint64_t>(*p).fetch_or(v, host_order(o));
  }
  static bool cas(uint64_t* p, uint64_t& expected, uint64_t desired, Ord o) {
    return std::atomic_ref<uint64_t>(*p).compare_exchange_weak(expected, desired, host_order(o), load_order(o));
  }
  static uint64_t ld_sys(const uint64_t* p, Ord o) { return ld(p, o); }
  static void st2(uint64_t* p, uint64_t a, uint64_t b) {
    st(p, a, Ord::relaxed);
    st(p + 1, b, Ord::relaxed);
  }
  static void ld2(const uint64_t* p, uint64_t& a, uint64_t& b) {
    a = ld(p, Ord::relaxed);
    b = ld(p + 1, Ord::relaxed);
  }
  static void ld2_sys(const uint64_t* p, uint64_t& a, uint64_t& b) { ld2(p, a, b); }
  static void st_sys(uint64_t* p, uint64_t v, Ord o) { st(p, v, o); }
  static void st_to(int32_t, uint64_t* p, uint64_t v, Ord o) { st(p, v, o); }
  static void count(uint64_t* p, uint64_t v) { std::atomic_ref<uint64_t>(*p).fetch_add(v, std::memory_order_relaxed); }

  // ---- remote ----
  char* peer(const void* sym, int32_t pe) const {
    char* base = (*direct_)[static_cast<size_t>(pe)];
    return base ? base + (static_cast<const char*>(sym) - heap_base_) : nullptr;
  }
  void put(coop::Thread, void* sym_dst, const void* src, size_t n, int32_t pe) const {
    if (n) rt_->put(sym_dst, src, n, pe);
  }
  void get(coop::Thread, void* dst, const void* sym_src, size_t n, int32_t pe) const {
    if (n) rt_->get(dst, sym_src, n, pe);
  }
  void signal_set(uint64_t* sym, uint64_t v, int32_t pe) const { rt_->signal(sym, v, SignalOp::set, pe); }
  void publish_remote_add(uint64_t* sym, uint64_t v, int32_t pe) const {
    if (auto* p = reinterpret_cast<uint64_t*>(peer(sym, pe))) {
      std::atomic_ref<uint64_t>(*p).fetch_add(v, std::memory_order_release);
    } else {
      rt_->signal(sym, v, SignalOp::add, pe);
    }
  }
  bool in_heap(const void* p, size_t n) const {
    auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(heap_base_);
    return a >= b && a - b <= heap_size_ && n <= heap_size_ - (a - b);
  }
  uint64_t heap_offset(const void* p) const { return static_cast<uint64_t>(static_cast<const char*>(p) - heap_base_); }
  char* heap_base() const { return heap_base_; }

  // Request slots: a grab starts at a word picked by the calling thread.
  static uint32_t slot_hint() {
    return static_cast<uint32_t>(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  }

  // ---- the holder's words: plain accesses (only the holder touches them; taking and parking
  // progress order them) ----
  uint64_t hw(uint32_t i) const { return view_->home[i]; }
  void set_hw(uint32_t i, uint64_t v) const { view_->home[i] = v; }
  uint64_t hw_peek(uint32_t i) const { return hw(i); }
  uint64_t kw(uint32_t slot, uint32_t w) const { return view_->home[view_->hm.keys + slot * home::kKeyWords + w]; }
  void set_kw(uint32_t slot, uint32_t w, uint64_t v) const {
    view_->home[view_->hm.keys + slot * home::kKeyWords + w] = v;
  }
  uint64_t kw_peek(uint32_t slot, uint32_t w) const { return kw(slot, w); }

  // ---- holding progress: no cache, so progress is freed, never parked; the holding thread is
  // remembered per thread, so an error can release it ----
  static uint64_t cache_tenure() { return ~uint64_t(0); }
  void held(uint64_t tenure, bool) const {
    tenure_ = tenure;
    held_ = view_;
  }
  static uint64_t tenure() { return tenure_; }
  static void unheld(uint64_t) { held_ = nullptr; }
  static uint64_t parked_word() { return ~uint64_t(0); }
  static proto::Post* post_scratch() { return nullptr; }
  static bool dirty() { return false; }
  static bool sticky() { return false; }
  // After an error escaped a protocol call: frees progress if this thread holds it.
  void release_if_held() const {
    if (held_ != view_) return;
    held_ = nullptr;
    std::atomic_ref<uint64_t>(view_->ctl->holder)
        .store(holder_word(kHolderFree, tenure_, 0), std::memory_order_release);
  }

  // ---- the request the holding thread waits for ----
  static void set_own(uint32_t slot, uint32_t stamp) {
    own_slot_ = slot;
    own_stamp_ = stamp;
    own_ready_ = false;
  }
  static bool is_own(uint32_t slot, uint32_t stamp) { return slot == own_slot_ && stamp == own_stamp_; }
  static void own_done(const proto::Completion& cp) {
    own_ = cp;
    own_ready_ = true;
  }
  static bool own_ready() { return own_ready_; }
  static proto::Completion own_completion() { return own_; }

  // No fast-post role: host threads post through the ring.
  static bool fast_post(coop::Thread, const proto::Post&, proto::Started&) { return false; }
  static void fast_release(coop::Thread) {}

  // ---- time and failures ----
  static uint64_t now_ns() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }
  // Backoff of wait loops: spin, then yield, then short sleeps (like the runtime's host waits).
  static void pause(uint32_t i) {
    if (i < 256) {
      gpucomm::detail::cpu_relax();
    } else if (i < 4096) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  static bool sample_match() { return true; }
  static constexpr uint64_t kMatchSampleScale = 1;
  static constexpr uint32_t kHoldPolls = 1;  // host waiters yield between rounds (shared cores)
  uint64_t timeout_ns() const { return timeout_ns_; }
  uint32_t job_failed() const { return rt_->failed() ? 1u : 0u; }
  [[noreturn]] void fail(const Diag& d) const { raise_diag(d, *cfg_); }

 private:
  Runtime* rt_;
  const Config* cfg_;
  const std::vector<char*>* direct_;
  const StateView* view_;
  char* heap_base_;
  size_t heap_size_;
  uint64_t timeout_ns_;
  static inline thread_local const StateView* held_ = nullptr;
  static inline thread_local uint64_t tenure_ = 0;
  static inline thread_local uint32_t own_slot_ = 0xffffffffu;
  static inline thread_local uint32_t own_stamp_ = 0;
  static inline thread_local bool own_ready_ = false;
  static inline thread_local proto::Completion own_{};
};

}  // namespace gpucomm::msg::detail
