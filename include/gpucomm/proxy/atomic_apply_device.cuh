#pragma once
// One AtomicOp on a 4- or 8-byte word at system scope, performed by a GPU thread on behalf of a
// producer: the copy-engine path's one-thread kernel and the GPU service agent. Returns the old
// value zero-extended (`set` is an exchange), like the host paths' apply_host_atomic.
#include <cuda/atomic>

#include <cstdint>

#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

template <class T>
__device__ inline T apply_atomic_device(T* p, AtomicOp op, T operand, T compare) {
  cuda::atomic_ref<T, cuda::thread_scope_system> w(*p);
  constexpr auto ar = cuda::std::memory_order_acq_rel;
  switch (op) {
    case AtomicOp::fetch: return w.load(cuda::std::memory_order_acquire);
    case AtomicOp::set:
    case AtomicOp::swap: return w.exchange(operand, ar);
    case AtomicOp::fetch_add: return w.fetch_add(operand, ar);
    case AtomicOp::compare_swap: w.compare_exchange_strong(compare, operand, ar, cuda::std::memory_order_acquire); return compare;
    case AtomicOp::fetch_and: return w.fetch_and(operand, ar);
    case AtomicOp::fetch_or: return w.fetch_or(operand, ar);
    case AtomicOp::fetch_xor: return w.fetch_xor(operand, ar);
  }
  return T(0);
}

__device__ inline uint64_t apply_atomic_device(void* p, unsigned width, AtomicOp op, uint64_t operand, uint64_t compare) {
  if (width == 4)
    return apply_atomic_device<uint32_t>(static_cast<uint32_t*>(p), op, static_cast<uint32_t>(operand), static_cast<uint32_t>(compare));
  return apply_atomic_device<uint64_t>(static_cast<uint64_t*>(p), op, operand, compare);
}

}  // namespace gpucomm::proxy
