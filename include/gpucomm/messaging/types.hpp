#pragma once
// Values of the messaging API that host and device code share: wildcards and PROC_NULL, the
// matching modes, Status and its error codes, and the request, message and event handles.
// Plain C++ (host and device code include it). See docs/MESSAGING.md.
#include <cstdint>
#include <type_traits>

#include "gpucomm/matching/envelope.hpp"

namespace gpucomm::msg {

// Wildcards of receives and probes, and the null peer (a send or receive that completes at once).
inline constexpr int32_t kAnySource = matching::kAnySource;  // -1
inline constexpr int32_t kAnyTag = matching::kAnyTag;        // -1
inline constexpr int32_t kProcNull = -2;
// Largest tag (MPI's MPI_TAG_UB is at least 32767).
inline constexpr int32_t kTagUpperBound = 0x3fffffff;
// Most communicators alive on a PE at once (context ids 0..kMaxComms-1).
inline constexpr int kMaxComms = 64;

// How a communicator matches, fixed when it is created (MPI-style assertions; docs/MESSAGING.md).
enum class Mode : uint32_t {
  mpi = 0,            // wildcards and non-overtaking (default)
  no_any_source = 1,  // receives never use ANY_SOURCE (partitioned queues)
  no_unexpected = 2,  // receives are posted before their messages arrive
  unordered = 3,      // no wildcards, and messages may overtake (needs allow_overtaking)
  last = unordered
};

// Status.error values.
enum : int32_t {
  kErrNone = 0,
  kErrTruncated = 1,    // the message was longer than the receive buffer; the buffer holds its start
  kErrPeerFailure = 2,  // the job failed while this request waited
  kErrCancelled = 3,    // the receive was cancelled before it matched
};

// What a completed receive (or probe) reports. Sends report their peer and tag.
struct Status {
  int32_t source;  // communicator rank of the sender (kProcNull for PROC_NULL)
  int32_t tag;
  uint64_t bytes;  // bytes received (at most the buffer's size); the message's size for probes
  int32_t error;   // kErrNone, kErrTruncated, kErrPeerFailure, kErrCancelled
  int32_t reserved;
};

// A request in flight. Requests are values; wait and test reset a completed one to null.
struct Request {
  uint32_t id;     // 0: null; kDone: completed when it was made; kNull: PROC_NULL; else slot + 1
  uint32_t stamp;  // this use of the slot: its completion record carries the same stamp
  static constexpr uint32_t kDone = 0xffffffffu;
  static constexpr uint32_t kProcNull = 0xfffffffeu;
  constexpr bool null() const { return id == 0; }
};

// A message taken off the unexpected queue by mprobe/improbe, received with mrecv.
struct Message {
  uint32_t id;  // 0: none; kProcNull: a PROC_NULL message; else unexpected entry + 1
  static constexpr uint32_t kProcNull = 0xfffffffeu;
};

// An active message as its handler gets it (docs/MESSAGING.md, "Active messages").
struct AmMessage {
  int32_t source;       // the sender's rank in the communicator
  uint32_t id;          // handler id
  int32_t ctx;          // the communicator's context id
  uint32_t flags;       // kAmWantsReply: a request whose handler must answer once with am_reply
  const void* payload;  // valid while the handler runs
  uint64_t bytes;
  uint32_t entry;  // where it is parked (am_reply marks it answered)
  uint32_t reserved;
};

// A completion counter (docs/MESSAGING.md, "Events"): every request attached to it adds one when
// it completes; kernels and the host wait until it reaches a value. Lives in local memory of the
// PE (device memory on GPU PEs).
struct Event {
  uint64_t* counter;
};

static_assert(std::is_trivially_copyable_v<Status> && sizeof(Status) == 24);
static_assert(std::is_trivially_copyable_v<Request> && std::is_trivially_copyable_v<Message>);
static_assert(sizeof(Request) == 8);

inline const char* error_name(int32_t err) {
  switch (err) {
    case kErrNone:
      return "none";
    case kErrTruncated:
      return "truncated";
    case kErrPeerFailure:
      return "peer_failure";
    case kErrCancelled:
      return "cancelled";
    default:
      return "?";
  }
}

inline const char* mode_name(Mode m) {
  switch (m) {
    case Mode::mpi:
      return "mpi";
    case Mode::no_any_source:
      return "no_any_source";
    case Mode::no_unexpected:
      return "no_unexpected";
    case Mode::unordered:
      return "unordered";
  }
  return "?";
}

}  // namespace gpucomm::msg
