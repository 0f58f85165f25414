// Set-up and teardown of the proxy layer: which path reaches each PE (GPUCOMM_TRANSPORT and
// reachability), the queues, the agents (CPU proxy threads with their executors, the GPU
// service agent), UCX for PEs that no mapping reaches, and the device handle's queue table.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/cuda_driver.hpp"
#include "gpu_state.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/topology/topology.hpp"
#include "heap/device_heap.hpp"
#include "proxy/copy_engine_executor.hpp"
#include "proxy/host_copy_executor.hpp"
#include "proxy/remote_executor.hpp"
#include "proxy_state.hpp"

namespace gpucomm {

const char* route_name(Route r) {
  switch (r) {
    case Route::direct:
      return "direct";
    case Route::host_copy:
      return "host-copy";
    case Route::copy_engine:
      return "copy-engine";
    case Route::sm_agent:
      return "sm-agent";
    case Route::ucx:
      return "ucx";
  }
  return "?";
}

detail::ProxyState::~ProxyState() {
  gpu.reset();
  cpu.reset();
  device_queues.clear();
  host_queue.reset();
  if (device_views) (void)cudaFree(device_views);
}

namespace {

// "2,3,8-11" -> {2, 3, 8, 9, 10, 11}; raises naming `what` on bad text.
std::vector<int> parse_cpu_list(const std::string& text, const char* what) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    int a = -1, b = -1;
    char dash = 0;
    std::stringstream ps(part);
    ps >> a;
    if (ps >> dash) {
      ps >> b;
    } else {
      b = a;
    }
    if (a < 0 || b < a || (dash && dash != '-') || !ps.eof())
      raise_arg("proxy", what, "'" + text + "' is not a CPU list like 2,3,8-11");
    for (int c = a; c <= b; ++c) out.push_back(c);
  }
  return out;
}

Route route_for(transport::Kind kind, bool reachable, bool gpu, int pe, int node, int my_node) {
  using transport::Kind;
  const std::string where = "PE " + std::to_string(pe) + " (node " + std::to_string(node) + ", this PE's node " +
                            std::to_string(my_node) + ")";
  if (!reachable) {
    if (kind == Kind::direct) {
      raise(Errc::unsupported, "GPUCOMM_TRANSPORT=direct",
            where + " is not mapped into this process; direct needs every PE on this node");
    }
    if (kind == Kind::proxy_gpu) {
      raise(Errc::unsupported, "GPUCOMM_TRANSPORT=proxy-gpu",
            where + " is not mapped on this GPU; the GPU service agent reaches mapped PEs only");
    }
    return Route::ucx;
  }
  switch (kind) {
    case Kind::automatic:
    case Kind::direct:
      return Route::direct;
    case Kind::proxy_cpu:
      return gpu ? Route::copy_engine : Route::host_copy;
    case Kind::proxy_gpu:
      if (!gpu) {
        raise(Errc::unsupported, "GPUCOMM_TRANSPORT=proxy-gpu",
              "the GPU service agent serves GPU PEs; this is a host-memory PE");
      }
      return Route::sm_agent;
    case Kind::ucx:
      return Route::ucx;
  }
  return Route::direct;
}

int checked_int(const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  int64_t v = env::get_int(name, fallback);
  if (v < lo || v > hi)
    raise_arg("environment", name, std::to_string(v) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  return static_cast<int>(v);
}

}  // namespace

transport::Kind requested_transport(const RuntimeOptions& opts) {
  return opts.transport.empty() ? transport::kind_from_env()
                                : transport::parse_kind(opts.transport, "RuntimeOptions::transport");
}

