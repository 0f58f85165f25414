#pragma once
// Atomics on `pe`'s copy of a symmetric word (int32_t, uint32_t, int64_t, uint64_t), one thread.
// The scope is a template argument: mem::kSystem (default) is coherent with every GPU and the
// host; mem::kDevice only with threads of the GPU that owns the word (use it when the word lives
// on this GPU, e.g. pe == own rank). Atomics are relaxed: order them against puts with
// fence()/quiet(). To a PE a proxy serves, an atomic is a descriptor: fetching atomics wait for
// the agent's answer, the others complete with quiet(c, h); the scope is then the agent's
// (system). Operand order (gpucomm/base/ops.hpp): the operand first, compare_swap's expected
// value second.
#include <cuda/std/type_traits>

#include "gpucomm/base/handle_device.cuh"
#include "gpucomm/proxy/routed_device.cuh"

namespace gpucomm::detail {

// The one implementation behind every atomic of the device API.
template <mem::Scope S, class T>
__device__ inline T device_atomic(const DeviceHandle& h, T* dst, AtomicOp op, T operand, T compare, int pe,
                                  bool fetch) {
  static_assert(cuda::std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                "atomics work on 32- and 64-bit integers");
  if (proxy::serves(h, pe)) return proxy::routed_atomic(h, dst, op, operand, compare, pe, fetch);
  T* word = remote(h, dst, sizeof(T), sizeof(T), DeviceOp::atomic, pe);
  if (op == AtomicOp::set && !fetch) {
    mem::store<S>(word, operand, mem::relaxed);
    return T(0);
  }
  return mem::apply_atomic<S>(word, op, operand, compare, mem::relaxed);
}

}  // namespace gpucomm::detail

namespace gpucomm::device {

template <mem::Scope S = mem::kSystem, class T>
__device__ inline T atomic_fetch(const DeviceHandle& h, T* dst, int pe) {
  return detail::device_atomic<S>(h, dst, AtomicOp::fetch, T(0), T(0), pe, true);
}
template <mem::Scope S = mem::kSystem, class T>
__device__ inline void atomic_set(const DeviceHandle& h, T* dst, cuda::std::type_identity_t<T> value, int pe) {
  detail::device_atomic<S>(h, dst, AtomicOp::set, value, T(0), pe, false);
}
template <mem::Scope S = mem::kSystem, class T>
__device__ inline T atomic_fetch_add(const DeviceHandle& h, T* dst, cuda::std::type_identity_t<T> value, int pe) {
  return detail::device_atomic<S>(h, dst, AtomicOp::fetch_add, value, T(0), pe, true);
}
template <mem::Scope S = mem::kSystem, class T>
__device__ inline void atomic_add(const DeviceHandle& h, T* dst, cuda::std::type_identity_t<T> value, int pe) {
  detail::device_atomic<S>(h, dst, AtomicOp::fetch_add, value, T(0), pe, false);
}
template <mem::Scope S = mem::kSystem, class T>
__device__ inline T atomic_fetch_inc(const DeviceHandle& h, T* dst, int pe) {
  return detail::device_atomic<S>(h, dst, AtomicOp::fetch_add, T(1), T(0), pe, true);
}
template <mem::Scope S = mem::kSystem, class T>
__device__ inline void atomic_inc(const DeviceHandle& h, T* dst, int pe) {
  detail::device_atomic<S>(h, dst, AtomicOp::fetch_add, T(1), T(0), pe, false);
}
template <mem::Scope S = mem::kSystem, class T>
__device__ inline T atomic_swap(const DeviceHandle& h, T* dst, cuda::std::type_identity_t<T> value, int pe) {
  return detail::device_atomic<S>(h, dst, AtomicOp::swap, value, T(0), pe, true);
}
// Returns the old value; the swap happened when it equals `expected`.
template <mem::Scope S = mem::kSystem, class T>
__device__ inline T atomic_compare_swap(const DeviceHandle& h, T* dst, cuda::std::type_identity_t<T> expected,
                                        cuda::std::type_identity_t<T> desired, int pe) {
  return detail::device_atomic<S>(h, dst, AtomicOp::compare_swap, desired, expected, pe, true);
}
template <mem::Scope S = mem::kSystem, class T>
__device__ inline T atomic_fetch_and(const DeviceHandle& h, T* dst, cuda::std::type_identity_t<T> value, int pe) {
  return detail::device_atomic<S>(h, dst, AtomicOp::fetch_and, value, T(0), pe, true);
}
template <mem::Scope S = mem::kSystem, class T>
__device__ inline T atomic_fetch_or(const DeviceHandle& h, T* dst, cuda::std::type_identity_t<T> value, int pe) {
  return detail::device_atomic<S>(h, dst, AtomicOp::fetch_or, value, T(0), pe, true);
}
template <mem::Scope S = mem::kSystem, class T>
__device__ inline T atomic_fetch_xor(const DeviceHandle& h, T* dst, cuda::std::type_identity_t<T> value, int pe) {
  return detail::device_atomic<S>(h, dst, AtomicOp::fetch_xor, value, T(0), pe, true);
}

}  // namespace gpucomm::device
