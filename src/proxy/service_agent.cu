// The GPU service agent's kernel and its host side: launches on a private stream, a waker thread
// that starts the kernel again after an idle exit when a producer asks, stop through a host-mapped
// flag, fault reports read from the queues' status words.
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/cuda_driver.hpp"
#include "core/host_wait.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/proxy/service_agent.hpp"
#include "gpucomm/proxy/service_agent_device.cuh"

namespace gpucomm::proxy {

namespace {
__global__ void service_agent_kernel(ServiceAgentParams p) {
  agent_detail::serve(p);
}

struct DeviceWords {  // device memory of the agent
  uint32_t leave;
  uint32_t reserved;
  uint64_t last_work;
  uint64_t executed;
};
}  // namespace

struct ServiceAgent::State {
  std::vector<Queue*> queues;
  ServiceAgentOptions opts;
  int device = 0;
  cudaStream_t stream = nullptr;
  QueueView* device_views = nullptr;
  uint32_t* host_words = nullptr;  // pinned, mapped: [0] stop, [1] wake
  uint32_t* wake_dev = nullptr;
  uint32_t* stop_dev = nullptr;
  DeviceWords* words = nullptr;
  ServiceAgentParams params{};
  std::thread waker;
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> launches{0};
  std::string launch_error;
  bool stopped = false;

  // Starts one instance after the previous one returned (stream order); it reopens the queues.
  cudaError_t launch() {
    cudaError_t e = cudaMemsetAsync(&words->leave, 0, sizeof(uint32_t), stream);
    if (e == cudaSuccess) {
      service_agent_kernel<<<opts.blocks, opts.threads, 0, stream>>>(params);
      e = cudaGetLastError();
    }
    if (e == cudaSuccess) launches.fetch_add(1, std::memory_order_relaxed);
    return e;
  }

  void wake_loop() {
    if (cudaSetDevice(device) != cudaSuccess) return;
    std::atomic_ref<uint32_t> wake(host_words[1]);
    while (!stopping.load(std::memory_order_acquire)) {
      if (wake.exchange(0, std::memory_order_acq_rel) == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(10));
        continue;
      }
      // The running instance (if any) leaves by itself once idle; then start a new one.
      if (cudaStreamSynchronize(stream) != cudaSuccess) return;  // a failed kernel: stop() reports it
      if (stopping.load(std::memory_order_acquire)) return;
      if (cudaError_t e = launch(); e != cudaSuccess) {
        launch_error = cudaGetErrorString(e);
        GPUCOMM_LOG(error, "GPU service agent: restart failed: " << launch_error);
        return;
      }
    }
  }
};

ServiceAgent::ServiceAgent(std::vector<Queue*> queues, char* const* device_peer_bases, const HeapGeometry& geometry,
                           ServiceAgentOptions opts)
    : state_(std::make_unique<State>()) {
  GPUCOMM_CHECK_ARG(!queues.empty(), "ServiceAgent", "queues", "is empty");
  GPUCOMM_CHECK_ARG(opts.blocks >= 1 && opts.blocks <= 1024, "ServiceAgent", "blocks",
                    std::to_string(opts.blocks) + " is outside 1..1024");
  GPUCOMM_CHECK_ARG(opts.threads >= 32 && opts.threads <= 1024 && opts.threads % 32 == 0, "ServiceAgent", "threads",
                    std::to_string(opts.threads) + " is not a multiple of 32 in 32..1024");
  GPUCOMM_CHECK_ARG(opts.idle_us >= 0, "ServiceAgent", "idle_us", "is negative");
  State& s = *state_;
  s.queues = std::move(queues);
  s.opts = opts;
  check_cuda(cudaGetDevice(&s.device), "cudaGetDevice", "service agent");
  std::vector<QueueView> views;
  for (Queue* q : s.queues) {
    GPUCOMM_CHECK_ARG(q->config().agent == Side::gpu && q->config().producer == Side::gpu, "ServiceAgent", "queues",
                      "holds a queue that is not for GPU producers and a GPU agent");
    views.push_back(q->agent_view());
  }
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&s.device_views), sizeof(QueueView) * views.size()), "cudaMalloc",
             "agent queue table");
  check_cuda(cudaMemcpy(s.device_views, views.data(), sizeof(QueueView) * views.size(), cudaMemcpyHostToDevice),
             "cudaMemcpy", "agent queue table");
  void* p = nullptr;
  check_cuda(cudaHostAlloc(&p, 2 * sizeof(uint32_t), cudaHostAllocMapped), "cudaHostAlloc",
             "agent stop and wake words");
  s.host_words = static_cast<uint32_t*>(p);
  s.host_words[0] = s.host_words[1] = 0;
  check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&s.stop_dev), p, 0), "cudaHostGetDevicePointer",
             "agent stop word");
  s.wake_dev = s.stop_dev + 1;
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&s.words), sizeof(DeviceWords)), "cudaMalloc", "agent words");
  check_cuda(cudaMemset(s.words, 0, sizeof(DeviceWords)), "cudaMemset", "agent words");
  check_cuda(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "agent stream");
  s.params = ServiceAgentParams{s.device_views,
                                static_cast<int>(views.size()),
                                opts.rank,
                                device_peer_bases,
                                geometry,
                                s.stop_dev,
                                &s.words->executed,
                                &s.words->leave,
                                &s.words->last_work,
                                static_cast<uint64_t>(opts.idle_us) * 1000u};
  check_cuda(s.launch(), "service agent launch",
             std::to_string(opts.blocks) + " blocks of " + std::to_string(opts.threads));
  s.waker = std::thread([&s] { s.wake_loop(); });
}

