#pragma once
// Partitioned point-to-point (MPI 4.0 chapter 4; docs/MESSAGING.md, "Partitioned communication"):
// what host and device code share. A persistent partitioned request as kernels see it
// (PartitionedHandle, a POD passed by value, from PartitionedRequest::device()), the words each
// request keeps in its owner's symmetric heap, the failure record a kernel leaves, and the map
// from a receive partition to the send partitions that cover it. Plain C++.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpucomm/base/handle.hpp"
#include "gpucomm/messaging/fn.hpp"

namespace gpucomm::msg {

inline constexpr uint32_t kPartMagic = 0x54524150u;  // "PART" in memory order
// Bumped whenever PartitionedHandle, PartDiag or the request words change layout or meaning.
inline constexpr uint16_t kPartVersion = 1;

enum class PartKind : uint32_t { none = 0, send = 1, recv = 2 };

namespace part {

// The words of a request in its owner's heap (uint64_t each). Who writes which word:
inline constexpr uint32_t kCts = 0;        // send: the receiver stores the round it started (release), or kRefused
inline constexpr uint32_t kDstOff = 1;     // send: the receiver's heap offset where partition 0 goes
inline constexpr uint32_t kFlagsOff = 2;   // send: the receiver's flags; recv: its own (the receiver at the match)
inline constexpr uint32_t kPeerParts = 3;  // the other side's partition count (the receiver at the match)
inline constexpr uint32_t kPeerBytes = 4;  // the other side's bytes per partition (the receiver at the match)
inline constexpr uint32_t kRound = 5;      // the owner's current round, 0 before the first start (the owner)
inline constexpr uint32_t kSent = 6;       // send: partitions sent over all rounds (the sender, release add)
inline constexpr uint32_t kMatched = 7;    // recv: 1 once words 2..4 hold the match (the receiver, release)
inline constexpr uint32_t kHeaderWords = 8;
inline constexpr uint32_t kReady = 8;  // send: [partitions] round in which each partition was last marked ready

// kCts of a send the receiver refused (the totals differ); kPeerParts/kPeerBytes say its layout.
inline constexpr uint64_t kRefused = uint64_t(1) << 63;

// What the receiver's kCts says about round r.
enum class Receiver : uint32_t { waiting, started, refused };
GPUCOMM_MSG_FN Receiver receiver_state(uint64_t cts, uint64_t round) {
  if (cts & kRefused) return Receiver::refused;
  return cts >= round ? Receiver::started : Receiver::waiting;
}

// The send partitions [lo, hi] whose bytes make up receive partition j (equal totals).
struct Cover {
  uint64_t lo, hi;
};
GPUCOMM_MSG_FN Cover cover(uint64_t j, uint64_t recv_bytes, uint64_t send_bytes) {
  return Cover{j * recv_bytes / send_bytes, ((j + 1) * recv_bytes - 1) / send_bytes};
}

}  // namespace part

// Which device call failed, and why (PartDiag).
enum class PartCall : uint32_t { none, pready, parrived, wait_arrived };
enum class PartFault : uint32_t {
  none,
  bad_handle,     // not a handle of this library's version (expected: magic, seen: the handle's)
  wrong_kind,     // pready on a receive request, parrived on a send request
  bad_partition,  // partition index outside 0..partitions-1 (expected: partitions, seen: the index)
  not_started,    // no start() before the call
  twice,          // the partition was already marked ready in this round
  refused,        // the receiver refused the match (sizes differ: expected its total, seen ours)
  timeout,        // a wait ran past GPUCOMM_TIMEOUT (expected / seen: the word's values)
  aborted,        // the job failed while waiting (seen: the failed PE)
};

// Written once by the first device thread of a PE that fails in a partitioned call (host-mapped
// memory on GPU PEs, readable after the trap); Partitioned::check_device() raises it.
struct PartDiag {
  static constexpr uint32_t kEmpty = 0, kWriting = 1, kReady = 2;
  uint32_t state;
  PartCall call;
  PartFault fault;
  int32_t rank;       // world rank of this PE
  int32_t peer;       // world rank of the other side
  int32_t comm_rank;  // this PE's and the other side's communicator ranks
  int32_t peer_rank;
  int32_t ctx;
  int32_t tag;
  uint32_t partition;
  uint32_t waited_for;      // timeouts: 0 the receiver's start, 1 the match, 2 a send partition's flag
  uint32_t send_partition;  // waited_for 2: the send partition whose flag was awaited
  uint64_t round;
  uint64_t expected;
  uint64_t seen;
  uint64_t elapsed_ns;
  uint32_t block[3];
  uint32_t thread[3];
};

// A persistent partitioned request as kernels see it. `words` and the heap offsets the words hold
// are this PE's symmetric addresses; `buf` is this side's buffer (a receive buffer in the heap).
struct PartitionedHandle {
  uint32_t magic;    // kPartMagic
  uint16_t version;  // kPartVersion
  uint16_t bytes;    // sizeof(PartitionedHandle)
  PartKind kind;
  uint32_t partitions;
  uint64_t partition_bytes;
  int32_t peer;       // world rank of the other side
  int32_t peer_rank;  // its communicator rank
  int32_t comm_rank;  // this PE's communicator rank
  int32_t ctx;        // the communicator's context id
  int32_t tag;
  int32_t reserved;
  char* buf;
  uint64_t* words;  // this request's words in this PE's heap
  PartDiag* diag;   // failure record (may be null)
  DeviceHandle dev;
};

static_assert(std::is_trivially_copyable_v<PartitionedHandle> && std::is_standard_layout_v<PartitionedHandle>,
              "PartitionedHandle is passed to kernels by value");
static_assert(offsetof(PartitionedHandle, bytes) == 6, "the version fields lead the handle");

}  // namespace gpucomm::msg
