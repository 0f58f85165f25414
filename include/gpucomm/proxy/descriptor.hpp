#pragma once
// Work descriptors and the descriptor-queue layout shared by every producer (GPU threads through
// queue_device.cuh, CPU threads through queue_host.hpp) and every agent (the CPU proxy threads,
// the GPU service block). Plain C++: host and device code include it. docs/PROXY.md describes
// the protocol with a diagram; this is the normative summary.
//
// One queue is a ring of `capacity` 64-byte entries (a power of two) plus these words:
//   head        next ticket to hand out. A producer reserves ticket t with a fetch-add: it only
//               allocates. Lives in the producers' memory. Bit 63 (kAgentClosed) belongs to the GPU
//               service agent: it sets it (an RMW) on every queue before it leaves when idle, so the
//               producer whose fetch-add returns the bit knows it must wake the agent - RMWs on one
//               word are totally ordered, so either the agent sees the reserved ticket and stays, or
//               the producer sees the bit. Tickets are head & kTicketMask.
//   consumed    tickets the agent has copied out of the ring. Written only by the agent (release),
//               read by producers (acquire) only when their cached copy `consumed_cache` says the
//               ring is full: slot t % capacity may be written once t < consumed + capacity.
//   stamp       last word of each entry. The producer writes the other fields, then release-stores
//               stamp = t + 1 (system scope; GPU scope for the GPU agent; a warp group's leader
//               releases the group's stamps behind one fence). The agent polls the stamp of its next
//               ticket with acquire: the entry is complete when stamp == t + 1. 64-bit tickets never
//               wrap, so the stamp doubles as the lap bit.
//   doorbell    optional batching (doorbell_every = N > 0): the producer of ticket t with
//               (t + 1) % N == 0, and every flush or quiet, raises the doorbell to the head (atomic
//               max, release) and the agent looks at stamps only below the doorbell. N = 0: the
//               agent polls stamps directly. Lives in the agent's memory.
//   completed   tickets whose operations completed, as a prefix: the agent completes late (a copy
//               or a network operation in flight) but publishes in ticket order, with release,
//               only after the data AND the signal of every ticket below it are visible at the
//               target. quiet waits for completed >= head (acquire). Lives where producers poll.
//   completed_cache, poller   GPU producers of a CPU agent (whose words sit in pinned host memory):
//               one waiting thread at a time (the one that takes `poller`, device memory) reads
//               `consumed`/`completed` across PCIe and raises consumed_cache/completed_cache (device
//               memory) for all the others, so thousands of waiters cost one PCIe reader per queue.
//   results     one 8-byte slot per ring entry (index t % capacity) in the producer's memory:
//               g() and fetching atomics read their value there once ticket t completed.
//   status      0 while healthy. An agent that meets a bad descriptor or a failed transport
//               stores a QueueFault (release) after recording fault_ticket and fault_field; a
//               producer waiting for space or completion reads it and fails instead of waiting.
// Data before signal: the agent issues an entry's signal only after the entry's data is
// complete at the target (copy-engine stream order with a memory barrier before the signal, the
// GPU agent's release after its payload store or its lanes' fence, UCX fence), so a PE that sees
// the signal sees the data, on every path.
#include <cstddef>
#include <cstdint>

#include "gpucomm/base/ops.hpp"

