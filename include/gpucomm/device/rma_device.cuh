#pragma once
// One-sided operations from device code on the symmetric heap (see docs/RMA.md).
//
// Every function takes the cooperation level first where a group can share the work, then the
// DeviceHandle. All threads of the group call with the same arguments. Symmetric addresses are
// this PE's addresses (from Runtime::malloc); `pe` picks whose copy is accessed.
//
// Ordering (ARCHITECTURE.md, "Memory ordering"; every access through gpucomm/base/
// ordering_device.cuh): puts are plain stores into the peer's memory; signals are release
// operations at system scope, waits are acquire loads at system scope, so whoever sees a signal
// sees the data put before it. fence() and quiet() are fence.acq_rel.sys by every thread of the
// group, then the group's barrier. Operations to a PE that a proxy serves (a forced proxy
// transport, or a PE not mapped here) become descriptors in the caller's queue
// (gpucomm/proxy/routed_device.cuh); quiet(c, h) then also waits for the queue, and the agent
// keeps data before signal on every path.
#include <cstddef>
#include <cstdint>
#include <cuda/std/type_traits>

#include "gpucomm/base/copy_device.cuh"
#include "gpucomm/base/handle_device.cuh"
#include "gpucomm/proxy/routed_device.cuh"

namespace gpucomm::device {

// Direct address of `pe`'s copy of `sym` for plain loads and stores, or nullptr when `pe`
// is not reachable from this GPU.
template <class T>
__device__ inline T* ptr(const DeviceHandle& h, T* sym, int pe) {
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(h.size)) return nullptr;
  char* b = h.peer_bases[pe];
  return b ? reinterpret_cast<T*>(b + (reinterpret_cast<const char*>(sym) - h.heap_base)) : nullptr;
}

// ---- ordering ----

// Orders this thread's earlier puts and signals before its later ones, to every PE. For a
// group: each thread fences its own accesses, then the group synchronizes. (Queued entries are
// performed in queue order, so the queue needs nothing more.)
template <class Coop>
__device__ inline void fence(Coop c) {
  mem::fence<mem::kSystem>(mem::acq_rel);
  coop::sync(c);
}
// Orders every earlier direct put of the group's threads before anything the group does next:
// whoever observes a later write of the group (a signal, a flag) sees the puts.
template <class Coop>
__device__ inline void quiet(Coop c) {
  mem::fence<mem::kSystem>(mem::acq_rel);
  coop::sync(c);
}
// The same, and also waits until the agent completed every entry of the group's queue(s): the
// form to use when a proxy may serve some PE (a forced proxy transport, PEs on other nodes).
template <class Coop>
__device__ inline void quiet(Coop c, const DeviceHandle& h) {
  mem::fence<mem::kSystem>(mem::acq_rel);
  proxy::quiet_group(c, h);
  coop::sync(c);
}

// ---- put / get ----

// Non-blocking put: the stores are issued; quiet() or a later signal makes them visible.
template <class Coop>
__device__ inline void put_nbi(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes, int pe) {
  if (proxy::serves(h, pe)) return proxy::routed_put(c, h, dst, src, bytes, pe, false);
  char* r = detail::remote(h, static_cast<char*>(dst), bytes, 1, DeviceOp::put, pe);
  detail::copy(c, r, src, bytes);
}
// Blocking put: on return `src` may be reused by every thread of the group.
template <class Coop>
__device__ inline void put(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes, int pe) {
  if (proxy::serves(h, pe)) return proxy::routed_put(c, h, dst, src, bytes, pe, true);
  put_nbi(c, h, dst, src, bytes, pe);
  coop::sync(c);
}
template <class Coop>
__device__ inline void get_nbi(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes, int pe) {
  if (proxy::serves(h, pe)) return proxy::routed_get(c, h, dst, src, bytes, pe, false);
  const char* r = detail::remote(h, static_cast<const char*>(src), bytes, 1, DeviceOp::get, pe);
  detail::copy(c, dst, r, bytes);
}
// Blocking get: on return `dst` holds the data for every thread of the group.
template <class Coop>
__device__ inline void get(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes, int pe) {
  if (proxy::serves(h, pe)) return proxy::routed_get(c, h, dst, src, bytes, pe, true);
  get_nbi(c, h, dst, src, bytes, pe);
  coop::sync(c);
}

