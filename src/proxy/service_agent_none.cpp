// Builds without CUDA kernels: the GPU service agent cannot run.
#include "gpucomm/core/error.hpp"
#include "gpucomm/proxy/service_agent.hpp"

namespace gpucomm::proxy {

struct ServiceAgent::State {};

// NOLINTNEXTLINE(performance-unnecessary-value-param): the header's sink signature (service_agent.cu moves it)
ServiceAgent::ServiceAgent(std::vector<Queue*>, char* const*, const HeapGeometry&, ServiceAgentOptions) {
  raise(Errc::unsupported, "ServiceAgent", "this build has no CUDA kernels (GPUCOMM_ENABLE_CUDA=OFF)");
}
ServiceAgent::~ServiceAgent() = default;
void ServiceAgent::stop() {}
bool ServiceAgent::running() const {
  return false;
}
std::string ServiceAgent::failure() const {
  return {};
}
uint64_t ServiceAgent::executed() const {
  return 0;
}
uint64_t ServiceAgent::launches() const {
  return 0;
}
QueueView ServiceAgent::producer_view(const Queue& q) const {
  return q.producer_view();
}

}  // namespace gpucomm::proxy
