#pragma once
// Atomics on `pe`'s copy of a symmetric word (int32_t, uint32_t, int64_t, uint64_t), one thread.
// Scope::system (default) is coherent with every GPU and the host; Scope::device only with
// threads of the GPU that owns the word (use it when the word lives on this GPU, e.g. pe ==
// own rank). Atomics are relaxed: order them against puts with fence()/quiet(). To a PE a proxy
// serves, an atomic is a descriptor: fetching atomics wait for the agent's answer, the others
// complete with quiet(c, h); the scope is the agent's (system).
#include <cuda/atomic>

#include "gpucomm/device/detail_device.cuh"
#include "gpucomm/proxy/rma_proxy_device.cuh"

namespace gpucomm::device {

enum class Scope { device, system };

namespace detail {
template <Scope S>
inline constexpr cuda::thread_scope kScope = S == Scope::system ? cuda::thread_scope_system : cuda::thread_scope_device;

template <Scope S, class T>
__device__ inline cuda::atomic_ref<T, kScope<S>> atomic_at(const DeviceHandle& h, T* dst, int pe) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics work on 32- and 64-bit integers");
  return cuda::atomic_ref<T, kScope<S>>(*remote(h, dst, sizeof(T), sizeof(T), DeviceOp::atomic, pe));
}
constexpr auto relaxed = cuda::std::memory_order_relaxed;
template <class T>
__device__ inline T routed(const DeviceHandle& h, T* dst, proxy::AtomicOp op, T a, T b, int pe, bool fetch) {
  return proxy_atomic(h, dst, op, a, b, pe, fetch);
}
}  // namespace detail

#define GPUCOMM_ATOMIC_VIA_PROXY(op, a, b, fetch) \
  if (detail::via_proxy(h, pe)) return detail::routed<T>(h, dst, proxy::AtomicOp::op, a, b, pe, fetch)

template <Scope S = Scope::system, class T>
__device__ inline T atomic_fetch(const DeviceHandle& h, T* dst, int pe) {
  GPUCOMM_ATOMIC_VIA_PROXY(fetch, T(0), T(0), true);
  return detail::atomic_at<S>(h, dst, pe).load(detail::relaxed);
}
template <Scope S = Scope::system, class T>
__device__ inline void atomic_set(const DeviceHandle& h, T* dst, T value, int pe) {
  if (detail::via_proxy(h, pe)) return (void)detail::routed<T>(h, dst, proxy::AtomicOp::set, value, T(0), pe, false);
  detail::atomic_at<S>(h, dst, pe).store(value, detail::relaxed);
}
template <Scope S = Scope::system, class T>
__device__ inline T atomic_fetch_add(const DeviceHandle& h, T* dst, T value, int pe) {
  GPUCOMM_ATOMIC_VIA_PROXY(fetch_add, value, T(0), true);
  return detail::atomic_at<S>(h, dst, pe).fetch_add(value, detail::relaxed);
}
template <Scope S = Scope::system, class T>
__device__ inline void atomic_add(const DeviceHandle& h, T* dst, T value, int pe) {
  if (detail::via_proxy(h, pe)) return (void)detail::routed<T>(h, dst, proxy::AtomicOp::fetch_add, value, T(0), pe, false);
  detail::atomic_at<S>(h, dst, pe).fetch_add(value, detail::relaxed);
}
template <Scope S = Scope::system, class T>
__device__ inline T atomic_fetch_inc(const DeviceHandle& h, T* dst, int pe) {
  GPUCOMM_ATOMIC_VIA_PROXY(fetch_add, T(1), T(0), true);
  return detail::atomic_at<S>(h, dst, pe).fetch_add(T(1), detail::relaxed);
}
template <Scope S = Scope::system, class T>
__device__ inline void atomic_inc(const DeviceHandle& h, T* dst, int pe) {
  if (detail::via_proxy(h, pe)) return (void)detail::routed<T>(h, dst, proxy::AtomicOp::fetch_add, T(1), T(0), pe, false);
  detail::atomic_at<S>(h, dst, pe).fetch_add(T(1), detail::relaxed);
}
template <Scope S = Scope::system, class T>
__device__ inline T atomic_swap(const DeviceHandle& h, T* dst, T value, int pe) {
  GPUCOMM_ATOMIC_VIA_PROXY(swap, value, T(0), true);
  return detail::atomic_at<S>(h, dst, pe).exchange(value, detail::relaxed);
}
// Returns the old value; the swap happened when it equals `expected`.
template <Scope S = Scope::system, class T>
__device__ inline T atomic_compare_swap(const DeviceHandle& h, T* dst, T expected, T desired, int pe) {
  GPUCOMM_ATOMIC_VIA_PROXY(compare_swap, desired, expected, true);
  detail::atomic_at<S>(h, dst, pe).compare_exchange_strong(expected, desired, detail::relaxed, detail::relaxed);
  return expected;
}
template <Scope S = Scope::system, class T>
__device__ inline T atomic_fetch_and(const DeviceHandle& h, T* dst, T value, int pe) {
  GPUCOMM_ATOMIC_VIA_PROXY(fetch_and, value, T(0), true);
  return detail::atomic_at<S>(h, dst, pe).fetch_and(value, detail::relaxed);
}
template <Scope S = Scope::system, class T>
__device__ inline T atomic_fetch_or(const DeviceHandle& h, T* dst, T value, int pe) {
  GPUCOMM_ATOMIC_VIA_PROXY(fetch_or, value, T(0), true);
  return detail::atomic_at<S>(h, dst, pe).fetch_or(value, detail::relaxed);
}
template <Scope S = Scope::system, class T>
__device__ inline T atomic_fetch_xor(const DeviceHandle& h, T* dst, T value, int pe) {
  GPUCOMM_ATOMIC_VIA_PROXY(fetch_xor, value, T(0), true);
  return detail::atomic_at<S>(h, dst, pe).fetch_xor(value, detail::relaxed);
}

#undef GPUCOMM_ATOMIC_VIA_PROXY

}  // namespace gpucomm::device
