#pragma once
// The messaging state of one PE (docs/MESSAGING.md, "Memory per PE"): the sizes fixed at start-up,
// the remote-visible regions in the symmetric heap, and the local tables only this PE touches.
// `StateView` holds pointers to all of it; host-memory PEs keep it in process memory, GPU PEs in
// device memory (kernels reach it through a CommHandle). Plain C++: host and device code include it.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpucomm/matching/envelope.hpp"
#include "gpucomm/matching/job.hpp"
#include "gpucomm/messaging/fn.hpp"
#include "gpucomm/messaging/types.hpp"

namespace gpucomm::msg {

// Sizes, the same on every PE (checked when the Messenger is created).
struct Config {
  int32_t npes;            // PEs of the world
  int32_t rank;            // this PE's world rank
  uint32_t slot_bytes;     // Sb: bytes per inbox slot (power of two, >= 128)
  uint32_t slots;          // S: slots per sender (power of two)
  uint32_t pool_slots;     // P: unexpected eager payloads buffered per sender (<= 64)
  uint32_t eager_max;      // E: largest eager message; also the size of a pool slot
  uint32_t requests;       // R: request table entries (multiple of 64, at most kMaxRequests)
  uint32_t unexpected;     // U: unexpected-message entries (multiple of 64, at most kMaxUnexpected)
  uint32_t queue_cap;      // Q: most unexpected messages, and most posted receives, of one communicator
  uint32_t staging_pairs;  // Z: staging pairs (<= 64)
  uint64_t chunk_bytes;    // C: rendezvous chunk (a staging chunk; progress moves one per call)
  uint32_t am_per_sender;  // Q: active messages of one sender a receiver parks (requests; as many replies)
  uint32_t am_max;         // largest active-message payload
  // Derived (make_config):
  uint32_t posts;       // entries of the post ring and of the fast-post log: a power of two >= R
  uint32_t keys;        // slots of the key table: a power of two >= 2 (R + U) / 2... (make_config)
  uint32_t bin_chunks;  // chunks of the posted-receive bins: R + R / 8 + 1
  uint32_t reserved;
  uint64_t steal_ns;  // a holder parked this long may lose progress to a waiter (GPUCOMM_MSG_STEAL_US)
};

inline constexpr uint32_t kMaxRequests = 65472;    // request slots fit 16 bits (Request::id = slot + 1)
inline constexpr uint32_t kMaxUnexpected = 65472;  // unexpected entries fit the 16-bit list links

// Handler ids of active messages: 0 .. kMaxAmHandlers - 1 (registered by the host, the same on
// every PE: Messenger::register_am). On the wire an active message's tag is its id and these flags.
inline constexpr uint32_t kMaxAmHandlers = 64;
inline constexpr uint32_t kAmIdMask = 0xffffu;
inline constexpr uint32_t kAmReply = 1u << 16;       // a reply (parked in the space its request reserved)
inline constexpr uint32_t kAmWantsReply = 1u << 17;  // a request whose handler must reply once

// Wire constants (docs/MESSAGING.md, "Slots on the wire").
inline constexpr uint32_t kHeaderBytes = 64;  // full format: payload starts here
inline constexpr uint32_t kLLWords = 8;       // the LL format uses words 0..7 of the slot
inline constexpr uint32_t kLLMaxBytes = 20;   // LL payload: words 3..7, 4 bytes each
inline constexpr uint32_t kInlineBytes = 24;  // payloads this small never take an eager credit

enum WireKind : uint32_t {
  kWireNone = 0,
  kWireLL = 1,
  kWireEager = 2,
  kWireRtsGet = 3,     // rendezvous: the receiver gets from the sender's heap
  kWireRtsStaged = 4,  // rendezvous through the sender's staging pairs
  kWireKindMask = 7,
  kWireActive = 8,  // flag: an active message (its tag is the handler id)
};

// Values peers store into a request's words (`ctl`: FIN or CTS; `count`: chunk counters).
inline constexpr uint64_t kFin = uint64_t(1) << 63;
inline constexpr uint64_t kCts = uint64_t(1) << 62;

// Words of a post-ring entry and of a fast-post log entry (protocol_alloc.hpp, "Posts").
inline constexpr uint32_t kPostWords = 16;
inline constexpr uint32_t kFastWords = 8;

// Words of a completion record (protocol_alloc.hpp, "Completion records").
inline constexpr uint32_t kCompWords = 16;
inline constexpr uint32_t kCompInlineBytes = 32;

// LL messages a warp drains in one pass (protocol_recv.hpp, drain_ll_batch).
inline constexpr uint32_t kBatchMax = 32;

// Posted receives of one key share a bin: chunks of kBinEntries entries (bins.hpp).
inline constexpr uint32_t kBinEntries = 8;

// Per peer, local: the sender side (tickets and eager credits taken by any thread of this PE,
// device-scope atomics) and the active-message counters. The receiver side (what this PE drained
// of the peer's ring) is holder state (HomeMap::peer).
struct alignas(64) PeerState {
  uint64_t next_ticket;  // tickets taken towards the peer
  uint64_t eager_used;   // eager credits taken at the peer
  // Active messages toward the peer (any thread of this PE, atomics): requests sent (the peer's
  // request credits: at most Q ahead of the peer's am_credits word here), reply spaces reserved
  // here for the peer's replies, and those freed again by this PE's pollers.
  uint64_t am_sent;
  uint64_t am_reserved;
  uint64_t am_reserved_freed;
  uint64_t reserved[3];
};

enum ReqState : uint32_t {
  kReqFree = 0,
  kReqSendPending = 1,  // tickets taken, slots not written yet (no credits)
  kReqSendWaitFin = 2,  // RTS written; the receiver gets, then stores FIN
  kReqSendWaitCts = 3,  // staged RTS written; waiting for the receiver's CTS
  kReqSendStaging = 4,  // streaming chunks through a staging pair
  kReqRecvPosted = 5,   // in a bin of the posted receives
  kReqRecvGet = 6,      // matched an RTS with a heap source: getting chunks
  kReqRecvStaged = 7,   // matched a staged RTS: CTS sent, fetching chunks as they become ready
  kReqDone = 8,
  kReqProbe = 9,  // a standing probe of a group that does not hold progress
};

enum : uint32_t {
  kReqIsSend = 1,
  kReqIsRecv = 2,
  kReqHasEvent = 4,
  kReqClaimable = 8,  // receive by get whose waiter may still claim the get (protocol_recv.hpp)
};

// The claim word of a receive by get that a waiter may move itself (its request word 0): the
// request's stamp << 32 | one of these. The holder opens it; the waiter's or the holder's
// compare-and-swap decides who gets the data; the waiter marks it done and the holder frees the slot.
enum GetClaim : uint32_t {
  kClaimOpen = 0,
  kClaimWaiter = 1,
  kClaimHolder = 2,
  kClaimDone = 3,
};

// One request: the holder's record of a receive or of a send it advances (pending slots,
// rendezvous). Requests that complete at once or by a completion record of the holder need nothing
// else; a waiter reads its completion record (comps), not this entry.
struct Req {
  uint32_t state;
  uint32_t flags;
  int32_t ctx;
  int32_t pe;     // send: destination PE; receive: the sender's PE once matched
  int32_t rank;   // send: destination rank; receive: requested source (or kAnySource)
  int32_t tag;    // send: tag; receive: requested tag (or kAnyTag)
  int32_t src;    // send: this PE's rank in the communicator
  uint32_t kind;  // send: wire kind; receive: the matched message's kind
  char* buf;
  uint64_t bytes;     // send: message size; receive: buffer size
  uint64_t ticket;    // send: first ticket; claimable receive: when its RTS matched (ns)
  uint32_t nslots;    // send: tickets taken
  uint32_t peer_req;  // rendezvous: the peer's request index
  uint64_t total;     // receive rendezvous: the message's size
  uint64_t moved;     // rendezvous: bytes got (get), chunks filled (staged send) or fetched (staged receive)
  uint64_t offset;    // rendezvous by get: the source's heap offset at the sender
  uint32_t pair;      // staged: the staging pair
  uint32_t stamp;     // the Request's stamp: its completion record carries it
  uint64_t* event;    // completion counter, or null
  uint64_t hdr[8];    // full-format header words staged in global memory for puts through a proxy
  Status status;      // receive: the status once matched (rendezvous)
  uint32_t mode;      // receive: the communicator's mode
  uint32_t reserved;
};

enum UnexpKind : uint32_t { kUnexpInline = 1, kUnexpPool = 2, kUnexpRts = 3 };

// A message that arrived before its receive: it sits in the UMQ lists of its keys (bins.hpp).
struct Unexp {
  uint32_t kind;  // UnexpKind
  int32_t pe;     // the sender's PE
  uint64_t bytes;
  matching::Envelope env;  // (context id, sender rank, tag, this entry)
  uint32_t wire;           // the wire kind (rendezvous: get or staged)
  uint32_t pool_slot;      // kUnexpPool: the slot in the sender's pool share
  uint32_t sreq;           // kUnexpRts: the sender's request index
  uint32_t roles;          // the UMQ lists it is in (bins.hpp, kRole*)
  uint64_t offset;         // kUnexpRts by get: the source's heap offset
  uint8_t data[kInlineBytes];
};

// Per-communicator counters (docs/MESSAGING.md, "Observability"). Progress writes most of them;
// senders add to `sent` and `credit_stalls` with atomics.
struct Counters {
  uint64_t sent;               // messages sent
  uint64_t received;           // receives completed with a message
  uint64_t unexpected;         // messages that arrived before their receive
  uint64_t credit_stalls;      // sends that found no ring credit and waited
  uint64_t rendezvous;         // messages sent by rendezvous
  uint64_t degraded;           // eager-sized messages sent header-only for want of an eager credit
  uint64_t matches;            // envelopes matched (both phases)
  uint64_t match_ns;           // time spent matching
  uint64_t assert_violations;  // messages without a posted receive on a no_unexpected communicator
  uint64_t active;             // active messages handed to their handlers
  uint64_t reserved[6];
};

enum : uint32_t {
  kCommErrorsReturn = 1,  // truncation and peer failure are returned in Status, not fatal
  kCommAllowOvertaking = 2,
};

struct CommState {
  uint32_t live;
  Mode mode;
  uint32_t flags;
  int32_t ctx;
  int32_t size;  // ranks in the communicator
  int32_t rank;  // this PE's rank in it
  int32_t team_slot;
  uint32_t reserved;
  Counters counters;
};

// What a failed wait or a bad argument records (device) or raises (host); describe() in
// src/messaging formats it.
enum class DiagKind : uint32_t { none, timeout, bad_argument, peer_failure, truncated, resource, protocol };
enum class DiagOp : uint32_t {
  none,
  send,
  isend,
  recv,
  irecv,
  wait,
  test,
  probe,
  mprobe,
  mrecv,
  cancel,
  progress,
  am_send,
  event_wait,
  pready,
  parrived
};
struct Diag {
  uint32_t state;  // device: 0 empty, 1 writing, 2 ready (like DeviceDiag)
  DiagKind kind;
  DiagOp op;
  uint32_t arg;  // bad_argument: which argument (DiagArg); protocol: ProtocolFault; resource: DiagArg
  int32_t ctx;
  uint32_t mode;
  int32_t peer;  // world PE of the peer, or -1
  int32_t rank;  // communicator rank of the peer (or the bad value)
  int32_t tag;
  uint32_t req_state;
  uint64_t bytes;
  uint64_t value;  // bad_argument: the bad value; timeout: the credit word seen
  uint64_t limit;  // bad_argument: the limit; timeout: tickets taken
  uint32_t umq, prq, active, submitted;
  uint64_t drained;
  uint64_t elapsed_ns;
  uint64_t sent_bytes;  // truncated: the message's size
};

enum class DiagArg : uint32_t {
  none,
  comm,
  rank,
  tag,
  buffer,
  bytes,
  request,
  message,
  event,
  mode,
  handler,
  partition,
  reply
};
// DiagKind::protocol: what broke (in Diag::arg).
enum class ProtocolFault : uint32_t { none, unknown_comm, pool_full, ll_incomplete, am_full, no_unexpected };

// An active message parked for its handler (docs/MESSAGING.md, "Active messages"): its header,
// then am_max bytes of payload. The table holds 2Q entries per sender: Q for its requests (granted
// by credits), Q for its replies (reserved by the requests this PE sent it).
struct AmEntry {
  int32_t source;  // the sender's rank in the communicator
  uint32_t id;     // handler id
  int32_t ctx;
  uint32_t flags;  // kAmReply, kAmWantsReply
  uint64_t bytes;
  int32_t pe;        // the sender's world PE (its credits go back there)
  uint32_t replied;  // a request's handler replied
};
static_assert(sizeof(AmEntry) == 32);
// Bytes of one parked active message (header and payload, 16-byte aligned).
GPUCOMM_MSG_FN constexpr uint64_t am_entry_bytes(const Config& c) {
  return sizeof(AmEntry) + ((static_cast<uint64_t>(c.am_max) + 15) / 16) * 16;
}

// The progress holder's word (docs/MESSAGING.md, "Who matches"): bits 0-1 the state, 2-41 the
// tenure (a new one each time another block takes progress over), 42-63 when the holder parked
// (global timer / 1024, wrapping).
enum HolderState : uint64_t { kHolderFree = 0, kHolderBusy = 1, kHolderParked = 2 };
GPUCOMM_MSG_FN uint64_t holder_word(uint64_t state, uint64_t tenure, uint64_t parked_at) {
  return state | ((tenure & ((uint64_t(1) << 40) - 1)) << 2) | ((parked_at & ((uint64_t(1) << 22) - 1)) << 42);
}
GPUCOMM_MSG_FN uint64_t holder_state(uint64_t w) {
  return w & 3u;
}
GPUCOMM_MSG_FN uint64_t holder_tenure(uint64_t w) {
  return (w >> 2) & ((uint64_t(1) << 40) - 1);
}
GPUCOMM_MSG_FN uint64_t holder_parked_at(uint64_t w) {
  return w >> 42;
}

// The post word (protocol_alloc.hpp, "Posts"): ring tickets in bits 0-30, the fast posts in bits
// 32-61, the fast-post role in bit 63; bits 31 and 62 catch the carry of a field that wraps (the
// poster that caused it takes it back out).
inline constexpr uint64_t kPostRingMask = 0x7fffffffull;
inline constexpr uint64_t kPostFastShift = 32;
inline constexpr uint64_t kPostFastMask = 0x3fffffffull;
inline constexpr uint64_t kPostRole = uint64_t(1) << 63;
GPUCOMM_MSG_FN uint32_t post_ring_count(uint64_t w) {
  return static_cast<uint32_t>(w & kPostRingMask);
}
GPUCOMM_MSG_FN uint32_t post_fast_count(uint64_t w) {
  return static_cast<uint32_t>((w >> kPostFastShift) & kPostFastMask);
}

// Local control words.
struct alignas(64) Control {
  uint64_t holder;  // the progress holder's word
  uint64_t reserved0[7];
  alignas(64) uint64_t post_tail;  // posters: fetch_add / fetch_or / posted add (the post word)
  uint64_t reserved1[7];
  alignas(64) uint64_t am_head;  // active messages taken by pollers (compare-and-swap)
  uint64_t am_tail;              // active messages parked (the holder; release store)
  uint64_t am_valid;             // registered handler ids (bit per id; written by the host)
  uint64_t reserved2[5];
};

// The holder's words ("home", docs/MESSAGING.md "Matching state"), 64-bit each, in local memory;
// a GPU holder keeps a write-through copy of the hot ones in its block's shared memory. The index
// map, computed from the Config:
namespace home {
inline constexpr uint32_t kSeq = 0;          // next post order (posts are numbered in take order)
inline constexpr uint32_t kFastDone = 1;     // fast posts taken (30-bit count)
inline constexpr uint32_t kRingDone = 2;     // ring posts taken (31-bit count)
inline constexpr uint32_t kKeysLive = 3;     // occupied slots of the key table
inline constexpr uint32_t kChunkFree = 4;    // free list of bin chunks (chunk + 1; 0: empty)
inline constexpr uint32_t kActiveN = 5;      // requests in the active list
inline constexpr uint32_t kStagingUsed = 6;  // staging pairs in use (bitmap)
inline constexpr uint32_t kProbesN = 7;      // standing probes
inline constexpr uint32_t kUmqN = 8;         // unexpected entries in use
inline constexpr uint32_t kPrqN = 9;         // posted receives in bins
inline constexpr uint32_t kAmTail = 10;      // active messages parked (the holder's copy of am_tail)
inline constexpr uint32_t kHeader = 16;
inline constexpr uint32_t kWild = kHeader;                  // [kMaxComms]: wildcard receives posted (bins.hpp)
inline constexpr uint32_t kCommUmq = kWild + kMaxComms;     // [kMaxComms]: unexpected messages of the context
inline constexpr uint32_t kCommPrq = kCommUmq + kMaxComms;  // [kMaxComms]: posted receives of the context
inline constexpr uint32_t kPeers = kCommPrq + kMaxComms;    // [npes][kPeerWords]
inline constexpr uint32_t kPeerWords = 8;
// Words of a peer (the receiver side of its ring).
inline constexpr uint32_t kDrained = 0;     // tickets of the peer's ring consumed
inline constexpr uint32_t kReturned = 1;    // the credit word last written to the peer
inline constexpr uint32_t kEagerFreed = 2;  // eager credits given back to the peer
inline constexpr uint32_t kPoolUsed = 3;    // bitmap of the peer's pool slots holding payloads
inline constexpr uint32_t kIdle = 4;        // rounds that found the ring empty with credits owed
inline constexpr uint32_t kMaxProbes = 64;  // standing probes at once
inline constexpr uint32_t kProbeWords = 2;  // a probe: request slot | stamp << 32, then its key
inline constexpr uint32_t kKeyWords = 6;    // a key slot (bins.hpp)
}  // namespace home

struct HomeMap {
  uint32_t peers;   // first word of peer 0
  uint32_t probes;  // the standing probes
  uint32_t keys;    // slot 0 of the key table
  uint32_t total;   // words
};
GPUCOMM_MSG_FN HomeMap home_map(const Config& c) {
  HomeMap m{};
  m.peers = home::kPeers;
  m.probes = m.peers + static_cast<uint32_t>(c.npes) * home::kPeerWords;
  m.keys = m.probes + home::kMaxProbes * home::kProbeWords;
  m.total = m.keys + c.keys * home::kKeyWords;
  return m;
}

// A posted receive in a bin (bins.hpp): 24 bytes, kBinEntries to a chunk.
struct BinEntry {
  uint32_t order;  // take order of its post (the earliest compatible receive wins)
  uint32_t stamp;  // the Request's stamp (its completion record carries it)
  uint32_t slot;   // request slot
  uint32_t cap;    // buffer bytes, capped at kBinCapLarge; kBinSlow: look at the request entry
  uint64_t buf;
};
static_assert(sizeof(BinEntry) == 24);
inline constexpr uint32_t kBinCapLarge = 0x7fffffffu;
inline constexpr uint32_t kBinSlow = 0x80000000u;

// Every pointer of a PE's messaging state. Heap pointers are this PE's symmetric addresses (the
// same offsets name the peers' copies).
struct StateView {
  Config cfg;
  HomeMap hm;
  // symmetric heap
  char* rings;           // [npes][slots][slot_bytes]: ring of sender s at s * slots * slot_bytes
  uint64_t* credits;     // [npes]: credit word written by receiver r
  uint64_t* req_words;   // [requests][2]: ctl, count (written by the request's peer)
  uint64_t* am_credits;  // [npes]: request entries freed by receiver r (r's pollers add to it)
  char* staging;         // [staging_pairs][2][chunk_bytes]
  // local
  PeerState* peers;      // [npes]
  char* pool;            // [npes][pool_slots][eager_max]
  Req* reqs;             // [requests]
  uint64_t* req_bits;    // [requests / 64]: allocated requests
  uint64_t* comps;       // [requests][kCompWords]: completion records
  Unexp* unexp;          // [unexpected]
  uint64_t* unexp_bits;  // [unexpected / 64] (holder)
  uint16_t* umq_links;   // [unexpected][8]: prev + 1, next + 1 in each of the 4 lists (holder)
  uint64_t* posts;       // [posts][kPostWords]: the post ring
  uint64_t* fast;        // [posts][kFastWords]: the fast-post log
  uint64_t* home;        // [hm.total]: the holder's words
  BinEntry* bins;        // [bin_chunks][kBinEntries]
  uint32_t* bin_next;    // [bin_chunks]: next chunk + 1 (a bin's chain, or the free list)
  uint32_t* active;      // [requests]: requests progress advances
  CommState* comms;      // [kMaxComms]
  char* am;              // [npes][2 Q][am_entry_bytes]: parked active messages
  uint64_t* am_bits;     // [npes]: a sender's entries in use (requests bits 0..Q-1, replies 32..)
  uint32_t* am_fifo;     // [npes * 2 Q]: parked entries in arrival order
  Control* ctl;
  Diag* diag;  // the failure record (host-mapped memory on GPU PEs: readable after a trap)
};

static_assert(std::is_trivially_copyable_v<StateView> && std::is_standard_layout_v<StateView>);
static_assert(std::is_trivially_copyable_v<Req> && std::is_trivially_copyable_v<Unexp>);

}  // namespace gpucomm::msg
