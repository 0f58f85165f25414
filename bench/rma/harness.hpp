#pragma once
// The measuring loop shared by the GPU benchmark programs (gpucomm-bench-rma, -proxy): CUDA events
// around a launch on the runtime's stream after a barrier, one warm-up, then `trials` samples.
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpucomm/gpucomm.hpp"
#include "results.hpp"

namespace bench {

inline void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct Harness {
  gpucomm::Runtime& rt;
  int trials;
  cudaStream_t s;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  std::vector<Result> results;

  Harness(gpucomm::Runtime& r, int t) : rt(r), trials(t), s(reinterpret_cast<cudaStream_t>(r.stream())) {
    ck(cudaEventCreate(&e0), "event");
    ck(cudaEventCreate(&e1), "event");
  }

  // Runs `launch` on the PEs in `who` (bit 0: PE 0, bit 1: PE 1) after a barrier; returns the
  // milliseconds this PE measured (0 where it does not take part).
  double timed(int who, const std::function<void()>& launch) {
    rt.barrier_all();
    float ms = 0;
    if (who & (1 << rt.rank())) {
      ck(cudaEventRecord(e0, s), "event");
      launch();
      ck(cudaGetLastError(), "launch");
      ck(cudaEventRecord(e1, s), "event");
      cudaError_t e = cudaEventSynchronize(e1);
      if (e != cudaSuccess) rt.check_device();
      ck(e, "kernel");
      ck(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
    }
    return static_cast<double>(ms);
  }

  void add(Result r) {
    if (rt.rank() == 0) {
      std::printf("  %-22s %-12s %10zu B %4d CTAs: %10.3f %s\n", r.name.c_str(), r.level.c_str(), r.bytes, r.ctas,
                  r.median(), r.unit.c_str());
      std::fflush(stdout);
    }
    results.push_back(std::move(r));
  }

  // value(ms) turns one trial's time into the reported quantity; one warm-up trial first.
  void measure(Result r, int who, const std::function<void()>& launch, const std::function<double(double)>& value) {
    timed(who, launch);
    for (int t = 0; t < trials; ++t) r.samples.push_back(value(timed(who, launch)));
    add(std::move(r));
  }
};

}  // namespace bench
