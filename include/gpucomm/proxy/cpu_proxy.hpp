#pragma once
// The CPU proxy: threads that serve descriptor queues (GPU or CPU producers) and execute the
// entries through executors (CPU copies into mapped host heaps, the copy engine for GPU heaps,
// UCX for PEs on other nodes). Each thread owns a fixed subset of the queues (queue i goes to
// thread i % threads), polls their next stamps, completes entries late and publishes completion
// in ticket order. It never blocks on an operation; it backs off (spin, yield, short sleeps)
// only when it has nothing to do. A bad descriptor fails its queue with a record of ticket and
// field; a failed job or a failed transport stops the proxy and fails every queue, so no
// producer waits forever.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/core/liveness.hpp"
#include "gpucomm/proxy/check.hpp"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

class Executor;

struct CpuProxyOptions {
  int threads = 1;
  std::vector<int> cpus;                  // thread t is pinned to cpus[t % size]; empty: see cpu_set
  std::vector<int> cpu_set;               // with no `cpus`: every thread may run on these (empty: anywhere)
  int64_t timeout_ms = 0;                 // limit for draining at stop()
  int rank = -1;                          // for messages
  const JobLiveness* liveness = nullptr;  // the job; its failure stops the proxy
  int64_t idle_sleep_us = 50;             // longest sleep of an idle thread (latency after idling)
  int device = -1;                        // CUDA device the threads make current (-1: none)
};

struct CpuProxyStats {
  uint64_t executed = 0;    // entries completed
  double cpu_seconds = 0;   // CPU time of the proxy threads
  double wall_seconds = 0;  // since start
};

class CpuProxy {
 public:
  // Makes thread t's executor; called on the constructing thread, in order t = 0, 1, ...
  using ExecutorFactory = std::function<std::unique_ptr<Executor>(int thread)>;
  // `queues` are agent views (Queue::agent_view()); queue i is served by thread i % threads.
  // Starts `threads` threads (a thread without queues still progresses its executor).
  CpuProxy(std::vector<QueueView> queues, const HeapGeometry& geometry, const ExecutorFactory& make,
           CpuProxyOptions opts);
  ~CpuProxy();  // stop()
  CpuProxy(const CpuProxy&) = delete;
  CpuProxy& operator=(const CpuProxy&) = delete;

  // Finishes the entries already posted (bounded by timeout_ms), then joins the threads. Queues
  // with entries left unfinished get the agent_stopped fault.
  void stop();
  bool running() const;
  // What failed (bad descriptor: queue, ticket, field, reason; transport errors), empty if nothing.
  std::string failure() const;
  CpuProxyStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucomm::proxy
