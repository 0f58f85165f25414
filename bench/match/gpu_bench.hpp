#pragma once
// The GPU half of gpucomm-bench-match (gpu_bench.cu; gpu_bench_none.cpp without CUDA).
#include <string>
#include <vector>

#include "gpucomm/matching/batch.hpp"
#include "gpucomm/matching/engine.hpp"

namespace gpucomm::bench {

// Empty when GPU engines can run here; otherwise why not.
std::string gpu_unavailable_reason();
std::string device_name();

struct Timing {
  std::vector<double> seconds;  // kernel time of each timed iteration (CUDA events)
  double median = 0;
  std::vector<matching::Outcome> outcome;  // of the last iteration
  std::vector<uint32_t> status;
};

// One warm-up launch, then iterations until `iters` or `budget_s` seconds of kernel time (at
// least 3). Every launch restores the uploaded queues first (not timed).
Timing time_engine(matching::Engine e, const std::vector<matching::Batch>& jobs, const matching::RunOptions& opt,
                   int iters, double budget_s);

struct QueueTiming {
  uint32_t warps = 0, queues = 0, ops_per_warp = 0;
  double enqueue_elems_per_s = 0, dequeue_elems_per_s = 0;
  double enqueue_latency_us = 0, dequeue_latency_us = 0;  // mean time of one warp operation
  bool verified = false;
};
// `warps` warps spread over `queues` global-memory queues; each warp enqueues ops_per_warp times
// 32 elements, then a second kernel dequeues them all 32 at a time. Medians over `iters`.
QueueTiming time_queue(uint32_t warps, uint32_t queues, uint32_t ops_per_warp, int iters);

}  // namespace gpucomm::bench
