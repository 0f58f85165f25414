#pragma once
// Endpoints, the messaging fast lane (docs/MESSAGING.md, "Endpoints"): the words in the symmetric
// heap, the POD handle kernels receive, the record format and the status. Plain C++: host and
// device code include it.
//
// An endpoint (pe, ep) is a receive queue owned by one group at a time (a thread, warp or block of
// a kernel of PE `pe`, or a host thread of a host-memory PE); any thread of any PE sends to it. It
// keeps MPI's matching rules (source, tag, ANY_SOURCE, ANY_TAG, non-overtaking per sender PE)
// with the matching state in the owner's memory (shared memory on the GPU), messages as stamped
// records (no fence and no acknowledgement per message) and one read-modify-write per send.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpucomm/base/handle.hpp"
#include "gpucomm/messaging/fn.hpp"

namespace gpucomm::msg::ep {

inline constexpr int32_t kAnySource = -1;
inline constexpr int32_t kAnyTag = -1;
inline constexpr uint32_t kMinSlots = 2;
inline constexpr uint32_t kMaxSlots = 64;  // the owner's consumed mask is one 64-bit word per sender
inline constexpr uint32_t kMaxBytes = 1024;
inline constexpr uint32_t kMaxEndpoints = 1024;
inline constexpr int kNearPes = 8;

// Where each array lives in every PE's region (the same offsets on every PE; `region` below).
//   ring[E][N][S][W]  at the receiver: records from sender PE n to endpoint e (written by n)
//   credit[N][E]      at the sender: records endpoint (pe, e) consumed (written by its owner)
//   ticket[N][E]      at the sender: tickets taken toward endpoint (pe, e) (this PE's threads)
//   home[E][N]        at the receiver: {base, consumed mask} per sender while no group owns e
//   owner[E]          at the receiver: 1 while a group owns e
struct Layout {
  uint32_t endpoints;  // E per PE
  uint32_t slots;      // S per (endpoint, sender), a power of two in [kMinSlots, kMaxSlots]
  uint32_t words;      // W per record: 2 header words + one per 4 payload bytes, rounded up to even
  uint32_t max_bytes;  // largest payload, a multiple of 4 up to kMaxBytes
  uint32_t pes;        // N
  uint32_t reserved;
  uint64_t ring;
  uint64_t credit;
  uint64_t ticket;
  uint64_t home;
  uint64_t owner;
  uint64_t bytes;  // the whole region
};

inline constexpr uint32_t kEpMagic = 0x50455047u;  // "GPEP" in memory order
inline constexpr uint16_t kEpVersion = 1;

// Filled by the first failing device thread of a PE (host-mapped), read by Endpoints::check_device().
struct EpDiag {
  uint32_t state;  // 0 empty, 1 writing, 2 ready
  uint32_t fail;   // ep::Fail
  int32_t peer;
  int32_t ep;
  uint64_t expected;
  uint64_t seen;
  uint64_t elapsed_ns;
  int32_t rank;
  uint32_t block;
  uint32_t thread;
  uint32_t reserved;
};

// What kernels (and the host API) receive: a POD passed by value.
struct EndpointsHandle {
  uint32_t magic;    // kEpMagic
  uint16_t version;  // kEpVersion
  uint16_t bytes;    // sizeof(EndpointsHandle)
  int32_t rank;
  int32_t size;
  Layout lay;
  char* region;              // this PE's region
  char* const* peer_region;  // [size]: each PE's region as mapped here (device memory on GPU PEs)
  char* near[kNearPes];      // the same for PEs 0..kNearPes-1, by value: no load on a send to them
  uint64_t timeout_ns;       // 0: waits never time out
  EpDiag* diag;              // host-mapped (GPU PEs); null on host PEs
  DeviceHandle dev;          // the failure record and the job-state word (GPU PEs)
};
static_assert(std::is_trivially_copyable_v<EndpointsHandle> && std::is_standard_layout_v<EndpointsHandle>,
              "EndpointsHandle is passed to kernels by value");

// What a completed receive or a probe reports. `error` is kErrTruncated when the message was longer
// than the receive's buffer (its first `capacity` bytes were delivered; `bytes` is the sent length),
// kErrCancelled when the receive was cancelled (nothing delivered).
struct Status {
  int32_t source;
  int32_t tag;
  uint32_t bytes;
  uint32_t error;
};
inline constexpr uint32_t kErrNone = 0;
inline constexpr uint32_t kErrTruncated = 1;
inline constexpr uint32_t kErrCancelled = 2;  // cancel() took the receive back before a message matched it

// Words of a record for `max_bytes` of payload.
GPUCOMM_MSG_FN constexpr uint32_t record_words(uint32_t max_bytes) {
  const uint32_t w = 2u + (max_bytes + 3u) / 4u;
  return (w + 1u) & ~1u;
}
// Words a record of `bytes` carries (the rest of its slot is not written).
GPUCOMM_MSG_FN constexpr uint32_t used_words(uint32_t bytes) {
  return record_words(bytes < 8u ? 8u : bytes);
}

// Record word i of ticket t: the stamp (t + 1, 32 bits) above 32 bits of content. Word 0 is the
// tag, word 1 the sender PE (16 bits) and the length (16 bits), the rest the payload, 4 bytes per
// word. Every word is written with one 8-byte store, so a reader that sees the stamp in every word
// it needs has the whole record: no fence on either side.
GPUCOMM_MSG_FN constexpr uint32_t stamp_of(uint64_t ticket) {
  return static_cast<uint32_t>(ticket + 1u);
}
GPUCOMM_MSG_FN constexpr uint64_t stamped(uint32_t stamp, uint32_t low) {
  return (static_cast<uint64_t>(stamp) << 32) | low;
}
GPUCOMM_MSG_FN constexpr bool has_stamp(uint64_t word, uint32_t stamp) {
  return static_cast<uint32_t>(word >> 32) == stamp;
}

// Layout of N PEs with E endpoints each (offsets from the region's start, 128-byte aligned).
constexpr Layout make_layout(uint32_t pes, uint32_t endpoints, uint32_t slots, uint32_t max_bytes) {
  Layout l{};
  l.pes = pes;
  l.endpoints = endpoints;
  l.slots = slots;
  l.max_bytes = max_bytes;
  l.words = record_words(max_bytes);
  auto up = [](uint64_t v) { return (v + 127u) & ~uint64_t{127}; };
  uint64_t off = 0;
  l.ring = off;
  off = up(off + uint64_t{endpoints} * pes * slots * l.words * 8u);
  l.credit = off;
  off = up(off + uint64_t{pes} * endpoints * 8u);
  l.ticket = off;
  off = up(off + uint64_t{pes} * endpoints * 8u);
  l.home = off;
  off = up(off + uint64_t{endpoints} * pes * 16u);
  l.owner = off;
  off = up(off + uint64_t{endpoints} * 8u);
  l.bytes = off;
  return l;
}

// PE pe's region as mapped here.
GPUCOMM_MSG_FN char* region_of(const EndpointsHandle& h, int pe) {
  return pe < kNearPes ? h.near[pe] : h.peer_region[pe];
}

// Addresses within a region.
GPUCOMM_MSG_FN uint64_t* ring_slot(char* region, const Layout& l, uint32_t ep, uint32_t sender, uint64_t ticket) {
  const uint64_t idx = (uint64_t{ep} * l.pes + sender) * l.slots + (ticket & (l.slots - 1u));
  return reinterpret_cast<uint64_t*>(region + l.ring) + idx * l.words;
}
GPUCOMM_MSG_FN uint64_t* credit_word(char* region, const Layout& l, uint32_t pe, uint32_t ep) {
  return reinterpret_cast<uint64_t*>(region + l.credit) + uint64_t{pe} * l.endpoints + ep;
}
GPUCOMM_MSG_FN uint64_t* ticket_word(char* region, const Layout& l, uint32_t pe, uint32_t ep) {
  return reinterpret_cast<uint64_t*>(region + l.ticket) + uint64_t{pe} * l.endpoints + ep;
}
GPUCOMM_MSG_FN uint64_t* home_words(char* region, const Layout& l, uint32_t ep, uint32_t sender) {
  return reinterpret_cast<uint64_t*>(region + l.home) + (uint64_t{ep} * l.pes + sender) * 2u;
}
GPUCOMM_MSG_FN uint64_t* owner_word(char* region, const Layout& l, uint32_t ep) {
  return reinterpret_cast<uint64_t*>(region + l.owner) + ep;
}

}  // namespace gpucomm::msg::ep