namespace {

// The proxy layer's set-up, step by step. Every step that involves other PEs is collective and
// runs in the same order on every PE.
class ProxyBuilder {
 public:
  ProxyBuilder(detail::ProxyState& P, bootstrap::Bootstrap& b, heap::SymmetricHeap& heap, DeviceHandle* handle,
               int rank, int size, const std::vector<int>& node_of, int device, int64_t timeout_ms)
      : P_(P),
        b_(b),
        heap_(heap),
        handle_(handle),
        rank_(rank),
        size_(size),
        node_of_(node_of),
        device_(device),
        timeout_ms_(timeout_ms),
        gpu_(handle != nullptr) {}

  // 1. The transport: the same on every PE (collective).
  void agree_on_transport(const RuntimeOptions& opts) {
    const char* what = opts.transport.empty() ? "GPUCOMM_TRANSPORT" : "RuntimeOptions::transport";
    P_.kind = requested_transport(opts);
    if (auto d = b_.agree(transport::kind_name(P_.kind))) {
      raise_arg("Runtime", what,
                "rank " + std::to_string(d.rank) + " uses " + d.value + " and this PE " +
                    transport::kind_name(P_.kind) + "; set it the same way on every PE");
    }
  }

  // 2. A route per PE, and what they need: a CPU proxy, the GPU agent, UCX (collective: UCX is
  // opened on every PE when any PE needs it).
  void plan_routes() {
    for (int r = 0; r < size_; ++r) {
      Route route = route_for(P_.kind, heap_.peer_base(r) != nullptr, gpu_, r, node_of_[static_cast<size_t>(r)],
                              node_of_[static_cast<size_t>(rank_)]);
      P_.routes.push_back(route);
      // The GPU service agent serves device-side operations; host-side ones stay on the copy engine.
      const bool host = route != Route::direct && route != Route::sm_agent;
      P_.host_proxied.push_back(host);
      host_proxy_ = host_proxy_ || host;
      device_proxy_ = device_proxy_ || (gpu_ && route != Route::direct);
      need_agent_ = need_agent_ || route == Route::sm_agent;
      need_ucx_ = need_ucx_ || route == Route::ucx;
    }
    auto needs = b_.allgather(need_ucx_ ? "1" : "0");
    any_ucx_ = std::count(needs.begin(), needs.end(), "1") > 0;
    need_cpu_ = host_proxy_ || (device_proxy_ && !need_agent_) || any_ucx_;
  }

  // 3. Proxy threads: UCX needs as many workers (one per thread) on every PE (collective).
  void agree_on_threads() {
    P_.threads = checked_int("GPUCOMM_PROXY_THREADS", 1, 1, 64);
    if (!any_ucx_) return;
    if (auto d = b_.agree(std::to_string(P_.threads))) {
      raise_arg("Runtime", "GPUCOMM_PROXY_THREADS",
                "rank " + std::to_string(d.rank) + " uses " + d.value + " proxy threads and this PE " +
                    std::to_string(P_.threads) + "; UCX needs the same number on every PE");
    }
  }

  bool needs_agents() const { return need_cpu_ || need_agent_; }

