#pragma once
// What a kernel needs to reach the symmetric heap: gpucomm::DeviceHandle, a plain struct passed
// to kernels by value (Runtime::device_handle()). Also the layout of the per-PE control block
// (barrier flags) at the start of each PE's heap region, and the diagnostic record a failing
// device wait leaves in host-mapped memory. Plain C++: host and device code include it.
#include <cstddef>
#include <cstdint>

#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm {

enum class Cmp : uint32_t { eq, ne, gt, ge, lt, le };
enum class SignalOp : uint32_t { set, add };

// Device operations named in diagnostics (device_op_name() on the host).
enum class DeviceOp : uint32_t {
  none, put, get, p, g, put_signal, signal, signal_wait_until, wait_until, test, atomic,
  barrier_master, barrier_dissemination, ptr, copy, proxy_post, proxy_wait, quiet
};

// proxy: the queue the operation was posted to failed (its agent stopped or rejected an entry).
enum class DeviceFault : uint32_t { none = 0, timeout = 1, bad_argument = 2, unreachable = 3, proxy = 4 };

// Written once by the first device thread that fails; read by Runtime::check_device().
struct DeviceDiag {
  static constexpr uint32_t kEmpty = 0, kWriting = 1, kReady = 2;
  uint32_t state;
  DeviceFault fault;
  DeviceOp op;
  Cmp cmp;
  int32_t rank;
  int32_t peer;          // -1 when the operation has no peer
  uint64_t offset;       // heap offset of the address (or the raw address when outside the heap)
  uint32_t in_heap;      // 1 when `offset` is a heap offset
  uint32_t queue;        // proxy operations: the queue id + 1 (0: not a proxy operation)
  uint64_t expected;     // value waited for (timeouts) or the bad value (argument faults)
  uint64_t seen;         // last value seen (timeouts) or the limit it broke (argument faults)
  uint64_t elapsed_ns;
  uint32_t block[3];
  uint32_t thread[3];
};

// Start of each PE's heap region, before the user part. Only device code and the heap's
// zero-fill touch it. Epoch counters are written by their own PE only.
struct DeviceControl {
  static constexpr int kMaxPes = 1024;    // master barrier arrivals
  static constexpr int kMaxRounds = 32;   // dissemination rounds
  uint64_t master_epoch;                  // barriers of the master kind this PE entered
  uint64_t diss_epoch;                    // dissemination barriers this PE entered
  uint64_t reserved[14];
  alignas(128) uint64_t release;          // master barrier: epoch released by PE 0
  alignas(128) uint64_t diss[kMaxRounds]; // dissemination: notifications received per round
  alignas(128) uint64_t arrive[kMaxPes];  // master barrier (on PE 0): epoch each PE arrived at
};

// Bytes reserved before the user part of each GPU PE's region.
inline constexpr size_t kDeviceControlBytes = 64 * 1024;
static_assert(sizeof(DeviceControl) <= kDeviceControlBytes);

struct DeviceHandle {
  int32_t rank;
  int32_t size;
  char* heap_base;            // this PE's user part (the symmetric addresses)
  uint64_t heap_size;
  char* const* peer_bases;    // device array [size]: each PE's user part as mapped here, or nullptr
  DeviceDiag* diag;           // host-mapped, for failures
  uint64_t timeout_ns;        // 0: waits never time out
  // Proxy routing (gpucomm/proxy): one-sided operations to a PE go through a descriptor queue
  // instead of loads and stores when the transport is forced to a proxy (proxy-cpu, proxy-gpu,
  // ucx), or, with `auto`, when the PE is not mapped here. The queue is picked by block (or by
  // warp): queues[index % num_queues].
  uint32_t transport;         // transport::Kind (0 auto, 1 direct, 2 proxy-cpu, 3 proxy-gpu, 4 ucx)
  uint32_t num_queues;        // 0 when no proxy serves this PE (every operation goes direct)
  proxy::QueueView* queues;   // device array [num_queues]
  uint32_t queue_per_warp;    // 1: one queue per warp instead of one per block
  uint32_t flags;             // kHandleSetSignalsOnly, ...
};

// Some PE is reached by a path without remote atomics (UCX over TCP to a heap in device memory):
// signals to it can set but not add, so barrier_all uses the store-only master barrier.
inline constexpr uint32_t kHandleSetSignalsOnly = 1;

const char* device_op_name(DeviceOp op);

}  // namespace gpucomm
