#pragma once
// Ping-pong between every pair of PEs: one-way latency = round-trip time / 2.
#include <cstddef>
#include <string>
#include <vector>

#include "gpucomm/gpucomm.hpp"

namespace gpucomm::bench {

struct PingPongConfig {
  std::vector<size_t> sizes;  // payload bytes (0 = flag only)
  int iters = 1000;           // round trips per sample
  int samples = 7;            // the median of these is reported
};

struct PingPongResult {
  int a = 0, b = 0;  // the pair (a initiates)
  size_t bytes = 0;
  std::vector<double> one_way_us;  // one value per sample
  double median_us = 0;
};

double median(std::vector<double> v);
// Collective over the world; rank a of each pair returns results for its pairs.
std::vector<PingPongResult> host_pingpong(Runtime& rt, const PingPongConfig& cfg);
std::vector<PingPongResult> gpu_pingpong(Runtime& rt, const PingPongConfig& cfg);

}  // namespace gpucomm::bench