  // 4. Queues: one for host-side operations, GPUCOMM_PROXY_QUEUES for device-side ones.
  void create_queues() {
    depth_ = static_cast<uint32_t>(checked_int("GPUCOMM_PROXY_QUEUE_DEPTH", 1024, 2, 1 << 24));
    trace_ = checked_int("GPUCOMM_PROXY_TRACE", 0, 0, 1) == 1;
    geometry_ = proxy::HeapGeometry{size_, static_cast<int64_t>(heap_.size()),
                                    gpu_ ? static_cast<int64_t>(kDeviceControlBytes) : 0};
    uint32_t next_id = 0;
    if (host_proxy_) {
      P_.host_queue = std::make_unique<proxy::Queue>(
          proxy::QueueConfig{proxy::Side::cpu, proxy::Side::cpu, proxy::Placement::host, depth_, 0, trace_}, next_id++);
      cpu_views_.push_back(P_.host_queue->agent_view());
    }
    if (!device_proxy_) return;
    const int n = checked_int("GPUCOMM_PROXY_QUEUES", 32, 1, 1 << 16);
    const std::string ring = env::get_string("GPUCOMM_PROXY_RING", "auto");
    proxy::Placement placement = need_agent_ ? proxy::Placement::device : proxy::Placement::host;
    if (ring != "auto") placement = proxy::parse_placement(ring, "GPUCOMM_PROXY_RING");
    const proxy::Side agent = need_agent_ ? proxy::Side::gpu : proxy::Side::cpu;
    // A CPU reads a ring in device memory only through copies: without a doorbell in host memory
    // it would copy from every queue on every pass (GPUrdma pairs GPU-memory queues with one).
    uint32_t bell = static_cast<uint32_t>(checked_int("GPUCOMM_PROXY_DOORBELL", 0, 0, 1 << 24));
    if (agent == proxy::Side::cpu && placement == proxy::Placement::device && bell == 0) {
      bell = 1;
      GPUCOMM_LOG(info, "proxy: a ring in device memory served by the CPU proxy rings the doorbell on every entry");
    }
    for (int i = 0; i < n; ++i) {
      P_.device_queues.push_back(std::make_unique<proxy::Queue>(
          proxy::QueueConfig{proxy::Side::gpu, agent, placement, depth_, bell, trace_}, next_id++));
      if (!need_agent_) cpu_views_.push_back(P_.device_queues.back()->agent_view());
    }
  }

  // 5. The GPU service agent, when some route needs it.
  void start_gpu_agent() {
    if (!need_agent_) return;
    proxy::ServiceAgentOptions o;
    o.blocks = checked_int("GPUCOMM_AGENT_BLOCKS", 1, 1, 1024);
    o.threads = checked_int("GPUCOMM_AGENT_THREADS", 256, 32, 1024);
    o.idle_us = checked_int("GPUCOMM_AGENT_IDLE_US", 500, 0, 1 << 30);
    o.timeout_ms = timeout_ms_;
    o.rank = rank_;
    o.liveness = &b_;
    std::vector<proxy::Queue*> qs;
    qs.reserve(P_.device_queues.size());
    for (auto& q : P_.device_queues) qs.push_back(q.get());
    auto& dh = static_cast<heap::DeviceHeap&>(heap_);
    P_.gpu = std::make_unique<proxy::ServiceAgent>(qs, dh.device_peer_bases(), geometry_, o);
  }

