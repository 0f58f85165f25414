#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "gpucomm/core/error.hpp"
#include "harness.hpp"

namespace gpucomm::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

namespace {

// Host-memory PEs: the collectives run on the calling thread, so the wall clock is the time.
class HostHarness final : public Harness {
 public:
  explicit HostHarness(Runtime& rt) : rt_(rt) {}
  bool gpu() const override { return false; }
  void* alloc(size_t bytes) override {
    void* p = std::aligned_alloc(256, std::max<size_t>(256, (bytes + 255) / 256 * 256));
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void run_once(const CollCall& call) override { call(nullptr); }
  std::vector<double> samples_us(const CollCall& call, int iters, int samples, bool /*graph*/) override {
    std::vector<double> out;
    for (int s = 0; s <= samples; ++s) {
      rt_.barrier_all();
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) call(nullptr);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (s > 0) out.push_back(us / iters);  // sample 0 warms up
    }
    return out;
  }
  double enqueue_us(const CollCall& /*call*/, int /*iters*/, int /*samples*/) override { return 0; }
  double launch_floor_us(int /*iters*/, int /*samples*/) override { return 0; }
  std::vector<double> kernel_samples_us(coll::Collectives& /*coll*/, size_t /*bytes*/, coll::Algorithm /*a*/,
                                        int /*iters*/, int /*samples*/, unsigned /*threads*/, bool /*session*/,
                                        long long* /*wrong*/) override {
    return {};
  }

 private:
  Runtime& rt_;
};

}  // namespace

std::unique_ptr<Harness> make_host_harness(Runtime& rt) {
  return std::make_unique<HostHarness>(rt);
}

#ifndef GPUCOMM_BENCH_COLL_GPU
std::unique_ptr<Harness> make_gpu_harness(Runtime& /*rt*/) {
  raise(Errc::unsupported, "gpucomm-bench-coll", "built without CUDA kernels; run with GPUCOMM_DEVICE=host");
}
#endif

}  // namespace gpucomm::bench