ServiceAgent::~ServiceAgent() {
  try {
    stop();
  } catch (const std::exception& e) {
    GPUCOMM_LOG(error, "service agent stop: " << e.what());
  }
  State& s = *state_;
  if (s.waker.joinable()) s.waker.join();
  if (s.stream) (void)cudaStreamDestroy(s.stream);
  if (s.device_views) (void)cudaFree(s.device_views);
  if (s.words) (void)cudaFree(s.words);
  if (s.host_words) (void)cudaFreeHost(s.host_words);
}

QueueView ServiceAgent::producer_view(const Queue& q) const {
  QueueView v = q.producer_view();
  v.agent_wake = state_->wake_dev;
  return v;
}

void ServiceAgent::stop() {
  State& s = *state_;
  if (s.stopped) return;
  s.stopped = true;
  s.stopping.store(true, std::memory_order_release);
  std::atomic_ref<uint32_t>(s.host_words[0]).store(1, std::memory_order_release);
  if (s.waker.joinable()) s.waker.join();
  cudaError_t e = cudaSuccess;
  detail::host_wait(
      [&] {
        e = cudaStreamQuery(s.stream);
        return e != cudaErrorNotReady;
      },
      s.opts.liveness, s.opts.timeout_ms > 0 ? s.opts.timeout_ms + 5000 : 0,
      [&] {
        return "rank " + std::to_string(s.opts.rank) + " stopping the GPU service agent: its warps did not return";
      });
  for (Queue* q : s.queues) q->mark_stopped();
  check_cuda(e, "service agent", "the agent kernel failed");
  if (!s.launch_error.empty())
    raise(Errc::cuda, "service agent", "a restart after an idle exit failed: " + s.launch_error);
}

bool ServiceAgent::running() const {
  return !state_->stopped;
}

std::string ServiceAgent::failure() const {
  std::string out;
  for (Queue* q : state_->queues) {
    auto f = static_cast<QueueFault>(q->status());
    if (f == QueueFault::none || f == QueueFault::agent_stopped) continue;
    if (!out.empty()) out += "; ";
    out += "queue " + std::to_string(q->producer_view().queue_id) + " ticket " + std::to_string(q->fault_ticket()) +
           ": " + fault_name(f) + " (field " + field_name(q->fault_field()) + ")";
  }
  return out;
}

uint64_t ServiceAgent::executed() const {
  unsigned long long v = 0;
  check_cuda(cudaMemcpyAsync(&v, &state_->words->executed, sizeof v, cudaMemcpyDeviceToHost, cudaStreamPerThread),
             "cudaMemcpyAsync", "agent counter");
  check_cuda(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize", "agent counter");
  return v;
}

uint64_t ServiceAgent::launches() const {
  return state_->launches.load(std::memory_order_relaxed);
}

}  // namespace gpucomm::proxy