namespace gpucomm::proxy {

enum class Opcode : uint8_t {
  nop = 0,
  put = 1,                // `bytes` from `local` (producer address) to `remote` on pe
  put_inline = 2,         // `bytes` (1..8) of `value` to `remote` on pe
  get = 3,                // `bytes` from `remote` on pe into `local`
  signal = 4,             // SignalOp `op` of `value` on the signal word at `sig` on pe
  put_signal = 5,         // put, then (once the data is complete at the target) the signal
  atomic = 6,             // gpucomm::AtomicOp `op` of `width` bytes on `remote` at pe, operand `value`,
                          // compare value `compare` (the order of ops.hpp); the old value goes to `local`
                          // when it is non-zero
  fence = 7,              // later entries of this queue to pe are performed after earlier ones
  put_signal_inline = 8,  // put_signal whose payload (`bytes`, 1..8) travels in `compare`: the producer
                          // read it at post time, so the agent moves no data from producer memory
  last = put_signal_inline
};

enum class QueueFault : uint32_t {
  none = 0,
  bad_opcode = 1,
  bad_pe = 2,
  out_of_heap = 3,  // remote/sig range outside the symmetric heap
  bad_size = 4,     // bytes or width not allowed for the opcode, misaligned word
  bad_address = 5,  // a local address the agent cannot use (null where one is needed)
  transport = 6,    // the transport failed (peer gone, UCX error, CUDA error)
  agent_stopped = 7,
  unreachable = 8,  // no path from this agent to pe
};
const char* fault_name(QueueFault f);

// Descriptor fields named in fault records (QueueFault + field say what was wrong).
enum class Field : uint32_t { none, opcode, op, width, pe, remote, local, bytes, sig, value };
const char* field_name(Field f);

// 64 bytes: one entry of the ring. Written by one producer, read by the agent.
struct alignas(64) Descriptor {
  Opcode opcode;
  uint8_t op;        // gpucomm::SignalOp (signal, put_signal) or gpucomm::AtomicOp (atomic)
  uint16_t width;    // atomic: 4 or 8
  int32_t pe;        // target PE
  int64_t remote;    // offset from the user part of pe's heap (negative: its control block)
  uint64_t local;    // producer-side address: put source, get destination, atomic result (0: none)
  uint64_t bytes;    // payload size
  int64_t sig;       // offset of the signal word on pe (signal, put_signal)
  uint64_t value;    // signal value; atomic operand; put_inline payload
  uint64_t compare;  // atomic compare value; put_signal_inline payload
  uint64_t stamp;    // ticket + 1 once the entry is complete (release-stored last)
};
static_assert(sizeof(Descriptor) == 64);

// Bit 63 of `head`: the GPU service agent closed the queue before an idle exit (see above).
inline constexpr uint64_t kAgentClosed = uint64_t(1) << 63;
inline constexpr uint64_t kTicketMask = kAgentClosed - 1;

// Per-entry timestamps in ns (GPUCOMM_PROXY_TRACE=1), one record per ring slot, for the latency
// breakdown of `gpucomm bench proxy`. GPU stamps come from %globaltimer, CPU stamps from the host's
// steady clock (CLOCK_MONOTONIC); `clocks` says which (the benchmark calibrates one against the
// other). Written with relaxed stores by whoever reaches the stage; read after the entry completed.
struct alignas(64) TraceRecord {
  uint64_t ticket;     // t + 1, written before the stamp
  uint64_t post;       // producer: before it reserves the ticket
  uint64_t posted;     // producer: just before it released the stamp (the entry is written)
  uint64_t seen;       // agent: read the ready entry
  uint64_t issued;     // agent: executed it (GPU agent: data and signal stored) or issued it (CPU proxy:
                       // the CUDA call or the host copy returned)
  uint64_t completed;  // agent: learnt that the entry completed (published with `completed`)
  uint32_t clocks;     // bit 0: producer stamps are host clock; bit 1: agent stamps are host clock
  uint32_t reserved;
  uint64_t spare;
};
static_assert(sizeof(TraceRecord) == 64);
inline constexpr uint32_t kTraceProducerHost = 1, kTraceAgentHost = 2;

// Where the ring lives. The counters live by the rule above, whatever the ring's placement.
enum class Placement : uint32_t { host = 0, device = 1 };
enum class Side : uint32_t { cpu = 0, gpu = 1 };

// POD view of one queue, passed by value to kernels (GPU producers, the GPU service block) and
// used by CPU producers and the CPU proxy. There is one view per side: the producer's (addresses
// valid where producers run) and the agent's (addresses valid where the agent runs; a CPU agent
// reaches device-memory words through copies).
struct QueueView {
  Descriptor* ring;
  uint64_t* head;             // producers' ticket counter
  uint64_t* consumed;         // agent: tickets taken out of the ring
  uint64_t* consumed_cache;   // producers' cached copy of consumed (in the producers' memory)
  uint64_t* completed;        // agent: tickets completed, in order
  uint64_t* completed_cache;  // producers' copy of completed (null: producers poll `completed` itself)
  uint32_t* poller;           // producers' memory: 0 free, 1 a waiter reads the agent's words, 2 the queue failed
  uint64_t* doorbell;         // highest ticket + 1 announced (used when doorbell_every > 0)
  uint64_t* results;          // [capacity] result slots, producer memory
  uint32_t* status;           // QueueFault, 0 while healthy
  uint64_t* fault_ticket;     // the ticket that failed (valid when status != 0)
  uint32_t* fault_field;      // the Field that was wrong
  // GPU service agent only (null otherwise): the agent leaves when idle; a producer whose ticket
  // carries kAgentClosed asks the host to start it again (see service_agent_device.cuh).
  uint32_t* agent_wake;     // host-mapped: producers store 1 to ask for a restart
  TraceRecord* trace;       // [capacity] (GPUCOMM_PROXY_TRACE), else null
  uint32_t capacity;        // power of two
  uint32_t doorbell_every;  // 0: the agent polls stamps
  Placement placement;      // of the ring
  uint32_t queue_id;
  uint32_t gpu_agent;  // 1: the GPU service agent on the producers' GPU serves the queue
  uint32_t reserved;
};

// Largest payload of one put or get descriptor (the agent splits nothing; producers do).
inline constexpr uint64_t kMaxDescriptorBytes = uint64_t(1) << 40;

}  // namespace gpucomm::proxy
