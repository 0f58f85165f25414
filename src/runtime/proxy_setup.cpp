// Set-up and teardown of the proxy layer: which path reaches each PE (GPUCOMM_TRANSPORT and
// reachability), the queues, the agents (CPU proxy threads with their executors, the GPU
// service agent), UCX for PEs that no mapping reaches, and the device handle's queue table.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "../heap/cuda_driver.hpp"
#include "../heap/device_heap.hpp"
#include "../proxy/copy_engine_executor.hpp"
#include "../proxy/host_copy_executor.hpp"
#include "../proxy/remote_executor.hpp"
#include "gpu_state.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/topology/topology.hpp"
#include "proxy_state.hpp"

namespace gpucomm {

const char* route_name(Route r) {
  switch (r) {
    case Route::direct: return "direct";
    case Route::host_copy: return "host-copy";
    case Route::copy_engine: return "copy-engine";
    case Route::sm_agent: return "sm-agent";
    case Route::ucx: return "ucx";
  }
  return "?";
}

Runtime::ProxyState::~ProxyState() {
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
    if (ps >> dash) ps >> b;
    else b = a;
    if (a < 0 || b < a || (dash && dash != '-') || !ps.eof())
      raise_arg("proxy", what, "'" + text + "' is not a CPU list like 2,3,8-11");
    for (int c = a; c <= b; ++c) out.push_back(c);
  }
  return out;
}

Route route_for(transport::Kind kind, bool reachable, bool gpu, int pe, int node, int my_node) {
  using transport::Kind;
  const std::string where = "PE " + std::to_string(pe) + " (node " + std::to_string(node) + ", this PE's node " + std::to_string(my_node) + ")";
  if (!reachable) {
    if (kind == Kind::direct)
      raise(Errc::unsupported, "GPUCOMM_TRANSPORT=direct", where + " is not mapped into this process; direct needs every PE on this node");
    if (kind == Kind::proxy_gpu)
      raise(Errc::unsupported, "GPUCOMM_TRANSPORT=proxy-gpu", where + " is not mapped on this GPU; the GPU service agent reaches mapped PEs only");
    return Route::ucx;
  }
  switch (kind) {
    case Kind::automatic:
    case Kind::direct: return Route::direct;
    case Kind::proxy_cpu: return gpu ? Route::copy_engine : Route::host_copy;
    case Kind::proxy_gpu:
      if (!gpu) raise(Errc::unsupported, "GPUCOMM_TRANSPORT=proxy-gpu", "the GPU service agent serves GPU PEs; this is a host-memory PE");
      return Route::sm_agent;
    case Kind::ucx: return Route::ucx;
  }
  return Route::direct;
}

int checked_int(const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  int64_t v = env::get_int(name, fallback);
  if (v < lo || v > hi) raise_arg("environment", name, std::to_string(v) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  return static_cast<int>(v);
}

}  // namespace

transport::Kind requested_transport(const RuntimeOptions& opts) {
  return opts.transport.empty() ? transport::kind_from_env() : transport::parse_kind(opts.transport, "RuntimeOptions::transport");
}

