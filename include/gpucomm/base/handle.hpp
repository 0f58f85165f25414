#pragma once
// What a kernel needs to reach the symmetric heap and the job: gpucomm::DeviceHandle, a POD
// passed to kernels by value (Runtime::device_handle()), and gpucomm::TeamHandle, a POD naming a
// team (Runtime::device_team()). Also the layout of the per-PE control block (barrier words) at
// the start of each GPU PE's heap region, and the diagnostic record a failing device operation
// leaves in host-mapped memory. Plain C++: host and device code include it.
//
// Versioning: both handles start with {magic, version, bytes}. The library fills them; device
// code compiled against these headers checks them in checked builds (GPUCOMM_CHECKED), and the
// host checks them whenever a handle crosses the API (validate_handle), so a kernel built
// against other headers than the library's is refused instead of misreading the handle.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpucomm/base/ops.hpp"

namespace gpucomm {

namespace proxy {
struct QueueView;  // gpucomm/proxy/descriptor.hpp: the handle only carries a pointer to the table
}

inline constexpr uint32_t kHandleMagic = 0x4d435047u;  // "GPCM" in memory order
inline constexpr uint32_t kTeamMagic = 0x4d415454u;    // "TTAM"
// Bumped whenever DeviceHandle, TeamHandle, DeviceControl or DeviceDiag change layout or meaning,
// or the queue table the handle points to (proxy::QueueView; 3: its caches, trace and agent words).
inline constexpr uint16_t kHandleVersion = 3;

// How one-sided operations reach the other PEs (GPUCOMM_TRANSPORT). transport::Kind is this type.
enum class TransportKind : uint32_t { automatic = 0, direct = 1, proxy_cpu = 2, proxy_gpu = 3, ucx = 4, last = ucx };

// Device operations named in diagnostics (device_op_name()).
enum class DeviceOp : uint32_t {
  none,
  put,
  get,
  p,
  g,
  put_signal,
  signal,
  signal_wait_until,
  wait_until,
  test,
  atomic,
  barrier_master,
  barrier_dissemination,
  ptr,
  copy,
  proxy_post,
  proxy_wait,
  quiet,
  handle_check,
  team_barrier,
  team,
  message,  // two-sided messaging (gpucomm/messaging): its own record says which call and request
  last = message
};
const char* device_op_name(DeviceOp op);

// proxy: the queue the operation was posted to failed (its agent stopped or rejected an entry).
// bad_handle: the handle's magic, version or size is not this header's (expected: the header's
// value, seen: the handle's; `offset` says which field: 0 magic, 1 version, 2 size).
// aborted: the job failed elsewhere while this thread waited (the handle's job-state word).
enum class DeviceFault : uint32_t {
  none = 0,
  timeout = 1,
  bad_argument = 2,
  unreachable = 3,
  proxy = 4,
  bad_handle = 5,
  aborted = 6
};

// Written once by the first device thread of a PE that fails; read by Runtime::check_device().
struct DeviceDiag {
  static constexpr uint32_t kEmpty = 0, kWriting = 1, kReady = 2;
  uint32_t state;
  DeviceFault fault;
  DeviceOp op;
  Cmp cmp;
  int32_t rank;
  int32_t peer;       // -1 when the operation has no peer
  uint64_t offset;    // heap offset of the address (or the raw address when outside the heap)
  uint32_t in_heap;   // 1 when `offset` is a heap offset
  uint32_t queue;     // proxy operations: the queue id + 1 (0: not a proxy operation)
  uint64_t expected;  // value waited for (timeouts) or the bad value (argument faults)
  uint64_t seen;      // last value seen (timeouts) or the limit it broke (argument faults)
  uint64_t elapsed_ns;
  uint32_t block[3];
  uint32_t thread[3];
};

// Teams whose synchronization words exist on every PE at once: slot 0 is the world, slot 1 the
// node, slots 2..kMaxTeams-1 teams made by Runtime::split (62 split teams alive at once).
inline constexpr int kMaxTeams = 64;
// Dissemination rounds: ceil(log2(PEs)) <= 32 for any job.
inline constexpr int kMaxBarrierRounds = 32;

// Start of each GPU PE's heap region, before the user part. Only device code and the heap's
// zero-fill touch it (and the runtime, which zeroes a team slot before the team's first use).
// Epoch counters are written by their own PE only.
struct DeviceControl {
  static constexpr int kMaxPes = 1024;  // master barrier arrivals
  static constexpr int kMaxRounds = kMaxBarrierRounds;
  uint64_t master_epoch;  // barriers of the master kind this PE entered
  uint64_t reserved[15];
  alignas(128) uint64_t release;          // master barrier: epoch released by PE 0
  alignas(128) uint64_t arrive[kMaxPes];  // master barrier (on PE 0): epoch each PE arrived at
  // Team dissemination barriers (the world's is slot 0): barriers of each team this PE entered,
  // and the notifications received per team and round.
  alignas(128) uint64_t team_epoch[kMaxTeams];
  alignas(128) uint64_t team_round[kMaxTeams][kMaxRounds];
};

// Bytes reserved before the user part of each GPU PE's region.
inline constexpr size_t kDeviceControlBytes = size_t{64} * 1024;
static_assert(sizeof(DeviceControl) <= kDeviceControlBytes);

// What kernels receive. Fields below `bytes` may change only with kHandleVersion.
struct DeviceHandle {
  uint32_t magic;    // kHandleMagic
  uint16_t version;  // kHandleVersion
  uint16_t bytes;    // sizeof(DeviceHandle)
  int32_t rank;
  int32_t size;
  char* heap_base;  // this PE's user part (the symmetric addresses)
  uint64_t heap_size;
  char* const* peer_bases;  // device array [size]: each PE's user part as mapped here, or nullptr
  DeviceDiag* diag;         // host-mapped, for failures
  // Host-mapped word, 0 while the job is healthy; the runtime stores the failed PE's rank + 1
  // (0xffffffff when no PE failed first: the launcher is gone) when the job fails, and every
  // device wait polls it with its timeout check. May be null.
  const uint32_t* job_state;
  uint64_t timeout_ns;  // 0: waits never time out
  // Proxy routing (gpucomm/proxy): one-sided operations to a PE go through a descriptor queue
  // instead of loads and stores when the transport is forced to a proxy (proxy-cpu, proxy-gpu,
  // ucx), or, with `automatic`, when the PE is not mapped here. The queue is picked by block (or
  // by warp): queues[index % num_queues].
  TransportKind transport;
  uint32_t num_queues;       // 0 when no proxy serves this PE (every operation goes direct)
  proxy::QueueView* queues;  // device array [num_queues]
  uint32_t queue_per_warp;   // 1: one queue per warp instead of one per block
  uint32_t flags;            // kHandleSetSignalsOnly, ...
};

// Some PE is reached by a path without remote atomics (UCX over TCP to a heap in device memory):
// signals to it can set but not add, so barriers use the store-only master barrier.
inline constexpr uint32_t kHandleSetSignalsOnly = 1;

// A team as kernels see it: its slot (synchronization words in every member's DeviceControl),
// its size, this PE's index in it, and how team ranks map to world ranks: world = start + i *
// stride when stride != 0 (the world, the node of a block placement, strided splits), else
// members[i] (a device array, or host memory on host-memory PEs).
struct TeamHandle {
  uint32_t magic;    // kTeamMagic
  uint16_t version;  // kHandleVersion
  uint16_t bytes;    // sizeof(TeamHandle)
  int32_t slot;      // 0 .. kMaxTeams-1
  int32_t size;
  int32_t rank;  // this PE's index in the team
  int32_t start;
  int32_t stride;
  int32_t reserved;
  const int32_t* members;  // [size] world ranks (null when stride != 0)
};

static_assert(std::is_trivially_copyable_v<DeviceHandle> && std::is_standard_layout_v<DeviceHandle>,
              "DeviceHandle is passed to kernels by value");
static_assert(std::is_trivially_copyable_v<TeamHandle> && std::is_standard_layout_v<TeamHandle>,
              "TeamHandle is passed to kernels by value");
static_assert(sizeof(DeviceHandle) <= 0xffff && sizeof(TeamHandle) <= 0xffff);
static_assert(offsetof(DeviceHandle, bytes) == 6 && offsetof(TeamHandle, bytes) == 6,
              "the version fields lead every handle in every version");

// Host-side checks of handles that reach the library (kernel launchers, collectives): raise
// Errc::invalid_argument naming `what`, the field and both values when the magic, version or size
// is not this library's.
void validate_handle(const DeviceHandle& h, const char* what);
void validate_handle(const TeamHandle& t, const char* what);

}  // namespace gpucomm
