#pragma once
// Memory ordering for device code: the one place where gpucomm's device code loads, stores,
// modifies and fences shared words. Every function takes the scope as a template argument
// (cuda::thread_scope) and the order explicitly (cuda::memory_order), so each access states
// who it synchronizes with:
//   kSystem  other GPUs and the host: peers' heaps, proxy queues a CPU serves, host-mapped words
//   kDevice  threads of this GPU only: a queue between blocks and the GPU agent, own counters
//   kBlock   threads of this block
// Everything is built on cuda::atomic_ref and cuda::atomic_thread_fence, except the posted
// reductions (`red`), which libcu++ does not offer: a fetch_add whose result is unused still
// compiles to `atom` and waits for the reply, a round trip over NVLink.
//
// Fences (PTX names):
//   fence<S>(acq_rel)  fence.acq_rel.S: with a later strong write it forms a release pattern, with
//                      an earlier strong read an acquire pattern. The fence of fence()/quiet() and
//                      of every "group writes, leader signals" hand-off.
//   fence<S>(seq_cst)  fence.sc.S: also orders a store before a later load of another word. Only
//                      where a store-then-load (Dekker) handshake needs it; each such point is
//                      listed in ARCHITECTURE.md ("Memory ordering") and has a litmus test.
//
// The functions also compile as host code for the matching engines' SIMT emulation in tests
// (GPUCOMM_SIMT_EMULATION), where cuda::atomic_ref is the host implementation and `red`, the
// global timer and fences fall back to their plain atomic equivalents.
#if !defined(GPUCOMM_SIMT_EMULATION)
#include <cuda/atomic>
#endif

#include <cstdint>

#include "gpucomm/base/ops.hpp"

#if !defined(__CUDACC__) && !defined(GPUCOMM_SIMT_EMULATION)
#error "ordering_device.cuh is device code: include it from .cu files"
#endif

#if !defined(__CUDA_ARCH__)
#include <chrono>
#endif

