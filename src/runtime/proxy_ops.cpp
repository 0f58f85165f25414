// Host-side operations through the proxy: each is one descriptor in the host queue, and the call
// returns once the agent completed it (so host puts, signals and atomics keep their blocking
// semantics on every path). quiet() also drains the queues of device-side operations.
#include <cuda_runtime_api.h>

#include "core/host_wait.hpp"
#include "gpu_state.hpp"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/core/error.hpp"
#include "proxy_state.hpp"

namespace gpucomm {

uint64_t Runtime::proxy_call(proxy::Descriptor d, const char* op, bool want_result) {
  detail::ProxyState& P = *proxy_;
  if (!P.host_queue)
    raise(Errc::internal, op, "no host queue although PE " + std::to_string(d.pe) + " is reached through the proxy");
  uint64_t result = 0;
  uint64_t* slot = &result;
  if (want_result) {
    // Copy-engine atomics write their result from a kernel: it must be device-accessible.
    if (gpu_) {
      slot = gpu_->result_host;
      d.local = reinterpret_cast<uint64_t>(gpu_->result_dev);
    } else {
      d.local = reinterpret_cast<uint64_t>(&result);
    }
  }
  const proxy::QueueView& q = P.host_queue->producer_view();
  try {
    const uint64_t t = proxy::host_post(q, d, P.wait);
    proxy::host_wait_completed(q, t + 1, P.wait, op);
  } catch (const Error& e) {
    // The agent's record says why (a bad descriptor, a failed transport, the job's failure).
    const std::string agent = P.agent_failure();
    if (!agent.empty() && std::string(e.what()).find(agent) == std::string::npos)
      raise(e.code(), op, e.detail() + " (proxy: " + agent + ")");
    throw;
  }
  // The agent wrote the result before it released `completed`, which the wait acquired.
  return want_result ? mem::host_load(slot, std::memory_order_relaxed) : 0;
}

void Runtime::proxy_quiet() {
  if (!proxy_) return;
  detail::ProxyState& P = *proxy_;
  if (P.host_queue) proxy::host_quiet(P.host_queue->producer_view(), P.wait);
  // Entries posted by kernels that already finished (a running kernel's later posts are its own).
  for (auto& q : P.device_queues) {
    const uint64_t head = q->head();
    uint64_t seen = 0;
    detail::host_wait(
        [&] {
          seen = q->completed();
          return seen >= head || q->status() != 0;
        },
        bootstrap_.get(), timeout_ms_,
        [&] {
          return "rank " + std::to_string(rank_) + " quiet: waiting for proxy queue " +
                 std::to_string(q->producer_view().queue_id) + " to complete " + std::to_string(head) +
                 " entries (completed " + std::to_string(seen) + ")";
        });
    if (seen < head) {
      proxy::raise_fault(q->producer_view().queue_id, static_cast<proxy::QueueFault>(q->status()), q->fault_ticket(),
                         q->fault_field(), "quiet", P.agent_failure());
    }
  }
}

}  // namespace gpucomm
