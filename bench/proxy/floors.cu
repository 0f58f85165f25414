// Floors of the proxy paths, measured with plain CUDA (see floors.hpp).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "floors.hpp"
#include "gpucomm/base/ordering_device.cuh"

namespace proxy_bench {

namespace {

using namespace gpucomm;
using bench::Result;

constexpr uint64_t kGiveUpNs = 2000000000ull;  // a side that sees nothing for 2 s stops; the trial fails

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

uint64_t host_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Spins until *word >= v (acquire at scope S); false after kGiveUpNs.
template <mem::Scope S>
__device__ bool wait_at_least(const uint64_t* word, uint64_t v) {
  const uint64_t start = mem::globaltimer();
  for (uint32_t n = 1; mem::load<S>(word, mem::acquire) < v; ++n)
    if ((n & 1023u) == 0 && mem::globaltimer() - start > kGiveUpNs) return false;
  return true;
}

// Block 0 and block 1 (thread 0 each) pass a counter back and forth through device memory.
__global__ void k_block_pingpong(uint64_t* flags, int iters, uint32_t* failed) {
  if (threadIdx.x != 0) return;
  uint64_t* ping = flags;
  uint64_t* pong = flags + 16;  // another 128-byte line
  for (int i = 1; i <= iters; ++i) {
    const auto v = static_cast<uint64_t>(i);
    if (blockIdx.x == 0) mem::store<mem::kDevice>(ping, v, mem::release);
    if (!wait_at_least<mem::kDevice>(blockIdx.x == 0 ? pong : ping, v)) {
      mem::store<mem::kDevice>(failed, 1u, mem::relaxed);
      return;
    }
    if (blockIdx.x == 1) mem::store<mem::kDevice>(pong, v, mem::release);
  }
}

// Waits for the CPU's counter in `word` (pinned or device memory), notes when it saw it, answers
// through pinned memory.
__global__ void k_answer(const uint64_t* word, uint64_t* answer, uint64_t* seen_at, int iters, uint32_t* failed) {
  for (int i = 1; i <= iters; ++i) {
    const auto v = static_cast<uint64_t>(i);
    if (!wait_at_least<mem::kSystem>(word, v)) {
      mem::store<mem::kSystem>(failed, 1u, mem::relaxed);
      return;
    }
    if (seen_at) seen_at[i - 1] = mem::globaltimer();
    mem::store<mem::kSystem>(answer, v, mem::release);
  }
}

template <class T>
T* pinned(size_t n) {
  void* p = nullptr;
  ck(cudaHostAlloc(&p, n * sizeof(T), cudaHostAllocMapped), "cudaHostAlloc");
  std::memset(p, 0, n * sizeof(T));
  return static_cast<T*>(p);
}

template <class F>
F driver_fn(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<F>(p);
}

// Everything one measurement needs, released in the destructor.
struct Rig {
  cudaStream_t gpu_side = nullptr, cpu_side = nullptr;
  uint64_t* flags = nullptr;    // device: block ping-pong, watched word
  uint64_t* seen_at = nullptr;  // device: %globaltimer per iteration
  uint32_t* failed = nullptr;   // device
  uint64_t* to_gpu = nullptr;   // pinned
  uint64_t* to_cpu = nullptr;   // pinned
  uint64_t* values = nullptr;   // pinned: cudaMemcpyAsync sources
  int max_iters;
  explicit Rig(int iters) : max_iters(iters) {
    ck(cudaStreamCreateWithFlags(&gpu_side, cudaStreamNonBlocking), "cudaStreamCreate");
    ck(cudaStreamCreateWithFlags(&cpu_side, cudaStreamNonBlocking), "cudaStreamCreate");
    ck(cudaMalloc(&flags, 64 * sizeof(uint64_t)), "cudaMalloc");
    ck(cudaMalloc(&seen_at, static_cast<size_t>(iters) * sizeof(uint64_t)), "cudaMalloc");
    ck(cudaMalloc(&failed, sizeof(uint32_t)), "cudaMalloc");
    to_gpu = pinned<uint64_t>(16);
    to_cpu = pinned<uint64_t>(16);
    values = pinned<uint64_t>(static_cast<size_t>(iters) + 1);
    for (int i = 0; i <= iters; ++i) values[i] = static_cast<uint64_t>(i);
  }
  ~Rig() {
    (void)cudaStreamSynchronize(gpu_side);
    (void)cudaStreamSynchronize(cpu_side);
    (void)cudaStreamDestroy(gpu_side);
    (void)cudaStreamDestroy(cpu_side);
    (void)cudaFree(flags);
    (void)cudaFree(seen_at);
    (void)cudaFree(failed);
    (void)cudaFreeHost(to_gpu);
    (void)cudaFreeHost(to_cpu);
    (void)cudaFreeHost(values);
  }
  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;
  void reset() {
    ck(cudaMemset(flags, 0, 64 * sizeof(uint64_t)), "cudaMemset");
    ck(cudaMemset(failed, 0, sizeof(uint32_t)), "cudaMemset");
    std::atomic_ref<uint64_t>(*to_gpu).store(0);
    std::atomic_ref<uint64_t>(*to_cpu).store(0);
  }
  void check_failed(const char* what) {
    ck(cudaStreamSynchronize(gpu_side), what);
    uint32_t f = 0;
    ck(cudaMemcpy(&f, failed, sizeof f, cudaMemcpyDeviceToHost), what);
    if (f) throw std::runtime_error(std::string(what) + ": the GPU side saw nothing for 2 s");
  }
  // The CPU side waits for the GPU's answer v; on a timeout it releases the kernel and throws.
  void await(uint64_t v, const char* what) {
    const uint64_t start = host_ns();
    while (std::atomic_ref<uint64_t>(*to_cpu).load(std::memory_order_acquire) < v) {
      if (host_ns() - start > kGiveUpNs) {
        std::atomic_ref<uint64_t>(*to_gpu).store(~uint64_t(0), std::memory_order_release);
        (void)cudaStreamSynchronize(gpu_side);
        throw std::runtime_error(std::string(what) + ": no answer from the GPU for 2 s");
      }
    }
  }
};

double block_flag_rt_us(Rig& rig, int iters) {
  rig.reset();
  cudaEvent_t e0, e1;
  ck(cudaEventCreate(&e0), "event");
  ck(cudaEventCreate(&e1), "event");
  ck(cudaEventRecord(e0, rig.gpu_side), "event");
  k_block_pingpong<<<2, 32, 0, rig.gpu_side>>>(rig.flags, iters, rig.failed);
  ck(cudaGetLastError(), "launch");
  ck(cudaEventRecord(e1, rig.gpu_side), "event");
  rig.check_failed("flag round trip between blocks");
  float ms = 0;
  ck(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
  (void)cudaEventDestroy(e0);
  (void)cudaEventDestroy(e1);
  return static_cast<double>(ms) * 1e3 / iters;
}

// GPU-CPU ping-pong through pinned memory: per-iteration round trips (ns), and the clock offset.
std::vector<double> cpu_pingpong(Rig& rig, int iters, ClockSync* sync) {
  rig.reset();
  uint64_t *to_gpu_dev = nullptr, *to_cpu_dev = nullptr;
  ck(cudaHostGetDevicePointer(reinterpret_cast<void**>(&to_gpu_dev), rig.to_gpu, 0), "cudaHostGetDevicePointer");
  ck(cudaHostGetDevicePointer(reinterpret_cast<void**>(&to_cpu_dev), rig.to_cpu, 0), "cudaHostGetDevicePointer");
  k_answer<<<1, 1, 0, rig.gpu_side>>>(to_gpu_dev, to_cpu_dev, rig.seen_at, iters, rig.failed);
  ck(cudaGetLastError(), "launch");
  std::vector<uint64_t> t0(static_cast<size_t>(iters)), t1(static_cast<size_t>(iters));
  for (int i = 1; i <= iters; ++i) {
    t0[static_cast<size_t>(i - 1)] = host_ns();
    std::atomic_ref<uint64_t>(*rig.to_gpu).store(static_cast<uint64_t>(i), std::memory_order_release);
    rig.await(static_cast<uint64_t>(i), "GPU-CPU flag round trip");
    t1[static_cast<size_t>(i - 1)] = host_ns();
  }
  rig.check_failed("GPU-CPU flag round trip");
  std::vector<uint64_t> g(static_cast<size_t>(iters));
  ck(cudaMemcpy(g.data(), rig.seen_at, g.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::vector<double> rt;
  const size_t warm = std::min<size_t>(10, g.size() / 4);
  size_t best = warm;
  for (size_t i = warm; i < g.size(); ++i) {
    rt.push_back(static_cast<double>(t1[i] - t0[i]));
    if (t1[i] - t0[i] < t1[best] - t0[best]) best = i;
  }
  if (sync && best < g.size()) {
    sync->gpu_minus_host_ns =
        static_cast<double>(g[best]) - 0.5 * (static_cast<double>(t0[best]) + static_cast<double>(t1[best]));
    sync->uncertainty_ns = 0.5 * static_cast<double>(t1[best] - t0[best]);
    sync->valid = true;
  }
  return rt;
}

enum class WriteForm { memcpy, write_value, batch_memop };
const char* form_name(WriteForm f) {
  return f == WriteForm::memcpy ? "memcpy" : f == WriteForm::write_value ? "write_value64" : "batch_memop";
}

using WriteValueFn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
using BatchFn = CUresult (*)(CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int);

// The CPU writes i into a device word; a GPU thread polling it answers through pinned memory.
// Returns the median round trip (us) and the median time inside the CUDA call (us).
std::pair<double, double> cpu_write(Rig& rig, int iters, WriteForm form, WriteValueFn wv, BatchFn batch) {
  rig.reset();
  uint64_t* word = rig.flags + 32;
  uint64_t* to_cpu_dev = nullptr;
  ck(cudaHostGetDevicePointer(reinterpret_cast<void**>(&to_cpu_dev), rig.to_cpu, 0), "cudaHostGetDevicePointer");
  k_answer<<<1, 1, 0, rig.gpu_side>>>(word, to_cpu_dev, nullptr, iters, rig.failed);
  ck(cudaGetLastError(), "launch");
  std::vector<double> trip, call;
  const auto cs = reinterpret_cast<CUstream>(rig.cpu_side);
  for (int i = 1; i <= iters; ++i) {
    const auto v = static_cast<uint64_t>(i);
    const uint64_t t0 = host_ns();
    if (form == WriteForm::memcpy) {
      ck(cudaMemcpyAsync(word, &rig.values[i], sizeof(uint64_t), cudaMemcpyHostToDevice, rig.cpu_side),
         "cudaMemcpyAsync");
    } else if (form == WriteForm::write_value) {
      if (wv(cs, reinterpret_cast<CUdeviceptr>(word), v, 0) != CUDA_SUCCESS)
        throw std::runtime_error("cuStreamWriteValue64 failed");
    } else {
      CUstreamBatchMemOpParams op{};
      op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
      op.writeValue.address = reinterpret_cast<CUdeviceptr>(word);
      op.writeValue.value64 = v;
      if (batch(cs, 1, &op, 0) != CUDA_SUCCESS) throw std::runtime_error("cuStreamBatchMemOp failed");
    }
    const uint64_t t_call = host_ns();
    rig.await(v, "CPU-issued write seen by a GPU thread");
    const uint64_t t1 = host_ns();
    if (i > 10) {
      trip.push_back(static_cast<double>(t1 - t0) * 1e-3);
      call.push_back(static_cast<double>(t_call - t0) * 1e-3);
    }
  }
  rig.check_failed("CPU-issued write seen by a GPU thread");
  ck(cudaStreamSynchronize(rig.cpu_side), "cudaStreamSynchronize");
  return {median(trip), median(call)};
}

}  // namespace

ClockSync calibrate_clocks() {
  Rig rig(400);
  ClockSync sync;
  cpu_pingpong(rig, 400, &sync);
  return sync;
}

ClockSync measure_floors(int trials, bool quick, std::vector<Result>& out) {
  const int iters = quick ? 300 : 1000;
  Rig rig(iters);
  ClockSync sync;
  Result blocks{"flag_rt_blocks", "device", 8, 2, "us", {}};
  Result cpu_rt{"gpu_cpu_flag_rt", "pinned", 8, 1, "us", {}};
  Result one_way{"gpu_cpu_flag_one_way", "pinned", 8, 1, "us", {}};
  Result floor{"cpu_proxy_floor", "min", 8, 1, "us", {}};
  const auto wv = driver_fn<WriteValueFn>("cuStreamWriteValue64");
  const auto batch = driver_fn<BatchFn>("cuStreamBatchMemOp");
  std::vector<WriteForm> forms{WriteForm::memcpy};
  if (wv) forms.push_back(WriteForm::write_value);
  if (batch) forms.push_back(WriteForm::batch_memop);
  std::vector<Result> trips, calls;
  for (WriteForm f : forms) {
    trips.push_back(Result{"cpu_write_to_gpu", form_name(f), 8, 1, "us", {}});
    calls.push_back(Result{"cpu_write_call", form_name(f), 8, 1, "us", {}});
  }
  block_flag_rt_us(rig, 100);  // warm-up
  for (int t = 0; t < trials; ++t) {
    blocks.samples.push_back(block_flag_rt_us(rig, iters * 4));
    const double rt = median(cpu_pingpong(rig, iters, t == 0 ? &sync : nullptr)) * 1e-3;
    cpu_rt.samples.push_back(rt);
    one_way.samples.push_back(rt / 2);
    double best = 0;
    for (size_t i = 0; i < forms.size(); ++i) {
      const auto [trip, call] = cpu_write(rig, iters, forms[i], wv, batch);
      trips[i].samples.push_back(trip);
      calls[i].samples.push_back(call);
      best = i == 0 ? trip : std::min(best, trip);
    }
    floor.samples.push_back(best);
  }
  out.push_back(std::move(blocks));
  out.push_back(std::move(cpu_rt));
  out.push_back(std::move(one_way));
  for (auto& r : trips) out.push_back(std::move(r));
  for (auto& r : calls) out.push_back(std::move(r));
  out.push_back(std::move(floor));
  return sync;
}

}  // namespace proxy_bench
