#pragma once
// Building blocks of the device API: system-scope loads and stores, the clock, failure records,
// the timed wait loop and the checked-mode argument checks.
#include <cuda/atomic>

#include <cstdint>

#include "gpucomm/device/coop.cuh"
#include "gpucomm/device/handle.hpp"

namespace gpucomm::device::detail {

__device__ inline uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <class T>
__device__ inline T load_acquire_sys(const T* p) {
  return cuda::atomic_ref<T, cuda::thread_scope_system>(*const_cast<T*>(p)).load(cuda::std::memory_order_acquire);
}
template <class T>
__device__ inline void store_release_sys(T* p, T v) {
  cuda::atomic_ref<T, cuda::thread_scope_system>(*p).store(v, cuda::std::memory_order_release);
}
// Adds without fetching: `red` is posted (no reply awaited), where a fetch_add whose result is
// unused still compiles to `atom` and waits a round trip over NVLink.
__device__ inline void add_release_sys(uint64_t* p, uint64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// Relaxed form, for use right after a fence (fence + strong write is a release pattern).
__device__ inline void add_relaxed_sys(uint64_t* p, uint64_t v) {
  asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

template <class T>
__device__ inline bool compare(T seen, Cmp cmp, T value) {
  switch (cmp) {
    case Cmp::eq: return seen == value;
    case Cmp::ne: return seen != value;
    case Cmp::gt: return seen > value;
    case Cmp::ge: return seen >= value;
    case Cmp::lt: return seen < value;
    case Cmp::le: return seen <= value;
  }
  return false;
}

__device__ inline bool in_heap(const DeviceHandle& h, const void* p, size_t n) {
  auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(h.heap_base);
  return a >= b && a - b <= h.heap_size && n <= h.heap_size - (a - b);
}

// Records the failure (first failing thread of this PE wins) and stops the kernel. The host
// reads the record after the launch fails (Runtime::check_device).
__device__ __noinline__ inline void fail(const DeviceHandle& h, DeviceFault fault, DeviceOp op, int peer, const void* addr,
                                         Cmp cmp, uint64_t expected, uint64_t seen, uint64_t elapsed_ns, uint32_t queue = 0) {
  DeviceDiag* d = h.diag;
  if (d && atomicCAS(&d->state, DeviceDiag::kEmpty, DeviceDiag::kWriting) == DeviceDiag::kEmpty) {
    d->fault = fault;
    d->op = op;
    d->cmp = cmp;
    d->rank = h.rank;
    d->peer = peer;
    bool heap = in_heap(h, addr, 0);
    d->in_heap = heap ? 1u : 0u;
    d->offset = heap ? static_cast<uint64_t>(static_cast<const char*>(addr) - h.heap_base) : reinterpret_cast<uint64_t>(addr);
    d->expected = expected;
    d->seen = seen;
    d->elapsed_ns = elapsed_ns;
    d->queue = queue;
    d->block[0] = blockIdx.x, d->block[1] = blockIdx.y, d->block[2] = blockIdx.z;
    d->thread[0] = threadIdx.x, d->thread[1] = threadIdx.y, d->thread[2] = threadIdx.z;
    __threadfence_system();
    store_release_sys(&d->state, DeviceDiag::kReady);
  }
  __trap();
}

// Spins until `*addr cmp value` (acquire, system scope); returns the value seen. Past the
// handle's timeout it records who waited for what and traps.
template <class T>
__device__ inline T wait(const DeviceHandle& h, const T* addr, Cmp cmp, T value, DeviceOp op, int peer) {
  T seen = load_acquire_sys(addr);
  if (compare(seen, cmp, value)) return seen;
  const uint64_t start = globaltimer();
  for (uint32_t i = 1;; ++i) {
    seen = load_acquire_sys(addr);
    if (compare(seen, cmp, value)) return seen;
    if ((i & 1023u) == 0 && h.timeout_ns != 0) {
      uint64_t waited = globaltimer() - start;
      if (waited > h.timeout_ns)
        fail(h, DeviceFault::timeout, op, peer, addr, cmp, static_cast<uint64_t>(value), static_cast<uint64_t>(seen), waited);
    }
  }
}

// Checks that run in every build: a PE outside the job or one this PE cannot reach.
__device__ inline char* peer_base(const DeviceHandle& h, int pe, DeviceOp op, const void* addr) {
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(h.size))
    fail(h, DeviceFault::bad_argument, op, pe, addr, Cmp::lt, static_cast<uint64_t>(static_cast<int64_t>(pe)),
         static_cast<uint64_t>(h.size), 0);
  char* b = h.peer_bases[pe];
  if (b == nullptr) fail(h, DeviceFault::unreachable, op, pe, addr, Cmp::eq, 0, 0, 0);
  return b;
}

// Checked builds (GPUCOMM_CHECKED) also verify that symmetric addresses lie inside the heap
// and that words are aligned.
__device__ inline void check_sym(const DeviceHandle& h, const void* p, size_t n, size_t align, DeviceOp op, int pe) {
#ifdef GPUCOMM_CHECKED
  if (!in_heap(h, p, n)) fail(h, DeviceFault::bad_argument, op, pe, p, Cmp::le, n, h.heap_size, 0);
  if (align > 1 && reinterpret_cast<uintptr_t>(p) % align != 0)
    fail(h, DeviceFault::bad_argument, op, pe, p, Cmp::eq, reinterpret_cast<uintptr_t>(p) % align, align, 0);
#else
  (void)h, (void)p, (void)n, (void)align, (void)op, (void)pe;
#endif
}

// Address of `pe`'s copy of symmetric object `p`, with the checks above.
template <class T>
__device__ inline T* remote(const DeviceHandle& h, T* p, size_t n, size_t align, DeviceOp op, int pe) {
  char* b = peer_base(h, pe, op, p);
  check_sym(h, p, n, align, op, pe);
  return reinterpret_cast<T*>(b + (reinterpret_cast<const char*>(p) - h.heap_base));
}

// The leader's value to every thread of the group; also synchronizes the group, so what the
// leader acquired is visible to all of them.
template <class T>
__device__ inline T broadcast(coop::Thread, T v) { return v; }
template <class T>
__device__ inline T broadcast(coop::Warp, T v) {
  __syncwarp();  // memory ordering among the lanes; the shuffle only moves the value
  return __shfl_sync(0xffffffffu, v, 0);
}
template <class T>
__device__ inline T broadcast(coop::Block b, T v) {
  __shared__ T slot;
  if (coop::thread_rank(b) == 0) slot = v;
  __syncthreads();
  T out = slot;
  __syncthreads();  // nobody overwrites the slot before every thread read it
  return out;
}

__device__ inline bool leader(coop::Thread) { return true; }
template <class Coop>
__device__ inline bool leader(Coop c) { return coop::thread_rank(c) == 0; }

}  // namespace gpucomm::device::detail
