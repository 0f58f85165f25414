#pragma once
// Work descriptors and the descriptor-queue layout shared by every producer (GPU threads through
// descriptor_queue_device.cuh, CPU threads through descriptor_queue.hpp) and every agent (the
// CPU proxy threads, the GPU service block). Plain C++: host and device code include it.
//
// Queue protocol (one queue: a ring of `capacity` entries, capacity a power of two)
//   head       next ticket to hand out. Producers reserve a ticket t with an atomic fetch-add
//              (relaxed: it only allocates). Lives where the producers are (device memory for
//              GPU producers, host memory for CPU producers).
//   consumed   tickets the agent has taken out of the ring (entries below it may be reused).
//              Written only by the agent (release), read by producers (acquire) only when their
//              cached copy says the ring is full: a producer may write slot t % capacity once
//              t < consumed + capacity.
//   stamp      last word of each entry. The producer writes the other fields, then release-stores
//              stamp = t + 1 (scope: system when the agent is a CPU thread or another device).
//              The agent polls the stamp of its next ticket with acquire: the entry is complete
//              when stamp == t + 1. 64-bit tickets never wrap, so no lap bit is needed.
//   doorbell   optional batching: with doorbell_every = N > 0, the producer whose ticket t has
//              (t + 1) % N == 0, and every flush/quiet, raise the doorbell to t + 1 (atomic max,
//              release) and the agent reads stamps only below the doorbell; with N = 0 the agent
//              polls stamps directly. The doorbell lives in the agent's memory.
//   completed  tickets whose operations completed, in ticket order (the agent completes late,
//              but publishes in order). Written only by the agent with release after the data AND
//              the signal of every ticket below it are visible at the target; quiet(t) waits for
//              completed >= t + 1 with acquire. Lives where the producers poll it.
//   status     0 while healthy; an agent that meets a bad descriptor or a failed transport
//              stores a QueueFault code (release) and records the ticket; producers waiting for
//              space or completion read it and fail instead of waiting forever.
// Data before signal: the agent issues an entry's signal only after the entry's data is
// complete at the target (copy-engine event, SM copy + fence, UCX fence), so a PE that sees
// the signal sees the data, on every path.
#include <cstddef>
#include <cstdint>

namespace gpucomm::proxy {

enum class Opcode : uint8_t {
  nop = 0,
  put = 1,          // bytes from src (producer address) to dst (heap offset) on pe
  put_inline = 2,   // bytes (<= 8) from the inline payload to dst on pe
  get = 3,          // bytes from dst (heap offset on pe) into src (producer address)
  signal = 4,       // sig_op of sig_value on the signal word at sig (heap offset) on pe
  put_signal = 5,   // put, then (after the data is complete) the signal
  atomic = 6,       // AtomicOp `flags` of width `bytes` (4 or 8) on dst at pe; operand in
                    // inline_data, compare value in sig_value; old value stored at `sig` if non-zero
  fence = 7,        // later entries of this queue to pe are delivered after earlier ones
  last = fence
};

enum class AtomicOp : uint32_t { fetch, set, fetch_add, swap, compare_swap, fetch_and, fetch_or, fetch_xor };

enum class QueueFault : uint32_t {
  none = 0,
  bad_opcode = 1,
  bad_pe = 2,
  out_of_heap = 3,    // dst/sig range outside the symmetric heap
  bad_size = 4,
  transport = 5,      // the transport failed (peer gone, UCX error)
  agent_stopped = 6,  // the agent stopped with entries outstanding
};

// 64 bytes: one entry of the ring. Written by one producer, read by the agent.
struct alignas(64) Descriptor {
  Opcode opcode;
  uint8_t flags;          // atomic: the AtomicOp; otherwise 0
  uint16_t sig_op;        // SignalOp (set, add) for signal and put_signal
  int32_t pe;             // target PE
  uint64_t dst;           // heap offset on pe (put, put_inline, put_signal, atomic); source for get
  uint64_t src;           // producer-side address (put, put_signal: source; get: destination)
  uint64_t bytes;         // payload size (atomic: 4 or 8)
  uint64_t sig;           // heap offset of the signal word on pe; atomic: result address or 0
  uint64_t sig_value;     // signal value; atomic: compare value
  uint64_t inline_data;   // put_inline payload; atomic operand
  uint64_t stamp;         // ticket + 1 once complete (release-stored last)
};
static_assert(sizeof(Descriptor) == 64);

enum class Placement : uint32_t { host_pinned = 0, device = 1 };

// POD view of one queue, passed by value to kernels (GPU producers, the GPU service block) and
// used by CPU producers and the proxy. Pointers are valid in the process that owns the queue
// (device-accessible for GPU use: pinned host memory is mapped).
struct QueueView {
  Descriptor* ring;
  uint64_t* head;            // producers' ticket counter
  uint64_t* consumed;        // agent: tickets taken out of the ring
  uint64_t* consumed_cache;  // producers' cached copy of consumed (in the producers' memory)
  uint64_t* completed;       // agent: tickets completed, in order
  uint64_t* doorbell;        // highest ticket + 1 announced (used when doorbell_every > 0)
  uint32_t* status;          // QueueFault, 0 while healthy
  uint64_t* fault_ticket;    // the ticket that failed (valid when status != 0)
  uint32_t capacity;         // power of two
  uint32_t doorbell_every;   // 0: agent polls stamps
  uint32_t placement;        // Placement of the ring
  uint32_t queue_id;
};

}  // namespace gpucomm::proxy
