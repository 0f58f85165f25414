#pragma once
// Allocation of descriptor queues: where each word lives follows from who produces (CPU threads
// or GPU threads) and who serves (a CPU proxy thread or the GPU service block), see the table in
// docs/PROXY.md. The ring's placement is the one free choice (host memory or device memory).
#include <cstdint>
#include <memory>
#include <string>

#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

struct QueueConfig {
  Side producer = Side::cpu;
  Side agent = Side::cpu;
  Placement placement = Placement::host;  // of the ring
  uint32_t capacity = 1024;               // entries, a power of two
  uint32_t doorbell_every = 0;            // 0: the agent polls stamps
  bool trace = false;                     // per-entry timestamps (TraceRecord, GPUCOMM_PROXY_TRACE)
};

const char* placement_name(Placement p);
const char* side_name(Side s);
// Parses "host" or "device"; raises Errc::invalid_argument naming `what` otherwise.
Placement parse_placement(const std::string& text, const char* what);

// One queue's memory (RAII). Device memory is allocated on the current CUDA device.
class Queue {
 public:
  // Raises Errc::invalid_argument (naming the field) for a capacity that is not a power of two
  // in [2, 2^24], or a combination no agent serves (a CPU producer with a GPU agent).
  Queue(const QueueConfig& cfg, uint32_t id);
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  const QueueConfig& config() const { return cfg_; }
  // Addresses valid where the producers run (device addresses for GPU producers).
  const QueueView& producer_view() const { return producer_; }
  // Addresses valid where the agent runs. A CPU agent of GPU producers finds device addresses
  // in `ring` (device placement) and `results`: it reaches them through copies only.
  const QueueView& agent_view() const { return agent_; }
  // Host-readable status words (for error reports on the host, whatever the sides).
  uint32_t status() const;
  uint64_t fault_ticket() const;
  Field fault_field() const;
  // Host reads of the counters (copies for device-resident words), for tests and reports; head()
  // is the next ticket (without the GPU agent's kAgentClosed bit).
  uint64_t head() const;
  uint64_t completed() const;
  // Records from the host that no agent serves the queue any more (after the agent exited), so
  // producers fail at once instead of waiting.
  void mark_stopped();
  // The trace records (host-readable; null unless config().trace). Record t % capacity is ticket t's.
  const TraceRecord* trace() const { return trace_host_; }

 private:
  struct Block;
  QueueConfig cfg_;
  QueueView producer_{}, agent_{};
  std::unique_ptr<Block> host_, pinned_, device_;
  uint32_t* status_host_ = nullptr;
  uint64_t* fault_ticket_host_ = nullptr;
  uint32_t* fault_field_host_ = nullptr;
  uint64_t* completed_host_ = nullptr;  // null when completed is device memory
  TraceRecord* trace_host_ = nullptr;
};

}  // namespace gpucomm::proxy
