#pragma once
// The GPU service agent: a persistent kernel on its own stream that serves the descriptor queues
// of GPU producers with SM copies into NVLink-reachable peers (a command-processor stand-in, seed
// 003). Host side; the loop is in service_agent_device.cuh.
//
// While it runs it keeps `blocks` blocks resident: calls that wait for the whole device
// (cudaDeviceSynchronize, and cudaFree, which synchronizes implicitly) wait for it too, so stop()
// it first (Runtime::finalize does).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/proxy/check.hpp"
#include "gpucomm/proxy/queue.hpp"

namespace gpucomm::bootstrap { class Bootstrap; }

namespace gpucomm::proxy {

struct ServiceAgentOptions {
  int blocks = 1;             // agent blocks
  int threads = 256;          // threads per block: warp w of all warps serves queues w, w + warps, ...
  int64_t timeout_ms = 0;     // limit for stop()
  int rank = -1;              // for messages
  const bootstrap::Bootstrap* liveness = nullptr;
};

class ServiceAgent {
 public:
  // Starts the agent on the current device. `queues` must have agent == Side::gpu.
  // `device_peer_bases`: device array [geometry.num_pes] of the peers' user parts mapped here.
  ServiceAgent(std::vector<Queue*> queues, char* const* device_peer_bases, const HeapGeometry& geometry, ServiceAgentOptions opts = {});
  ~ServiceAgent();  // stop()
  ServiceAgent(const ServiceAgent&) = delete;
  ServiceAgent& operator=(const ServiceAgent&) = delete;
  // Asks the warps to finish what is posted and return; waits (timeout_ms). Queues then refuse
  // new entries (agent_stopped).
  void stop();
  bool running() const;
  // The faults the agent recorded (queue, ticket, fault, field), empty when none.
  std::string failure() const;
  uint64_t executed() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpucomm::proxy