// Scalar put and get (one thread). Words of 1, 2, 4 or 8 bytes are single relaxed accesses at
// system scope (never torn, never cached in a register across calls); larger types are copied.
template <class T>
__device__ inline void p(const DeviceHandle& h, T* dst, cuda::std::type_identity_t<T> value, int pe) {
  if (proxy::serves(h, pe)) return proxy::routed_p(h, dst, value, pe);
  T* r = detail::remote(h, dst, sizeof(T), alignof(T), DeviceOp::p, pe);
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    mem::store<mem::kSystem>(r, value, mem::relaxed);
  } else {
    *reinterpret_cast<volatile T*>(r) = value;  // sub-word and odd sizes: volatile keeps the store
  }
}
template <class T>
__device__ inline T g(const DeviceHandle& h, const T* src, int pe) {
  if (proxy::serves(h, pe)) return proxy::routed_g(h, src, pe);
  const T* r = detail::remote(h, src, sizeof(T), alignof(T), DeviceOp::g, pe);
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    return mem::load<mem::kSystem>(r, mem::relaxed);
  } else {
    return *reinterpret_cast<const volatile T*>(r);  // sub-word and odd sizes: volatile keeps the load
  }
}

// ---- signals ----

// Sets or adds to `pe`'s copy of the signal word (release, system scope: earlier stores of this
// thread, and of threads it synchronized with, are visible to whoever sees the new value).
__device__ inline void signal(const DeviceHandle& h, uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  if (proxy::serves(h, pe)) {
    detail::check_sym(h, sig, sizeof(uint64_t), 8, DeviceOp::signal, pe);
    proxy::routed_signal_at(h, detail::heap_offset(h, sig), value, op, pe);
    return;
  }
  mem::signal<mem::kSystem>(detail::remote(h, sig, sizeof(uint64_t), 8, DeviceOp::signal, pe), op, value);
}
// The former name of signal().
__device__ inline void signal_op(const DeviceHandle& h, uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  signal(h, sig, value, op, pe);
}

// Put then signal: whoever sees the signal sees the data. The group's stores are fenced by
// every thread before the leader's release.
template <class Coop>
__device__ inline void put_signal_nbi(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes,
                                      uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  if (proxy::serves(h, pe)) return proxy::routed_put_signal(c, h, dst, src, bytes, sig, value, op, pe, false);
  char* r = detail::remote(h, static_cast<char*>(dst), bytes, 1, DeviceOp::put_signal, pe);
  detail::copy(c, r, src, bytes);
  detail::publish_group(c);
  if (detail::leader(c)) signal(h, sig, value, op, pe);
}
template <class Coop>
__device__ inline void put_signal(Coop c, const DeviceHandle& h, void* dst, const void* src, size_t bytes,
                                  uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  if (proxy::serves(h, pe)) return proxy::routed_put_signal(c, h, dst, src, bytes, sig, value, op, pe, true);
  put_signal_nbi(c, h, dst, src, bytes, sig, value, op, pe);
  coop::sync(c);
}

// Waits until this PE's signal word satisfies `cmp value` (acquire) and returns the value seen.
// The leader polls; the group synchronizes afterwards, so every thread may read the data.
template <class Coop>
__device__ inline uint64_t signal_wait_until(Coop c, const DeviceHandle& h, uint64_t* sig, Cmp cmp, uint64_t value) {
  detail::check_sym(h, sig, sizeof(uint64_t), 8, DeviceOp::signal_wait_until, h.rank);
  uint64_t seen = 0;
  if (detail::leader(c)) seen = detail::wait(h, sig, cmp, value, DeviceOp::signal_wait_until, -1);
  return detail::broadcast(c, seen);
}
__device__ inline uint64_t signal_fetch(const DeviceHandle& h, const uint64_t* sig) {
  detail::check_sym(h, sig, sizeof(uint64_t), 8, DeviceOp::signal, h.rank);
  return mem::load<mem::kSystem>(sig, mem::acquire);
}

// ---- point-to-point synchronization on heap words (int32_t, uint32_t, int64_t, uint64_t) ----

template <class Coop, class T>
__device__ inline T wait_until(Coop c, const DeviceHandle& h, T* ivar, Cmp cmp, cuda::std::type_identity_t<T> value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "wait_until works on 32- and 64-bit words");
  detail::check_sym(h, ivar, sizeof(T), sizeof(T), DeviceOp::wait_until, h.rank);
  T seen{};
  if (detail::leader(c)) seen = detail::wait(h, ivar, cmp, value, DeviceOp::wait_until, -1);
  return detail::broadcast(c, seen);
}
template <class T>
__device__ inline bool test(const DeviceHandle& h, T* ivar, Cmp cmp, cuda::std::type_identity_t<T> value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "test works on 32- and 64-bit words");
  detail::check_sym(h, ivar, sizeof(T), sizeof(T), DeviceOp::test, h.rank);
  return compare(mem::load<mem::kSystem>(ivar, mem::acquire), cmp, value);
}

}  // namespace gpucomm::device