  // 6. The producers' queue table in the device handle (with the agent's wake words for the GPU agent).
  void fill_device_handle() {
    if (!device_proxy_) return;
    std::vector<proxy::QueueView> producer_views;
    producer_views.reserve(P_.device_queues.size());
    for (auto& q : P_.device_queues) producer_views.push_back(P_.gpu ? P_.gpu->producer_view(*q) : q->producer_view());
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&P_.device_views), sizeof(proxy::QueueView) * producer_views.size()),
               "cudaMalloc", "the device handle's queue table");
    check_cuda(cudaMemcpy(P_.device_views, producer_views.data(), sizeof(proxy::QueueView) * producer_views.size(),
                          cudaMemcpyHostToDevice),
               "cudaMemcpy", "the device handle's queue table");
    const std::string per = env::get_string("GPUCOMM_PROXY_QUEUE_PER", "block");
    if (per != "block" && per != "warp")
      raise_arg("environment", "GPUCOMM_PROXY_QUEUE_PER", "'" + per + "' is not one of block, warp");
    DeviceHandle& h = *handle_;
    h.transport = P_.kind;
    h.num_queues = static_cast<uint32_t>(producer_views.size());
    h.queues = P_.device_views;
    h.queue_per_warp = per == "warp" ? 1u : 0u;
    if (need_ucx_) h.flags |= kHandleSetSignalsOnly;  // UCX over TCP has no atomics on device heaps
  }

  // 7. The CPU proxy threads and their executors (opening UCX is collective, in thread order).
  void start_cpu_proxy() {
    if (!need_cpu_) return;
    std::vector<std::unique_ptr<transport::Remote>> remotes = open_remotes();
    std::vector<char*> bases;
    bases.reserve(size_);
    for (int r = 0; r < size_; ++r) bases.push_back(heap_.peer_base(r));
    // CpuProxy calls the factory once per thread, inside its constructor.
    auto make = [&](int t) { return make_executor(t, bases, remotes); };
    proxy::CpuProxyOptions o;
    o.threads = P_.threads;
    o.timeout_ms = timeout_ms_;
    o.rank = rank_;
    o.liveness = &b_;
    o.idle_sleep_us = checked_int("GPUCOMM_PROXY_IDLE_US", 50, 0, 1000000);
    o.device = gpu_ ? device_ : -1;
    choose_cpus(o);
    // With UCX and no local queue (a pure UCX target) the proxy still runs to progress its workers.
    P_.cpu = std::make_unique<proxy::CpuProxy>(cpu_views_, geometry_, make, o);
    GPUCOMM_LOG(info, "proxy: transport " << transport::kind_name(P_.kind) << ", " << cpu_views_.size() << " queue(s), "
                                          << P_.threads << " CPU proxy thread(s)" << (any_ucx_ ? ", UCX" : ""));
  }

 private:
  std::vector<std::unique_ptr<transport::Remote>> open_remotes() {
    std::vector<std::unique_ptr<transport::Remote>> remotes;
    if (!any_ucx_) return remotes;
    transport::RemoteContext ctx;
    ctx.bootstrap = &b_;
    ctx.rank = rank_;
    ctx.size = size_;
    ctx.heap_base = heap_.base() - geometry_.control_bytes;
    ctx.heap_bytes = heap_.size() + static_cast<size_t>(geometry_.control_bytes);
    ctx.heap_on_device = gpu_;
    for (Route r : P_.routes) ctx.remote_pes.push_back(r == Route::ucx);
    for (int t = 0; t < P_.threads; ++t) remotes.push_back(transport::open_remote("ucx", ctx));
    return remotes;
  }

  // Proxy thread t's executor: one path for the mapped PEs (host copies or the copy engine), one
  // for the PEs UCX reaches.
  std::unique_ptr<proxy::Executor> make_executor(int t, const std::vector<char*>& bases,
                                                 std::vector<std::unique_ptr<transport::Remote>>& remotes) {
    std::vector<std::unique_ptr<proxy::Executor>> paths;
    std::vector<int> route(static_cast<size_t>(size_), -1);
    int local = -1, remote = -1;
    for (int r = 0; r < size_; ++r) {
      const Route x = P_.routes[static_cast<size_t>(r)];
      if (!P_.host_proxied[static_cast<size_t>(r)]) continue;  // reached directly (or by the GPU agent)
      if (x == Route::ucx) {
        if (remote < 0) {
          remote = static_cast<int>(paths.size());
          paths.push_back(std::make_unique<proxy::RemoteExecutor>(std::move(remotes[static_cast<size_t>(t)]),
                                                                  geometry_.control_bytes));
        }
        route[static_cast<size_t>(r)] = remote;
      } else {
        if (local < 0) {
          local = static_cast<int>(paths.size());
          if (gpu_) {
            proxy::CopyEngineOptions ce;
            ce.memops = checked_int("GPUCOMM_PROXY_MEMOPS", 1, 0, 1) == 1;
            ce.memop_max = static_cast<uint32_t>(checked_int("GPUCOMM_PROXY_MEMOP_MAX", 64, 0, 1 << 20));
            ce.timeout_ms = timeout_ms_;
            ce.self = rank_;
            paths.push_back(std::make_unique<proxy::CopyEngineExecutor>(bases, device_, ce));
          } else {
            paths.push_back(std::make_unique<proxy::HostCopyExecutor>(bases));
          }
        }
        route[static_cast<size_t>(r)] = local;
      }
    }
    // A thread whose remote instance no route uses still progresses it (it may be a UCX target).
    if (remote < 0 && t < static_cast<int>(remotes.size()) && remotes[static_cast<size_t>(t)]) {
      paths.push_back(
          std::make_unique<proxy::RemoteExecutor>(std::move(remotes[static_cast<size_t>(t)]), geometry_.control_bytes));
    }
    return std::make_unique<proxy::RoutingExecutor>(std::move(paths), std::move(route));
  }

  // GPUCOMM_PROXY_CPUS, else every CPU of the GPU's NUMA node (the threads float among them).
  void choose_cpus(proxy::CpuProxyOptions& o) const {
    std::string cpus = env::get_string("GPUCOMM_PROXY_CPUS", "");
    if (!cpus.empty()) {
      o.cpus = parse_cpu_list(cpus, "GPUCOMM_PROXY_CPUS");
      return;
    }
    if (!gpu_) return;
    try {
      auto topo = topology::detect();
      for (const auto& g : topo.gpus) {
        if (g.index == device_ && !g.cpu_affinity.empty())
          o.cpu_set = parse_cpu_list(g.cpu_affinity, "GPU CPU affinity");
      }
    } catch (const std::exception& e) {
      GPUCOMM_LOG(debug, "proxy: no CPU affinity for GPU " << device_ << ": " << e.what());
    }
  }

  detail::ProxyState& P_;
  bootstrap::Bootstrap& b_;
  heap::SymmetricHeap& heap_;
  DeviceHandle* handle_;  // null on host-memory PEs
  int rank_, size_;
  const std::vector<int>& node_of_;
  int device_;
  int64_t timeout_ms_;
  bool gpu_;
  bool host_proxy_ = false, device_proxy_ = false, need_agent_ = false, need_ucx_ = false, any_ucx_ = false,
       need_cpu_ = false;
  uint32_t depth_ = 0;
  bool trace_ = false;
  proxy::HeapGeometry geometry_{};
  std::vector<proxy::QueueView> cpu_views_;  // the queues the CPU proxy serves
};

}  // namespace

