#pragma once
// Device-side building blocks on a DeviceHandle that every device layer shares (the one-sided
// API, the proxy's producers, messaging and collectives): handle checks, heap address
// translation, the failure record, the timed wait, and group helpers.
#include <cstddef>
#include <cstdint>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/group_device.cuh"
#include "gpucomm/base/handle.hpp"
#include "gpucomm/base/ordering_device.cuh"

namespace gpucomm::detail {

__device__ inline bool in_heap(const DeviceHandle& h, const void* p, size_t n) {
  auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(h.heap_base);
  return a >= b && a - b <= h.heap_size && n <= h.heap_size - (a - b);
}

// Records the failure (the first failing thread of this PE wins) and stops the kernel. The host
// reads the record after the launch fails (Runtime::check_device).
__device__ __noinline__ inline void fail(const DeviceHandle& h, DeviceFault fault, DeviceOp op, int peer,
                                         const void* addr, Cmp cmp, uint64_t expected, uint64_t seen,
                                         uint64_t elapsed_ns, uint32_t queue = 0) {
  DeviceDiag* d = h.diag;
  if (d && mem::compare_exchange<mem::kSystem>(&d->state, DeviceDiag::kEmpty, DeviceDiag::kWriting, mem::relaxed) ==
               DeviceDiag::kEmpty) {
    d->fault = fault;
    d->op = op;
    d->cmp = cmp;
    d->rank = h.rank;
    d->peer = peer;
    const bool heap = addr != nullptr && in_heap(h, addr, 0);
    d->in_heap = heap ? 1u : 0u;
    d->offset =
        heap ? static_cast<uint64_t>(static_cast<const char*>(addr) - h.heap_base) : reinterpret_cast<uint64_t>(addr);
    d->expected = expected;
    d->seen = seen;
    d->elapsed_ns = elapsed_ns;
    d->queue = queue;
    d->block[0] = blockIdx.x, d->block[1] = blockIdx.y, d->block[2] = blockIdx.z;
    d->thread[0] = threadIdx.x, d->thread[1] = threadIdx.y, d->thread[2] = threadIdx.z;
    // The host reads the fields after it acquires state == kReady.
    mem::store<mem::kSystem>(&d->state, DeviceDiag::kReady, mem::release);
  }
  // Peers may be waiting for a flag or data this thread wrote just before (a collective's push,
  // then the check that fails): a trap ends the context, so those writes are performed first, or
  // the peer would wait for them until its timeout instead of finding its own diagnosis.
  mem::fence<mem::kSystem>(mem::seq_cst);
  __trap();
}

// Checked builds: the handle was made by a library built from these headers. `offset` of the
// record names the field (0 magic, 1 version, 2 size).
__device__ inline void check_handle(const DeviceHandle& h, DeviceOp op) {
#ifdef GPUCOMM_CHECKED
  if (h.magic != kHandleMagic)
    fail(h, DeviceFault::bad_handle, op, -1, reinterpret_cast<const void*>(0), Cmp::eq, kHandleMagic, h.magic, 0);
  if (h.version != kHandleVersion)
    fail(h, DeviceFault::bad_handle, op, -1, reinterpret_cast<const void*>(1), Cmp::eq, kHandleVersion, h.version, 0);
  if (h.bytes != sizeof(DeviceHandle)) {
    fail(h, DeviceFault::bad_handle, op, -1, reinterpret_cast<const void*>(2), Cmp::eq, sizeof(DeviceHandle), h.bytes,
         0);
  }
#else
  (void)h, (void)op;
#endif
}
__device__ inline void check_team(const DeviceHandle& h, const TeamHandle& t, DeviceOp op) {
#ifdef GPUCOMM_CHECKED
  if (t.magic != kTeamMagic)
    fail(h, DeviceFault::bad_handle, op, -1, reinterpret_cast<const void*>(0), Cmp::eq, kTeamMagic, t.magic, 0);
  if (t.version != kHandleVersion)
    fail(h, DeviceFault::bad_handle, op, -1, reinterpret_cast<const void*>(1), Cmp::eq, kHandleVersion, t.version, 0);
  if (t.bytes != sizeof(TeamHandle))
    fail(h, DeviceFault::bad_handle, op, -1, reinterpret_cast<const void*>(2), Cmp::eq, sizeof(TeamHandle), t.bytes, 0);
  if (static_cast<unsigned>(t.slot) >= static_cast<unsigned>(kMaxTeams) || t.size < 1 || t.size > h.size ||
      static_cast<unsigned>(t.rank) >= static_cast<unsigned>(t.size)) {
    fail(h, DeviceFault::bad_argument, op, -1, nullptr, Cmp::lt, static_cast<uint64_t>(t.rank),
         static_cast<uint64_t>(t.size), 0);
  }
#else
  (void)h, (void)t, (void)op;
#endif
}

// Whether the job failed elsewhere (the runtime set the handle's job-state word).
__device__ __forceinline__ uint32_t job_failed(const DeviceHandle& h) {
  return h.job_state ? mem::load<mem::kSystem>(h.job_state, mem::relaxed) : 0u;
}

// Periodic part of every wait loop: leaves with a record naming the failed PE once the job has
// failed (when `check_job`: the job-state word lives in host memory, and thousands of waiters
// reading it over PCIe slow down everything sharing their SMs, so callers read it at a lower
// cadence than the clock), or with a timeout record past the handle's limit. `start` is the
// wait's first poll.
__device__ inline void wait_check(const DeviceHandle& h, uint64_t start, DeviceOp op, int peer, const void* addr,
                                  Cmp cmp, uint64_t expected, uint64_t seen, uint32_t queue = 0,
                                  bool check_job = true) {
  const uint64_t waited = mem::globaltimer() - start;
  if (const uint32_t f = check_job ? job_failed(h) : 0u)
    fail(h, DeviceFault::aborted, op, peer, addr, cmp, expected, static_cast<uint64_t>(f - 1), waited, queue);
  if (h.timeout_ns != 0 && waited > h.timeout_ns)
    fail(h, DeviceFault::timeout, op, peer, addr, cmp, expected, seen, waited, queue);
}

// Spins until `*addr cmp value` (acquire at scope S); returns the value seen. Fails with a record
// of who waited for what past the handle's timeout, or once the job failed.
template <mem::Scope S = mem::kSystem, class T>
__device__ inline T wait(const DeviceHandle& h, const T* addr, Cmp cmp, T value, DeviceOp op, int peer) {
  T seen = mem::load<S>(addr, mem::acquire);
  if (compare(seen, cmp, value)) return seen;
  const uint64_t start = mem::globaltimer();
  for (uint32_t i = 1;; ++i) {
    seen = mem::load<S>(addr, mem::acquire);
    if (compare(seen, cmp, value)) return seen;
    if ((i & 1023u) == 0) {
      wait_check(h, start, op, peer, addr, cmp, static_cast<uint64_t>(value), static_cast<uint64_t>(seen), 0,
                 (i & 8191u) == 0);
    }
  }
}

// Checks that run in every build: a PE outside the job or one this PE cannot reach.
__device__ inline char* peer_base(const DeviceHandle& h, int pe, DeviceOp op, const void* addr) {
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(h.size)) {
    fail(h, DeviceFault::bad_argument, op, pe, addr, Cmp::lt, static_cast<uint64_t>(static_cast<int64_t>(pe)),
         static_cast<uint64_t>(h.size), 0);
  }
  char* b = h.peer_bases[pe];
  if (b == nullptr) fail(h, DeviceFault::unreachable, op, pe, addr, Cmp::eq, 0, 0, 0);
  return b;
}

// Checked builds (GPUCOMM_CHECKED) also verify the handle, that symmetric addresses lie inside
// the heap and that words are aligned.
__device__ inline void check_sym(const DeviceHandle& h, const void* p, size_t n, size_t align, DeviceOp op, int pe) {
#ifdef GPUCOMM_CHECKED
  check_handle(h, op);
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

__device__ __forceinline__ int64_t heap_offset(const DeviceHandle& h, const void* sym) {
  return static_cast<int64_t>(static_cast<const char*>(sym) - h.heap_base);
}
// Offset of `pe`'s control block from its user part (descriptors address it with this).
inline constexpr int64_t kControlOffset = -static_cast<int64_t>(kDeviceControlBytes);

__device__ __forceinline__ DeviceControl* own_control(const DeviceHandle& h) {
  return reinterpret_cast<DeviceControl*>(h.heap_base - kDeviceControlBytes);
}

}  // namespace gpucomm::detail
