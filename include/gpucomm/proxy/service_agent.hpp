#pragma once
// The GPU service agent: a persistent kernel on its own stream that serves the descriptor queues
// of GPU producers with SM copies into NVLink-reachable peers (a command-processor stand-in, seed
// 003). Host side; the loop is in service_agent_device.cuh.
//
// While it serves it keeps `blocks` blocks resident. After `idle_us` without work it leaves, so
// device-wide synchronizations (cudaDeviceSynchronize, cudaFree) wait at most that long for it;
// a producer that posts to a queue whose agent left wakes the host's waker thread, which starts
// the kernel again (a few tens of microseconds on that post).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/core/liveness.hpp"
#include "gpucomm/proxy/check.hpp"
#include "gpucomm/proxy/queue.hpp"

namespace gpucomm::proxy {

struct ServiceAgentOptions {
  int blocks = 1;          // agent blocks
  int threads = 256;       // threads per block: warp w of all warps serves queues w, w + warps, ...
  int64_t idle_us = 500;   // leave after this long without work (0: never leave)
  int64_t timeout_ms = 0;  // limit for stop()
  int rank = -1;           // this PE (its heap is on this GPU: device-scope ordering suffices) and for messages
  const JobLiveness* liveness = nullptr;
};

class ServiceAgent {
 public:
  // Starts the agent on the current device. `queues` must have agent == Side::gpu.
  // `device_peer_bases`: device array [geometry.num_pes] of the peers' user parts mapped here.
  ServiceAgent(std::vector<Queue*> queues, char* const* device_peer_bases, const HeapGeometry& geometry,
               ServiceAgentOptions opts = {});
  ~ServiceAgent();  // stop()
  ServiceAgent(const ServiceAgent&) = delete;
  ServiceAgent& operator=(const ServiceAgent&) = delete;
  // Fills in the agent's wake word of a producer view (agent_wake), so that producers can restart
  // the agent after an idle exit. Use the result in the producers' table.
  QueueView producer_view(const Queue& q) const;
  // Asks the warps to finish what is posted and return; waits (timeout_ms). Queues then refuse
  // new entries (agent_stopped).
  void stop();
  bool running() const;
  // The faults the agent recorded (queue, ticket, fault, field), empty when none.
  std::string failure() const;
  uint64_t executed() const;
  uint64_t launches() const;  // kernel starts so far (1 + restarts after idle exits)

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpucomm::proxy
