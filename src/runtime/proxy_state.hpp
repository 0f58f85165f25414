#pragma once
// What the runtime holds for the proxy layer: the transport in force, the route to each PE, the
// queues (one for the host-side operations, some for device-side ones) and the agent serving them.
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/proxy/cpu_proxy.hpp"
#include "gpucomm/proxy/queue.hpp"
#include "gpucomm/proxy/queue_host.hpp"
#include "gpucomm/proxy/service_agent.hpp"
#include "gpucomm/runtime/runtime.hpp"
#include "gpucomm/transport/transport.hpp"

namespace gpucomm {

// How this PE reaches one PE.
enum class Route { direct, host_copy, copy_engine, sm_agent, ucx };
const char* route_name(Route r);

// The transport asked for: RuntimeOptions::transport, else GPUCOMM_TRANSPORT (bad names raise).
transport::Kind requested_transport(const RuntimeOptions& opts);

namespace detail {
struct ProxyState {
  transport::Kind kind = transport::Kind::automatic;
  std::vector<Route> routes;       // per PE
  std::vector<bool> host_proxied;  // per PE: host-side operations go through the host queue
  std::unique_ptr<proxy::Queue> host_queue;
  std::vector<std::unique_ptr<proxy::Queue>> device_queues;
  proxy::QueueView* device_views = nullptr;  // device array for the handle
  std::unique_ptr<proxy::CpuProxy> cpu;
  std::unique_ptr<proxy::ServiceAgent> gpu;
  proxy::HostWait wait;
  int threads = 0;
  // What the agent recorded about its failures (appended to the errors of waiting producers).
  std::string agent_failure() const { return cpu ? cpu->failure() : gpu ? gpu->failure() : std::string(); }
  ~ProxyState();
};
}  // namespace detail

}  // namespace gpucomm