void Runtime::proxy_init(const RuntimeOptions& opts) {
  proxy_ = std::make_unique<detail::ProxyState>();
  proxy_->wait = proxy::HostWait{timeout_ms_, bootstrap_.get(), rank_};
  ProxyBuilder build(*proxy_, *bootstrap_, *heap_, gpu_ ? &gpu_->handle : nullptr, rank_, size_, node_of_, device_id_,
                     timeout_ms_);
  build.agree_on_transport(opts);
  build.plan_routes();
  build.agree_on_threads();
  if (!build.needs_agents()) return;
  build.create_queues();
  build.start_gpu_agent();
  build.fill_device_handle();
  build.start_cpu_proxy();
}

void Runtime::proxy_finalize() {
  if (!proxy_) return;
  if (proxy_->gpu) proxy_->gpu->stop();
  if (proxy_->cpu) proxy_->cpu->stop();
  proxy_.reset();
}

bool Runtime::host_via_proxy(int pe) const {
  return proxy_ && proxy_->host_proxied[static_cast<size_t>(pe)];
}

TransportInfo Runtime::transport_info() const {
  TransportInfo info;
  if (!proxy_) return info;
  info.kind = transport::kind_name(proxy_->kind);
  for (Route r : proxy_->routes) info.routes.push_back(route_name(r));
  info.agent = proxy_->gpu ? "gpu-agent" : proxy_->cpu ? "cpu-proxy" : "none";
  info.proxy_threads = proxy_->cpu ? proxy_->threads : 0;
  info.device_queues = static_cast<int>(proxy_->device_queues.size());
  if (proxy_->cpu) {
    auto s = proxy_->cpu->stats();
    info.executed = s.executed;
    info.proxy_cpu_seconds = s.cpu_seconds;
  }
  if (proxy_->gpu) info.executed = proxy_->gpu->executed();
  return info;
}

}  // namespace gpucomm
