// The GPU service agent's kernel and its host side: launch on a private stream, stop through a
// host-mapped flag, fault reports read from the queues' status words.
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>

#include "../heap/cuda_driver.hpp"
#include "../runtime/host_wait.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/proxy/service_agent.hpp"
#include "gpucomm/proxy/service_agent_device.cuh"

namespace gpucomm::proxy {

namespace {
__global__ void service_agent_kernel(ServiceAgentParams p) { agent_detail::serve(p); }
}  // namespace

struct ServiceAgent::State {
  std::vector<Queue*> queues;
  ServiceAgentOptions opts;
  cudaStream_t stream = nullptr;
  QueueView* device_views = nullptr;
  uint32_t* stop_flag = nullptr;  // pinned, mapped
  unsigned long long* executed = nullptr;
  bool stopped = false;
};

ServiceAgent::ServiceAgent(std::vector<Queue*> queues, char* const* device_peer_bases, const HeapGeometry& geometry, ServiceAgentOptions opts)
    : state_(std::make_unique<State>()) {
  GPUCOMM_CHECK_ARG(!queues.empty(), "ServiceAgent", "queues", "is empty");
  GPUCOMM_CHECK_ARG(opts.blocks >= 1 && opts.blocks <= 1024, "ServiceAgent", "blocks", std::to_string(opts.blocks) + " is outside 1..1024");
  GPUCOMM_CHECK_ARG(opts.threads >= 32 && opts.threads <= 1024 && opts.threads % 32 == 0, "ServiceAgent", "threads",
                    std::to_string(opts.threads) + " is not a multiple of 32 in 32..1024");
  State& s = *state_;
  s.queues = std::move(queues);
  s.opts = opts;
  std::vector<QueueView> views;
  for (Queue* q : s.queues) {
    GPUCOMM_CHECK_ARG(q->config().agent == Side::gpu && q->config().producer == Side::gpu, "ServiceAgent", "queues",
                      "holds a queue that is not for GPU producers and a GPU agent");
    views.push_back(q->agent_view());
  }
  heap::check_cuda(cudaMalloc(reinterpret_cast<void**>(&s.device_views), sizeof(QueueView) * views.size()), "cudaMalloc", "agent queue table");
  heap::check_cuda(cudaMemcpy(s.device_views, views.data(), sizeof(QueueView) * views.size(), cudaMemcpyHostToDevice), "cudaMemcpy",
                   "agent queue table");
  void* p = nullptr;
  heap::check_cuda(cudaHostAlloc(&p, sizeof(uint32_t), cudaHostAllocMapped), "cudaHostAlloc", "agent stop flag");
  s.stop_flag = static_cast<uint32_t*>(p);
  *s.stop_flag = 0;
  uint32_t* stop_dev = nullptr;
  heap::check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&stop_dev), p, 0), "cudaHostGetDevicePointer", "agent stop flag");
  heap::check_cuda(cudaMalloc(reinterpret_cast<void**>(&s.executed), sizeof(unsigned long long)), "cudaMalloc", "agent counter");
  heap::check_cuda(cudaMemset(s.executed, 0, sizeof(unsigned long long)), "cudaMemset", "agent counter");
  heap::check_cuda(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "agent stream");
  ServiceAgentParams params{s.device_views, static_cast<int>(views.size()), device_peer_bases, geometry, stop_dev, s.executed};
  service_agent_kernel<<<opts.blocks, opts.threads, 0, s.stream>>>(params);
  heap::check_cuda(cudaGetLastError(), "service agent launch", std::to_string(opts.blocks) + " blocks of " + std::to_string(opts.threads));
}

ServiceAgent::~ServiceAgent() {
  try {
    stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[gpucomm] service agent stop: %s\n", e.what());
  }
  State& s = *state_;
  if (s.stream) (void)cudaStreamDestroy(s.stream);
  if (s.device_views) (void)cudaFree(s.device_views);
  if (s.executed) (void)cudaFree(s.executed);
  if (s.stop_flag) (void)cudaFreeHost(s.stop_flag);
}

void ServiceAgent::stop() {
  State& s = *state_;
  if (s.stopped) return;
  s.stopped = true;
  std::atomic_ref<uint32_t>(*s.stop_flag).store(1, std::memory_order_release);
  cudaError_t e = cudaSuccess;
  detail::host_wait(
      [&] {
        e = cudaStreamQuery(s.stream);
        return e != cudaErrorNotReady;
      },
      s.opts.liveness, s.opts.timeout_ms > 0 ? s.opts.timeout_ms + 5000 : 0,
      [&] { return "rank " + std::to_string(s.opts.rank) + " stopping the GPU service agent: its warps did not return"; });
  for (Queue* q : s.queues) q->mark_stopped();
  heap::check_cuda(e, "service agent", "the agent kernel failed");
}

bool ServiceAgent::running() const { return !state_->stopped && cudaStreamQuery(state_->stream) == cudaErrorNotReady; }

std::string ServiceAgent::failure() const {
  std::string out;
  for (Queue* q : state_->queues) {
    auto f = static_cast<QueueFault>(q->status());
    if (f == QueueFault::none || f == QueueFault::agent_stopped) continue;
    if (!out.empty()) out += "; ";
    out += "queue " + std::to_string(q->producer_view().queue_id) + " ticket " + std::to_string(q->fault_ticket()) + ": " + fault_name(f) +
           " (field " + field_name(q->fault_field()) + ")";
  }
  return out;
}

uint64_t ServiceAgent::executed() const {
  unsigned long long v = 0;
  heap::check_cuda(cudaMemcpy(&v, state_->executed, sizeof v, cudaMemcpyDeviceToHost), "cudaMemcpy", "agent counter");
  return v;
}

}  // namespace gpucomm::proxy
