#include <algorithm>
#include <vector>

#include "gpu_bench.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/matching/warp_queue_device.cuh"

namespace gpucomm::bench {
namespace gm = gpucomm::matching;

namespace {
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Events {
  cudaEvent_t start, stop;
  Events() {
    GPUCOMM_CUDA_CHECK(cudaEventCreate(&start));
    GPUCOMM_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~Events() {
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
  }
  double seconds() const {
    GPUCOMM_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    GPUCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1e-3;
  }
};

using Queue = gm::WarpQueue<uint32_t, gm::QueueScope::device>;

// Each warp: ops enqueues of 32 elements into queue (warp % queues); lane 0 sums the time of its
// operations (globaltimer) into latency_ns.
__global__ void enqueue_kernel(Queue* queues, uint32_t nq, uint32_t ops, unsigned long long* latency_ns,
                               unsigned int* failures) {
  const uint32_t w = blockIdx.x * (blockDim.x / 32) + gpucomm::coop::warp_id();
  const Queue q = queues[w % nq];
  unsigned long long spent = 0;
  for (uint32_t i = 0; i < ops; ++i) {
    const unsigned long long t0 = gm::detail::now_ns();
    if (!gm::enqueue(gpucomm::coop::Warp{}, q, (w << 12) ^ i, true)) {
      if (gpucomm::coop::lane_id() == 0) atomicAdd(failures, 1u);
      break;
    }
    spent += gm::detail::now_ns() - t0;
  }
  if (gpucomm::coop::lane_id() == 0) atomicAdd(latency_ns, spent);
}

// Each warp: ops dequeues of up to 32 elements; lane 0 adds the time and the elements it got
// (checked against what was enqueued).
__global__ void dequeue_kernel(Queue* queues, uint32_t nq, uint32_t ops, unsigned long long* latency_ns,
                               unsigned long long* received) {
  const uint32_t w = blockIdx.x * (blockDim.x / 32) + gpucomm::coop::warp_id();
  const Queue q = queues[w % nq];
  unsigned long long spent = 0, got = 0;
  for (uint32_t i = 0; i < ops; ++i) {
    uint32_t item;
    const unsigned long long t0 = gm::detail::now_ns();
    const uint32_t n = gm::try_dequeue(gpucomm::coop::Warp{}, q, item, 32);
    spent += gm::detail::now_ns() - t0;
    got += n;
  }
  if (gpucomm::coop::lane_id() == 0) {
    atomicAdd(latency_ns, spent);
    atomicAdd(received, got);
  }
}
}  // namespace

std::string gpu_unavailable_reason() {
  if (!gm::gpu_available()) return "no CUDA device found";
  return {};
}

std::string device_name() {
  return gm::gpu_name();
}

Timing time_engine(gm::Engine e, const std::vector<gm::Batch>& jobs, const gm::RunOptions& opt, int iters,
                   double budget_s) {
  Timing t;
  gm::DeviceBatchSet set(jobs);
  cudaStream_t s;
  GPUCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Events ev;
  set.run(e, s, opt);  // warm-up
  double spent = 0;
  for (int i = 0; i < std::max(iters, 3) && (i < 3 || spent < budget_s); ++i) {
    set.restore(s);
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev.start, s));
    set.run(e, s, opt);
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev.stop, s));
    const double sec = ev.seconds();
    t.seconds.push_back(sec);
    spent += sec;
  }
  t.outcome = set.download(s, &t.status);
  GPUCOMM_CUDA_CHECK(cudaStreamDestroy(s));
  t.median = median_of(t.seconds);
  return t;
}

QueueTiming time_queue(uint32_t warps, uint32_t nq, uint32_t ops, int iters) {
  QueueTiming r;
  r.warps = warps;
  r.queues = nq;
  r.ops_per_warp = ops;
  const uint64_t per_queue = (uint64_t{warps} + nq - 1) / nq * ops * 32;
  uint32_t cap = 32;
  while (cap < per_queue) cap <<= 1;
  std::vector<Queue> hq(nq);
  uint32_t* slots;
  unsigned long long *stamps, *words;
  gm::QueueControl* control;
  Queue* dq;
  unsigned int* failures;
  GPUCOMM_CUDA_CHECK(cudaMalloc(&slots, size_t{cap} * nq * sizeof(uint32_t)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&stamps, size_t{cap} * nq * sizeof(unsigned long long)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&control, nq * sizeof(gm::QueueControl)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&dq, nq * sizeof(Queue)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&words, 3 * sizeof(unsigned long long)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&failures, sizeof(unsigned int)));
  for (uint32_t i = 0; i < nq; ++i)
    hq[i] = Queue{slots + size_t{i} * cap, stamps + size_t{i} * cap, control + i, cap, 10ull * 1000 * 1000 * 1000};
  GPUCOMM_CUDA_CHECK(cudaMemcpy(dq, hq.data(), nq * sizeof(Queue), cudaMemcpyHostToDevice));
  const uint32_t threads = 256, blocks = (warps * 32 + threads - 1) / threads;
  std::vector<double> enq, deq, enq_lat, deq_lat;
  bool ok = true;
  Events ev;
  for (int it = 0; it < iters + 1; ++it) {  // iteration 0 warms up
    GPUCOMM_CUDA_CHECK(cudaMemset(stamps, 0, size_t{cap} * nq * sizeof(unsigned long long)));
    GPUCOMM_CUDA_CHECK(cudaMemset(control, 0, nq * sizeof(gm::QueueControl)));
    GPUCOMM_CUDA_CHECK(cudaMemset(words, 0, 3 * sizeof(unsigned long long)));
    GPUCOMM_CUDA_CHECK(cudaMemset(failures, 0, sizeof(unsigned int)));
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev.start));
    enqueue_kernel<<<blocks, threads>>>(dq, nq, ops, words, failures);
    GPUCOMM_CUDA_CHECK_LAUNCH("enqueue_kernel");
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev.stop));
    const double te = ev.seconds();
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev.start));
    dequeue_kernel<<<blocks, threads>>>(dq, nq, ops, words + 1, words + 2);
    GPUCOMM_CUDA_CHECK_LAUNCH("dequeue_kernel");
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev.stop));
    const double td = ev.seconds();
    unsigned long long h[3];
    unsigned int f = 0;
    GPUCOMM_CUDA_CHECK(cudaMemcpy(h, words, sizeof h, cudaMemcpyDeviceToHost));
    GPUCOMM_CUDA_CHECK(cudaMemcpy(&f, failures, sizeof f, cudaMemcpyDeviceToHost));
    const double elems = double(warps) * ops * 32;
    ok = ok && f == 0 && h[2] == static_cast<unsigned long long>(elems);
    if (it == 0) continue;
    enq.push_back(elems / te);
    deq.push_back(elems / td);
    enq_lat.push_back(h[0] * 1e-3 / (double(warps) * ops));
    deq_lat.push_back(h[1] * 1e-3 / (double(warps) * ops));
  }
  for (void* p : {static_cast<void*>(slots), static_cast<void*>(stamps), static_cast<void*>(control),
                  static_cast<void*>(dq), static_cast<void*>(words), static_cast<void*>(failures)})
    GPUCOMM_CUDA_CHECK(cudaFree(p));
  r.enqueue_elems_per_s = median_of(enq);
  r.dequeue_elems_per_s = median_of(deq);
  r.enqueue_latency_us = median_of(enq_lat);
  r.dequeue_latency_us = median_of(deq_lat);
  r.verified = ok;
  return r;
}

}  // namespace gpucomm::bench