namespace gpucomm::mem {

using Scope = cuda::thread_scope;
using Order = cuda::memory_order;
inline constexpr Scope kSystem = cuda::thread_scope_system;
inline constexpr Scope kDevice = cuda::thread_scope_device;
inline constexpr Scope kBlock = cuda::thread_scope_block;
inline constexpr Order relaxed = cuda::memory_order_relaxed;
inline constexpr Order acquire = cuda::memory_order_acquire;
inline constexpr Order release = cuda::memory_order_release;
inline constexpr Order acq_rel = cuda::memory_order_acq_rel;
inline constexpr Order seq_cst = cuda::memory_order_seq_cst;

// Values are not deduced from (they take the word's type): fetch_or(p, kFlag, ...) with an
// enumerator or fetch_add(p, 1, ...) with a literal compile whatever the word's width.
template <class T>
struct same_type {
  using type = T;
};
template <class T>
using value_t = typename same_type<T>::type;

template <Scope S, class T>
__device__ __forceinline__ cuda::atomic_ref<T, S> ref(T* p) {
  return cuda::atomic_ref<T, S>(*p);
}

template <Scope S, class T>
__device__ __forceinline__ T load(const T* p, Order o) {
  return ref<S>(const_cast<T*>(p)).load(o);
}
template <Scope S, class T>
__device__ __forceinline__ void store(T* p, value_t<T> v, Order o) {
  ref<S>(p).store(v, o);
}
template <Scope S, class T>
__device__ __forceinline__ T exchange(T* p, value_t<T> v, Order o) {
  return ref<S>(p).exchange(v, o);
}
// Returns the old value; the swap happened when it equals `expected`.
template <Scope S, class T>
__device__ __forceinline__ T compare_exchange(T* p, value_t<T> expected, value_t<T> desired, Order o) {
  const Order on_failure = o == release || o == relaxed ? relaxed : acquire;
  ref<S>(p).compare_exchange_strong(expected, desired, o, on_failure);
  return expected;
}
template <Scope S, class T>
__device__ __forceinline__ T fetch_add(T* p, value_t<T> v, Order o) {
  return ref<S>(p).fetch_add(v, o);
}
template <Scope S, class T>
__device__ __forceinline__ T fetch_and(T* p, value_t<T> v, Order o) {
  return ref<S>(p).fetch_and(v, o);
}
template <Scope S, class T>
__device__ __forceinline__ T fetch_or(T* p, value_t<T> v, Order o) {
  return ref<S>(p).fetch_or(v, o);
}
template <Scope S, class T>
__device__ __forceinline__ T fetch_xor(T* p, value_t<T> v, Order o) {
  return ref<S>(p).fetch_xor(v, o);
}
template <Scope S, class T>
__device__ __forceinline__ T fetch_max(T* p, value_t<T> v, Order o) {
  return ref<S>(p).fetch_max(v, o);
}

template <Scope S>
__device__ __forceinline__ void fence(Order o) {
  cuda::atomic_thread_fence(o, S);
}

#if defined(__CUDA_ARCH__)
#define GPUCOMM_RED_(sem, scope, op, p, v) \
  asm volatile("red." sem "." scope ".global." op " [%0], %1;" ::"l"(p), "l"(v) : "memory")
#define GPUCOMM_RED_SCOPES_(sem, op, p, v) \
  do {                                     \
    if constexpr (S == kSystem)            \
      GPUCOMM_RED_(sem, "sys", op, p, v);  \
    else if constexpr (S == kDevice)       \
      GPUCOMM_RED_(sem, "gpu", op, p, v);  \
    else                                   \
      GPUCOMM_RED_(sem, "cta", op, p, v);  \
  } while (0)
// A posted reduction `op` with the order `o` (relaxed or release).
#define GPUCOMM_RED_ORDERED_(op, p, v, o)       \
  do {                                          \
    if ((o) == relaxed)                         \
      GPUCOMM_RED_SCOPES_("relaxed", op, p, v); \
    else                                        \
      GPUCOMM_RED_SCOPES_("release", op, p, v); \
  } while (0)
#endif

// Posted (fire-and-forget) add: nobody waits for the old value. `o` is relaxed or release.
template <Scope S>
__device__ __forceinline__ void red_add(uint64_t* p, uint64_t v, Order o) {
#if defined(__CUDA_ARCH__)
  GPUCOMM_RED_ORDERED_("add.u64", p, v, o);
#else
  ref<S>(p).fetch_add(v, o);
#endif
}
// Posted maximum (doorbells): the word only grows. `o` is relaxed or release.
template <Scope S>
__device__ __forceinline__ void red_max(uint64_t* p, uint64_t v, Order o) {
#if defined(__CUDA_ARCH__)
  GPUCOMM_RED_ORDERED_("max.u64", p, v, o);
#else
  ref<S>(p).fetch_max(v, o);
#endif
}

// Posted bitwise and (clearing bits of an allocation bitmap). `o` is relaxed or release.
template <Scope S>
__device__ __forceinline__ void red_and(uint64_t* p, uint64_t v, Order o) {
#if defined(__CUDA_ARCH__)
  GPUCOMM_RED_ORDERED_("and.b64", p, v, o);
#else
  ref<S>(p).fetch_and(v, o);
#endif
}

#if defined(__CUDA_ARCH__)
#undef GPUCOMM_RED_ORDERED_
#undef GPUCOMM_RED_SCOPES_
#undef GPUCOMM_RED_
#endif

// Two adjacent 8-byte words (16-byte aligned) with one relaxed vector access: each word is
// single-copy atomic on its own (records whose every word carries a stamp rely on that; nothing
// orders the two words against each other).
template <Scope S>
__device__ __forceinline__ void store2(uint64_t* p, uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  if constexpr (S == kSystem) {
    asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
  } else {
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
  }
#else
  ref<S>(p).store(a, relaxed);
  ref<S>(p + 1).store(b, relaxed);
#endif
}
template <Scope S>
__device__ __forceinline__ void load2(const uint64_t* p, uint64_t& a, uint64_t& b) {
#if defined(__CUDA_ARCH__)
  if constexpr (S == kSystem) {
    asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
  } else {
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
  }
#else
  a = ref<S>(const_cast<uint64_t*>(p)).load(relaxed);
  b = ref<S>(const_cast<uint64_t*>(p + 1)).load(relaxed);
#endif
}

// This grid's launch number (%gridid: distinct for every launch of the context); the emulation's
// launch counter in tests.
__device__ __forceinline__ uint64_t grid_id() {
#if defined(__CUDA_ARCH__)
  uint64_t g;
  asm volatile("mov.u64 %0, %%gridid;" : "=l"(g));
  return g;
#elif defined(GPUCOMM_SIMT_EMULATION)
  return simt_grid_id();
#else
  return 0;
#endif
}

// Nanoseconds of the GPU's global timer (the host clock under emulation).
__device__ __forceinline__ uint64_t globaltimer() {
#if defined(__CUDA_ARCH__)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// A signal: `set` is a release store, `add` a posted release add. Whoever acquires the new value
// sees what this thread wrote (or synchronized with) before.
template <Scope S>
__device__ __forceinline__ void signal(uint64_t* p, SignalOp op, uint64_t v) {
  if (op == SignalOp::set) {
    store<S>(p, v, release);
  } else {
    red_add<S>(p, v, release);
  }
}

// One AtomicOp on a 4- or 8-byte word (operand order: ops.hpp). Returns the old value.
template <Scope S, class T>
__device__ inline T apply_atomic(T* p, AtomicOp op, T operand, T compare, Order o) {
  switch (op) {
    case AtomicOp::fetch:
      return load<S>(p, o == release || o == acq_rel ? acquire : o);
    case AtomicOp::set:
    case AtomicOp::swap:
      return exchange<S>(p, operand, o);
    case AtomicOp::fetch_add:
      return fetch_add<S>(p, operand, o);
    case AtomicOp::compare_swap:
      return compare_exchange<S>(p, compare, operand, o);
    case AtomicOp::fetch_and:
      return fetch_and<S>(p, operand, o);
    case AtomicOp::fetch_or:
      return fetch_or<S>(p, operand, o);
    case AtomicOp::fetch_xor:
      return fetch_xor<S>(p, operand, o);
  }
  return T(0);
}
// The same on a word of `width` bytes (4 or 8), zero-extended.
template <Scope S>
__device__ inline uint64_t apply_atomic(void* p, unsigned width, AtomicOp op, uint64_t operand, uint64_t compare,
                                        Order o) {
  if (width == 4) {
    return apply_atomic<S>(static_cast<uint32_t*>(p), op, static_cast<uint32_t>(operand),
                           static_cast<uint32_t>(compare), o);
  }
  return apply_atomic<S>(static_cast<uint64_t*>(p), op, operand, compare, o);
}

}  // namespace gpucomm::mem
