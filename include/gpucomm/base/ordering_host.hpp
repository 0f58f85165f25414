#pragma once
// Memory ordering for host code: the host counterpart of ordering_device.cuh, on std::atomic_ref
// with explicit orders. Host code of gpucomm touches shared words (mapped peer heaps, proxy
// queues, host-mapped device words) only through std::atomic_ref, directly or through these
// helpers; never through volatile. Host threads are coherent with each other and, for pinned
// host-mapped memory, with the GPU at system scope, so there is no scope argument.
#include <atomic>
#include <cstdint>

#include "gpucomm/base/ops.hpp"

namespace gpucomm::mem {

template <class T>
inline T host_load(const T* p, std::memory_order o) {
  return std::atomic_ref<T>(*const_cast<T*>(p)).load(o);
}
template <class T>
inline void host_store(T* p, T v, std::memory_order o) {
  std::atomic_ref<T>(*p).store(v, o);
}

// A signal: `set` is a release store, `add` an acq_rel fetch-add (a host has no posted add).
inline void host_signal(uint64_t* p, SignalOp op, uint64_t v) {
  std::atomic_ref<uint64_t> a(*p);
  if (op == SignalOp::set) {
    a.store(v, std::memory_order_release);
  } else {
    a.fetch_add(v, std::memory_order_acq_rel);
  }
}

// One AtomicOp (operand order: ops.hpp) with acq_rel ordering; returns the old value.
template <class T>
inline T host_apply_atomic(T* p, AtomicOp op, T operand, T compare) {
  std::atomic_ref<T> w(*p);
  constexpr auto ar = std::memory_order_acq_rel;
  switch (op) {
    case AtomicOp::fetch:
      return w.load(std::memory_order_acquire);
    case AtomicOp::set:
    case AtomicOp::swap:
      return w.exchange(operand, ar);
    case AtomicOp::fetch_add:
      return w.fetch_add(operand, ar);
    case AtomicOp::compare_swap:
      w.compare_exchange_strong(compare, operand, ar, std::memory_order_acquire);
      return compare;
    case AtomicOp::fetch_and:
      return w.fetch_and(operand, ar);
    case AtomicOp::fetch_or:
      return w.fetch_or(operand, ar);
    case AtomicOp::fetch_xor:
      return w.fetch_xor(operand, ar);
  }
  return T(0);
}
// The same on a word of `width` bytes (4 or 8, naturally aligned), zero-extended. Shared by every
// host path: host copies, the host API of host-memory PEs, UCX's active-message atomics.
inline uint64_t host_apply_atomic(void* p, unsigned width, AtomicOp op, uint64_t operand, uint64_t compare) {
  if (width == 4) {
    return host_apply_atomic<uint32_t>(static_cast<uint32_t*>(p), op, static_cast<uint32_t>(operand),
                                       static_cast<uint32_t>(compare));
  }
  return host_apply_atomic<uint64_t>(static_cast<uint64_t*>(p), op, operand, compare);
}

}  // namespace gpucomm::mem
