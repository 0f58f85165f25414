#pragma once
// CPU producers of a descriptor queue (protocol: descriptor.hpp). Any number of threads may post
// to one queue at once. Every wait has the limit of `HostWait::timeout_ms`, watches the queue's
// status and the job's liveness, and fails with who waited for what.
#include <cstdint>
#include <string>

#include "gpucomm/core/liveness.hpp"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

struct HostWait {
  int64_t timeout_ms = 0;                 // 0: no limit
  const JobLiveness* liveness = nullptr;  // job to watch (may be null)
  int rank = -1;                          // for messages
};

// Posts `d` (its stamp is ignored) and returns its ticket. Waits for space while the ring is
// full; raises Errc::timeout when the agent does not make room in time, and the queue's fault
// when the agent stopped.
uint64_t host_post(const QueueView& q, const Descriptor& d, const HostWait& w);
// Announces every posted entry to the agent (doorbell batching; no-op without a doorbell).
void host_flush(const QueueView& q);
// Waits until every ticket below `end` completed (acquire); `what` names the operation.
void host_wait_completed(const QueueView& q, uint64_t end, const HostWait& w, const char* what);
// Flushes, then waits for every entry posted so far.
void host_quiet(const QueueView& q, const HostWait& w);
// Raises the queue's recorded fault, if any (Errc::peer_failure for transport faults and a
// stopped agent, Errc::invalid_argument for bad descriptors). `agent_detail` is appended.
void check_queue(const QueueView& q, const char* what, const std::string& agent_detail = {});
// The error check_queue raises, from values read elsewhere (a queue whose status words the
// caller reads through gpucomm::proxy::Queue).
[[noreturn]] void raise_fault(uint32_t queue_id, QueueFault f, uint64_t ticket, Field field, const char* what,
                              const std::string& agent_detail = {});

}  // namespace gpucomm::proxy
