#pragma once
// What the sections of gpucomm-bench-patterns share: the results (medians of repeated trials),
// CUDA checks, device buffers, host timing of launch calls and event timing of device work.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "gpucomm/gpucomm.hpp"

namespace bench {

inline void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpucomm-bench-patterns: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One measured quantity: what (section, name), the configuration, and the median of samples.
struct Result {
  std::string section;  // overhead, bandwidth, faces, mcl
  std::string name;     // e.g. "plan_eager", "loop", "fused", "memcpy3d"
  std::string config;   // e.g. "h2d", "d2d 3 links", "x-face 64x64x64"
  size_t bytes = 0;     // bytes moved per launch
  int transfers = 1;
  std::string unit;  // us (host time per launch, or device time), GB/s
  std::vector<double> samples;
  double value() const { return median(samples); }
};

struct Context {
  gpucomm::Runtime& rt;
  cudaStream_t stream;
  bool quick;
  std::vector<Result> results;
  int step = 0, steps = 0;

  void progress(const std::string& what) {
    std::fprintf(stderr, "[%d/%d] %s\n", ++step, steps, what.c_str());
    std::fflush(stderr);
  }
  Result& add(Result r) {
    results.push_back(std::move(r));
    return results.back();
  }
  const Result* find(const std::string& section, const std::string& name, const std::string& config,
                     size_t bytes = 0) const {
    for (const auto& r : results)
      if (r.section == section && r.name == name && r.config == config && (bytes == 0 || r.bytes == bytes)) return &r;
    return nullptr;
  }
  void sync() { cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }
};

// Host microseconds per call of `launch` (batches of `batch` calls, synchronized between batches).
inline std::vector<double> host_us(Context& c, const std::function<void()>& launch, int batch, int trials) {
  for (int i = 0; i < batch; ++i) launch();  // warm-up
  c.sync();
  std::vector<double> out;
  for (int t = 0; t < trials; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) launch();
    const auto t1 = std::chrono::steady_clock::now();
    c.sync();
    out.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
  }
  return out;
}

// Device microseconds per call of `launch`, from events around `reps` calls.
inline std::vector<double> device_us(Context& c, const std::function<void()>& launch, int reps, int trials) {
  cudaEvent_t a = nullptr, b = nullptr;
  cuda(cudaEventCreate(&a), "cudaEventCreate");
  cuda(cudaEventCreate(&b), "cudaEventCreate");
  for (int i = 0; i < 2; ++i) launch();  // warm-up
  c.sync();
  std::vector<double> out;
  for (int t = 0; t < trials; ++t) {
    cuda(cudaEventRecord(a, c.stream), "cudaEventRecord");
    for (int i = 0; i < reps; ++i) launch();
    cuda(cudaEventRecord(b, c.stream), "cudaEventRecord");
    cuda(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    cuda(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    out.push_back(1e3 * ms / reps);
  }
  cuda(cudaEventDestroy(a), "cudaEventDestroy");
  cuda(cudaEventDestroy(b), "cudaEventDestroy");
  return out;
}

inline std::vector<double> to_gbps(const std::vector<double>& us, double bytes) {
  std::vector<double> out;
  out.reserve(us.size());
  for (double u : us) out.push_back(u > 0 ? bytes / (u * 1e3) : 0);
  return out;
}

inline void* device_alloc(size_t n) {
  void* p = nullptr;
  cuda(cudaMalloc(&p, n), "cudaMalloc");
  cuda(cudaMemset(p, 1, n), "cudaMemset");
  return p;
}

inline void* pinned_alloc(size_t n) {
  void* p = nullptr;
  cuda(cudaMallocHost(&p, n), "cudaMallocHost");
  std::fill(static_cast<char*>(p), static_cast<char*>(p) + n, 2);
  return p;
}

void run_overhead(Context& c);
void run_bandwidth(Context& c);
void run_faces(Context& c);
void run_mcl(Context& c);

}  // namespace bench