void Runtime::proxy_init(const RuntimeOptions& opts) {
  auto ps = std::make_unique<ProxyState>();
  const char* what = opts.transport.empty() ? "GPUCOMM_TRANSPORT" : "RuntimeOptions::transport";
  ps->kind = requested_transport(opts);
  auto kinds = bootstrap_->allgather(transport::kind_name(ps->kind));
  for (int r = 0; r < size_; ++r)
    if (kinds[static_cast<size_t>(r)] != kinds[static_cast<size_t>(rank_)])
      raise_arg("Runtime", what,
                "rank " + std::to_string(r) + " uses " + kinds[static_cast<size_t>(r)] + " and this PE " + kinds[static_cast<size_t>(rank_)] +
                    "; set it the same way on every PE");
  const bool gpu = kind_ == PeKind::gpu;
  bool host_proxy = false, device_proxy = false, need_agent = false, need_ucx = false;
  for (int r = 0; r < size_; ++r) {
    Route route = route_for(ps->kind, heap_->peer_base(r) != nullptr, gpu, r, node_of_[static_cast<size_t>(r)], node_id());
    ps->routes.push_back(route);
    // The GPU service agent serves device-side operations; host-side ones stay on the copy engine.
    const bool host = route != Route::direct && route != Route::sm_agent;
    ps->host_proxied.push_back(host);
    host_proxy = host_proxy || host;
    device_proxy = device_proxy || (gpu && route != Route::direct);
    need_agent = need_agent || route == Route::sm_agent;
    need_ucx = need_ucx || route == Route::ucx;
  }
  // UCX is collective: every PE opens it when any PE needs it, with as many workers as proxy threads.
  auto needs = bootstrap_->allgather(need_ucx ? "1" : "0");
  const bool any_ucx = std::count(needs.begin(), needs.end(), "1") > 0;
  ps->threads = checked_int("GPUCOMM_PROXY_THREADS", 1, 1, 64);
  if (any_ucx) {
    auto counts = bootstrap_->allgather(std::to_string(ps->threads));
    for (int r = 0; r < size_; ++r)
      if (counts[static_cast<size_t>(r)] != std::to_string(ps->threads))
        raise_arg("Runtime", "GPUCOMM_PROXY_THREADS",
                  "rank " + std::to_string(r) + " uses " + counts[static_cast<size_t>(r)] + " proxy threads and this PE " + std::to_string(ps->threads) +
                      "; UCX needs the same number on every PE");
  }
  const bool need_cpu = host_proxy || (device_proxy && !need_agent) || any_ucx;
  ps->wait = proxy::HostWait{timeout_ms_, bootstrap_.get(), rank_};
  proxy_ = std::move(ps);
  ProxyState& P = *proxy_;
  if (!need_cpu && !need_agent) return;

  const uint32_t depth = static_cast<uint32_t>(checked_int("GPUCOMM_PROXY_QUEUE_DEPTH", 1024, 2, 1 << 24));
  const uint32_t doorbell = static_cast<uint32_t>(checked_int("GPUCOMM_PROXY_DOORBELL", 0, 0, 1 << 24));
  const proxy::HeapGeometry geometry{size_, static_cast<int64_t>(heap_->size()), gpu ? static_cast<int64_t>(kDeviceControlBytes) : 0};
  std::vector<proxy::QueueView> cpu_views;
  uint32_t next_id = 0;
  if (host_proxy) {
    P.host_queue = std::make_unique<proxy::Queue>(proxy::QueueConfig{proxy::Side::cpu, proxy::Side::cpu, proxy::Placement::host, depth, 0}, next_id++);
    cpu_views.push_back(P.host_queue->agent_view());
  }
  if (device_proxy) {
    const int n = checked_int("GPUCOMM_PROXY_QUEUES", 32, 1, 1 << 16);
    const std::string ring = env::get_string("GPUCOMM_PROXY_RING", "auto");
    proxy::Placement placement = need_agent ? proxy::Placement::device : proxy::Placement::host;
    if (ring != "auto") placement = proxy::parse_placement(ring, "GPUCOMM_PROXY_RING");
    const proxy::Side agent = need_agent ? proxy::Side::gpu : proxy::Side::cpu;
    // A CPU reads a ring in device memory only through copies: without a doorbell in host memory
    // it would copy from every queue on every pass (seed 001 pairs GPU-memory queues with one).
    uint32_t bell = doorbell;
    if (agent == proxy::Side::cpu && placement == proxy::Placement::device && bell == 0) {
      bell = 1;
      GPUCOMM_LOG(info, "proxy: a ring in device memory served by the CPU proxy rings the doorbell on every entry");
    }
    for (int i = 0; i < n; ++i) {
      P.device_queues.push_back(std::make_unique<proxy::Queue>(proxy::QueueConfig{proxy::Side::gpu, agent, placement, depth, bell}, next_id++));
      if (!need_agent) cpu_views.push_back(P.device_queues.back()->agent_view());
    }
    if (need_agent) {
      proxy::ServiceAgentOptions o;
      o.blocks = checked_int("GPUCOMM_AGENT_BLOCKS", 1, 1, 1024);
      o.threads = checked_int("GPUCOMM_AGENT_THREADS", 256, 32, 1024);
      o.idle_us = checked_int("GPUCOMM_AGENT_IDLE_US", 500, 0, 1 << 30);
      o.timeout_ms = timeout_ms_;
      o.rank = rank_;
      o.liveness = bootstrap_.get();
      std::vector<proxy::Queue*> qs;
      for (auto& q : P.device_queues) qs.push_back(q.get());
      auto* dh = static_cast<heap::DeviceHeap*>(heap_.get());
      P.gpu = std::make_unique<proxy::ServiceAgent>(qs, dh->device_peer_bases(), geometry, o);
    }
    // The producers' table in the device handle (with the agent's wake words for the GPU agent).
    std::vector<proxy::QueueView> producer_views;
    for (auto& q : P.device_queues) producer_views.push_back(P.gpu ? P.gpu->producer_view(*q) : q->producer_view());
    heap::check_cuda(cudaMalloc(reinterpret_cast<void**>(&P.device_views), sizeof(proxy::QueueView) * producer_views.size()), "cudaMalloc",
                     "the device handle's queue table");
    heap::check_cuda(cudaMemcpy(P.device_views, producer_views.data(), sizeof(proxy::QueueView) * producer_views.size(), cudaMemcpyHostToDevice),
                     "cudaMemcpy", "the device handle's queue table");
    const std::string per = env::get_string("GPUCOMM_PROXY_QUEUE_PER", "block");
    if (per != "block" && per != "warp") raise_arg("environment", "GPUCOMM_PROXY_QUEUE_PER", "'" + per + "' is not one of block, warp");
    DeviceHandle& h = gpu_->handle;
    h.transport = static_cast<uint32_t>(P.kind);
    h.num_queues = static_cast<uint32_t>(n);
    h.queues = P.device_views;
    h.queue_per_warp = per == "warp" ? 1u : 0u;
    if (need_ucx) h.flags |= kHandleSetSignalsOnly;  // UCX over TCP has no atomics on device heaps
  }

  if (!need_cpu) return;

  // The remote transport: one instance per proxy thread (collective, in thread order).
  std::vector<std::unique_ptr<transport::Remote>> remotes;
  if (any_ucx) {
    transport::RemoteContext ctx;
    ctx.bootstrap = bootstrap_.get();
    ctx.rank = rank_;
    ctx.size = size_;
    ctx.heap_base = heap_->base() - geometry.control_bytes;
    ctx.heap_bytes = heap_->size() + static_cast<size_t>(geometry.control_bytes);
    ctx.heap_on_device = gpu;
    for (Route r : P.routes) ctx.remote_pes.push_back(r == Route::ucx);
    for (int t = 0; t < P.threads; ++t) remotes.push_back(transport::open_remote("ucx", ctx));
  }
  std::vector<char*> bases;
  for (int r = 0; r < size_; ++r) bases.push_back(heap_->peer_base(r));
  const int device = device_id_;
  auto make = [&, bases](int t) -> std::unique_ptr<proxy::Executor> {
    std::vector<std::unique_ptr<proxy::Executor>> paths;
    std::vector<int> route(static_cast<size_t>(size_), -1);
    int local = -1, remote = -1;
    for (int r = 0; r < size_; ++r) {
      Route x = P.routes[static_cast<size_t>(r)];
      if (!P.host_proxied[static_cast<size_t>(r)]) continue;  // reached directly (or by the GPU agent)
      if (x == Route::ucx) {
        if (remote < 0) {
          remote = static_cast<int>(paths.size());
          paths.push_back(std::make_unique<proxy::RemoteExecutor>(std::move(remotes[static_cast<size_t>(t)]), geometry.control_bytes));
        }
        route[static_cast<size_t>(r)] = remote;
      } else {
        if (local < 0) {
          local = static_cast<int>(paths.size());
          if (gpu)
            paths.push_back(std::make_unique<proxy::CopyEngineExecutor>(bases, device));
          else
            paths.push_back(std::make_unique<proxy::HostCopyExecutor>(bases));
        }
        route[static_cast<size_t>(r)] = local;
      }
    }
    // A thread whose remote instance no route uses still progresses it (it may be a UCX target).
    if (remote < 0 && t < static_cast<int>(remotes.size()) && remotes[static_cast<size_t>(t)])
      paths.push_back(std::make_unique<proxy::RemoteExecutor>(std::move(remotes[static_cast<size_t>(t)]), geometry.control_bytes));
    return std::make_unique<proxy::RoutingExecutor>(std::move(paths), std::move(route));
  };
  proxy::CpuProxyOptions o;
  o.threads = P.threads;
  o.timeout_ms = timeout_ms_;
  o.rank = rank_;
  o.liveness = bootstrap_.get();
  o.idle_sleep_us = checked_int("GPUCOMM_PROXY_IDLE_US", 50, 0, 1000000);
  o.device = gpu ? device_id_ : -1;
  std::string cpus = env::get_string("GPUCOMM_PROXY_CPUS", "");
  if (!cpus.empty()) {
    o.cpus = parse_cpu_list(cpus, "GPUCOMM_PROXY_CPUS");
  } else if (gpu) {
    // Near the GPU: every CPU of its NUMA node (the threads float among them).
    try {
      auto topo = topology::detect();
      for (const auto& g : topo.gpus)
        if (g.index == device_id_ && !g.cpu_affinity.empty()) o.cpu_set = parse_cpu_list(g.cpu_affinity, "GPU CPU affinity");
    } catch (const std::exception& e) {
      GPUCOMM_LOG(debug, "proxy: no CPU affinity for GPU " << device_id_ << ": " << e.what());
    }
  }
  // With UCX and no local queue (a pure UCX target) the proxy still runs to progress its workers.
  P.cpu = std::make_unique<proxy::CpuProxy>(cpu_views, geometry, make, o);
  GPUCOMM_LOG(info, "proxy: transport " << transport::kind_name(P.kind) << ", " << cpu_views.size() << " queue(s), " << P.threads
                                        << " CPU proxy thread(s)" << (any_ucx ? ", UCX" : ""));
}

void Runtime::proxy_finalize() {
  if (!proxy_) return;
  if (proxy_->gpu) proxy_->gpu->stop();
  if (proxy_->cpu) proxy_->cpu->stop();
  proxy_.reset();
}

bool Runtime::host_via_proxy(int pe) const { return proxy_ && proxy_->host_proxied[static_cast<size_t>(pe)]; }

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
