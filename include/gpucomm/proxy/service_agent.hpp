#pragma once
// The GPU service agent: persistent blocks, each on a reserved SM, that serve descriptor queues
// for NVLink-reachable peers with SM copies (a command-processor stand-in). Host side; the
// kernel body is in service_agent_device.cuh.
#include <memory>
#include <string>

#include "gpucomm/device/handle.hpp"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

struct ServiceAgentOptions {
  int blocks = 1;     // agent blocks; block b serves queues b, b + blocks, ...
  int threads = 512;  // threads per block (one warp per queue in service at a time)
};

class ServiceAgent {
 public:
  // Starts the agent on its own non-blocking stream of the current device. `queues` is a device
  // array of `num_queues` views (the same array the PE's DeviceHandle points to).
  ServiceAgent(const DeviceHandle& handle, const QueueView* queues, int num_queues, ServiceAgentOptions opts = {});
  ~ServiceAgent();  // stop()
  ServiceAgent(const ServiceAgent&) = delete;
  ServiceAgent& operator=(const ServiceAgent&) = delete;
  // Asks the blocks to finish the entries already posted and exit; waits (GPUCOMM_TIMEOUT).
  void stop();
  bool running() const;
  // A fault the agent recorded (bad descriptor: queue, ticket, field), empty when none.
  std::string failure() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpucomm::proxy
