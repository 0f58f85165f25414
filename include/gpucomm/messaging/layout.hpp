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
  uint32_t requests;       // R: request table entries (multiple of 64)
  uint32_t unexpected;     // U: unexpected-message entries (multiple of 64)
  uint32_t queue_cap;      // Q: entries of each communicator's UMQ and PRQ
  uint32_t staging_pairs;  // Z: staging pairs (<= 64)
  uint64_t chunk_bytes;    // C: rendezvous chunk (a staging chunk; progress moves one per call)
  uint32_t am_per_sender;  // Q: active messages of one sender a receiver parks (requests; as many replies)
  uint32_t am_max;         // largest active-message payload
};

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

// Words of a submission-ring entry (protocol_alloc.hpp, submit).
inline constexpr uint32_t kSubmitWords = 16;

// Per peer, local. Sender side: tickets and eager credits taken by any thread of this PE
// (device-scope atomics). Receiver side: progress only.
struct alignas(64) PeerState {
  uint64_t next_ticket;  // tickets taken towards the peer
  uint64_t eager_used;   // eager credits taken at the peer
  uint64_t drained;      // tickets of the peer's ring consumed here
  uint64_t returned;     // the credit word last written to the peer
  uint64_t eager_freed;  // eager credits given back to the peer
  uint64_t pool_used;    // bitmap of the peer's pool slots holding payloads
  uint64_t idle_rounds;  // rounds that found the peer's ring empty with credits not yet returned
  // Active messages toward the peer (any thread of this PE, atomics): requests sent (the peer's
  // request credits: at most Q ahead of the peer's am_credits word here), reply spaces reserved
  // here for the peer's replies, and those freed again by this PE's pollers.
  uint64_t am_sent;
  uint64_t am_reserved;
  uint64_t am_reserved_freed;
  uint64_t reserved[5];
};

enum ReqState : uint32_t {
  kReqFree = 0,
  kReqSendPending = 1,  // tickets taken, slots not written yet (no credits)
  kReqSendWaitFin = 2,  // RTS written; the receiver gets, then stores FIN
  kReqSendWaitCts = 3,  // staged RTS written; waiting for the receiver's CTS
  kReqSendStaging = 4,  // streaming chunks through a staging pair
  kReqRecvPosted = 5,   // submitted or in the PRQ
  kReqRecvGet = 6,      // matched an RTS with a heap source: getting chunks
  kReqRecvStaged = 7,   // matched a staged RTS: CTS sent, fetching chunks as they become ready
  kReqDone = 8,
};

enum : uint32_t {
  kReqIsSend = 1,
  kReqIsRecv = 2,
};

// One request. The owner fills it and submits it; then progress owns it until it releases `done`.
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
  uint64_t ticket;    // send: first ticket
  uint32_t nslots;    // send: tickets taken
  uint32_t peer_req;  // rendezvous: the peer's request index
  uint64_t total;     // receive rendezvous: the message's size
  uint64_t moved;     // rendezvous: bytes got (get), chunks filled (staged send) or fetched (staged receive)
  uint64_t offset;    // rendezvous by get: the source's heap offset at the sender
  uint32_t pair;      // staged: the staging pair
  uint32_t reserved;
  uint64_t* event;  // completion counter, or null
  uint64_t hdr[8];  // full-format header words staged in global memory for puts through a proxy
  Status status;
  uint64_t done;  // 0 while in flight; release-stored 1 by the completer
};

enum UnexpKind : uint32_t { kUnexpInline = 1, kUnexpPool = 2, kUnexpRts = 3 };
// The handle of a message's envelope while it is matched, before it has an unexpected entry.
inline constexpr uint32_t kUnexpPending = 0xffffffffu;

// A message that arrived before its receive: its envelope sits in the UMQ with this entry's index.
struct Unexp {
  uint32_t kind;  // UnexpKind
  int32_t pe;     // the sender's PE
  uint64_t bytes;
  matching::Envelope env;  // (context id, sender rank, tag, this entry)
  uint32_t wire;           // the wire kind (rendezvous: get or staged)
  uint32_t pool_slot;      // kUnexpPool: the slot in the sender's pool share
  uint32_t sreq;           // kUnexpRts: the sender's request index
  uint32_t reserved;
  uint64_t offset;  // kUnexpRts by get: the source's heap offset
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
  uint32_t cap;  // UMQ and PRQ capacity
  matching::Envelope* umq;
  matching::Envelope* prq;
  uint32_t umq_n;
  uint32_t prq_n;
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
enum class ProtocolFault : uint32_t { none, unknown_comm, pool_full, ll_incomplete, am_full };

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

// Scratch of the matching engines on a GPU (device_backend_device.cuh): only the progress lock
// holder matches, so one suffices; global memory, so calling blocks need no shared memory for it.
inline constexpr uint32_t kBatchMax = 32;  // LL messages a warp drains in one pass (protocol_recv.hpp)

struct MatchScratch {
  uint32_t taken[matching::kWarpMaxTargets / 32];  // matching::WarpMatchShared
  matching::Envelope probe;
  matching::Match matches[2];
  int32_t scratch[2];
  uint32_t n_matches;
  uint32_t status;
  // A batch of messages (drain_ll_batch): envelopes in arrival order, the engine's matches.
  matching::Envelope batch[kBatchMax];
  matching::Match batch_matches[kBatchMax];
  int32_t batch_scratch[kBatchMax];
};

// Local control words. The progress lock serializes progress; the submission ring hands new
// requests to it in order (ticket `t` in entry t mod R, stamp t + 1 in the upper half).
struct alignas(64) Control {
  uint64_t lock;  // 0 free, 1 held (CAS acquire, release store)
  uint64_t reserved0[7];
  alignas(64) uint64_t submit_tail;  // producers: fetch-add
  alignas(64) uint64_t submit_head;  // progress only
  uint64_t active_n;                 // progress only
  uint64_t staging_used;             // bitmap of staging pairs (progress only)
  uint64_t am_head, am_tail;         // the active-message FIFO (progress only)
  uint64_t am_valid;                 // registered handler ids (bit per id; written by the host)
  uint64_t reserved1[2];
  alignas(64) MatchScratch match;
};

// Every pointer of a PE's messaging state. Heap pointers are this PE's symmetric addresses (the
// same offsets name the peers' copies).
struct StateView {
  Config cfg;
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
  Unexp* unexp;          // [unexpected]
  uint64_t* unexp_bits;  // [unexpected / 64]
  uint64_t* submit;      // [requests][kSubmitWords]: the submission ring
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
