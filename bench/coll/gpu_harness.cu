// GPU PEs: CUDA events on the runtime's stream; graph mode captures the calls once and replays.
#include <cuda_runtime.h>

#include <chrono>

#include "gpucomm/collectives/collectives_device.cuh"
#include "gpucomm/collectives/session_device.cuh"
#include "gpucomm/core/cuda_check.hpp"
#include "harness.hpp"

namespace gpucomm::bench {

namespace {

__global__ void empty_kernel() {}

// The in-kernel calls, `iters` back to back by one block (kernel_samples_us).
__global__ void barrier_loop(const __grid_constant__ DeviceHandle h, const __grid_constant__ coll::CollHandle ch,
                             coll::Algorithm a, int iters) {
  for (int i = 0; i < iters; ++i) coll::device::barrier(coop::Block{}, h, ch, a);
}
__global__ void allreduce_loop(const __grid_constant__ DeviceHandle h, const __grid_constant__ coll::CollHandle ch,
                               const float* send, float* recv, size_t count, coll::Algorithm a, int iters) {
  for (int i = 0; i < iters; ++i) coll::device::allreduce(coop::Block{}, h, ch, send, recv, count, coll::RedOp::sum, a);
}
// The same calls in one session (session_device.cuh): the lane's words stay in registers.
__global__ void barrier_session_loop(const __grid_constant__ DeviceHandle h,
                                     const __grid_constant__ coll::CollHandle ch, coll::Algorithm a, int iters) {
  coll::device::Session s(coop::Block{}, h, ch);
  for (int i = 0; i < iters; ++i) s.barrier(a);
}
__global__ void allreduce_session_loop(const __grid_constant__ DeviceHandle h,
                                       const __grid_constant__ coll::CollHandle ch, const float* send, float* recv,
                                       size_t count, coll::Algorithm a, int iters) {
  coll::device::Session s(coop::Block{}, h, ch);
  for (int i = 0; i < iters; ++i) s.allreduce(send, recv, count, coll::RedOp::sum, a);
}

class GpuHarness final : public Harness {
 public:
  explicit GpuHarness(Runtime& rt) : rt_(rt), stream_(reinterpret_cast<cudaStream_t>(rt.stream())) {
    GPUCOMM_CUDA_CHECK(cudaEventCreate(&start_));
    GPUCOMM_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~GpuHarness() override {
    (void)cudaEventDestroy(start_);
    (void)cudaEventDestroy(stop_);
  }
  GpuHarness(const GpuHarness&) = delete;
  GpuHarness& operator=(const GpuHarness&) = delete;

  bool gpu() const override { return true; }
  void* alloc(size_t bytes) override {
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc", "benchmark buffer");
    return p;
  }
  void release(void* p) override { (void)cudaFree(p); }
  void upload(void* dst, const void* src, size_t bytes) override {
    check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy", "benchmark input");
  }
  void download(void* dst, const void* src, size_t bytes) override {
    check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy", "benchmark output");
  }
  void run_once(const CollCall& call) override {
    call(rt_.stream());
    sync("a collective");
  }

  std::vector<double> samples_us(const CollCall& call, int iters, int samples, bool graph) override {
    cudaGraphExec_t exec = nullptr;
    if (graph) exec = capture(call, iters);
    std::vector<double> out;
    for (int s = 0; s <= samples; ++s) {
      rt_.barrier_all();
      GPUCOMM_CUDA_CHECK(cudaEventRecord(start_, stream_));
      if (exec) {
        GPUCOMM_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
      } else {
        for (int i = 0; i < iters; ++i) call(rt_.stream());
      }
      GPUCOMM_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      sync("the timed collectives");
      float ms = 0;
      GPUCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      if (s > 0) out.push_back(1000.0 * ms / iters);  // sample 0 warms up
    }
    if (exec) GPUCOMM_CUDA_CHECK(cudaGraphExecDestroy(exec));
    return out;
  }

  double enqueue_us(const CollCall& call, int iters, int samples) override {
    return host_time_us([&] { call(rt_.stream()); }, iters, samples, "the enqueued collectives");
  }
  std::vector<double> kernel_samples_us(coll::Collectives& coll, size_t bytes, coll::Algorithm a, int iters,
                                        int samples, unsigned threads, bool session, long long* wrong) override {
    const DeviceHandle h = rt_.device_handle();
    const coll::CollHandle ch = coll.handle(rt_.world());
    const size_t count = bytes / sizeof(float);
    float* send = nullptr;
    float* recv = nullptr;
    if (count) {
      send = static_cast<float*>(alloc(count * sizeof(float)));
      recv = static_cast<float*>(alloc(count * sizeof(float)));
      const std::vector<float> ones(count, 1.0f);
      upload(send, ones.data(), count * sizeof(float));
    }
    std::vector<double> out;
    for (int s = 0; s <= samples; ++s) {
      rt_.barrier_all();
      GPUCOMM_CUDA_CHECK(cudaEventRecord(start_, stream_));
      if (count && session) {
        allreduce_session_loop<<<1, threads, 0, stream_>>>(h, ch, send, recv, count, a, iters);
      } else if (count) {
        allreduce_loop<<<1, threads, 0, stream_>>>(h, ch, send, recv, count, a, iters);
      } else if (session) {
        barrier_session_loop<<<1, threads, 0, stream_>>>(h, ch, a, iters);
      } else {
        barrier_loop<<<1, threads, 0, stream_>>>(h, ch, a, iters);
      }
      GPUCOMM_CUDA_CHECK_LAUNCH("the in-kernel collectives");
      GPUCOMM_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      sync("the in-kernel collectives");
      float ms = 0;
      GPUCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      if (s > 0) out.push_back(1000.0 * ms / iters);
    }
    *wrong = -1;
    if (count) {
      std::vector<float> got(count);
      download(got.data(), recv, count * sizeof(float));
      *wrong = 0;
      for (float v : got) *wrong += v != static_cast<float>(rt_.size());
      release(send);
      release(recv);
    }
    return out;
  }
  double launch_floor_us(int iters, int samples) override {
    return host_time_us(
        [&] {
          empty_kernel<<<1, 32, 0, stream_>>>();
          GPUCOMM_CUDA_CHECK_LAUNCH("empty_kernel");
        },
        iters, samples, "the empty kernels");
  }

 private:
  // Waits for the stream; a failed collective raises its own record (team, operation, sequence).
  void sync(const char* what) {
    cudaError_t e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) rt_.check_device();
    check_cuda(e, "cudaStreamSynchronize", what);
  }
  cudaGraphExec_t capture(const CollCall& call, int iters) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    GPUCOMM_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < iters; ++i) call(rt_.stream());
    GPUCOMM_CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
    GPUCOMM_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    GPUCOMM_CUDA_CHECK(cudaGraphDestroy(g));
    return exec;
  }
  // Host microseconds per `enqueue` (median of samples), the stream drained between samples.
  template <class F>
  double host_time_us(F&& enqueue, int iters, int samples, const char* what) {
    std::vector<double> out;
    for (int s = 0; s <= samples; ++s) {
      rt_.barrier_all();
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) enqueue();
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      sync(what);
      if (s > 0) out.push_back(us / iters);
    }
    return median(out);
  }

  Runtime& rt_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace

std::unique_ptr<Harness> make_gpu_harness(Runtime& rt) {
  return std::make_unique<GpuHarness>(rt);
}

}  // namespace gpucomm::bench
