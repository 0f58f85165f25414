// Loss-and-duplication tests of the warp-parallel queue: every element enqueued is dequeued
// exactly once, and elements of one producer leave in the order they entered (the queue is FIFO
// by ticket). Waits are bounded (timeouts count errors) so that a broken protocol fails, not hangs.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/matching/warp_queue_device.cuh"
#include "test_support.hpp"

namespace gm = gpucomm::matching;
using gpucomm::coop::Warp;

namespace {

constexpr unsigned long long kTimeoutNs = 5ull * 1000 * 1000 * 1000;

// Element: producer id in the high half, per-producer sequence number in the low half.
__device__ unsigned long long element(uint32_t producer, uint32_t seq) {
  return (static_cast<unsigned long long>(producer) << 32) | seq;
}

struct Run {
  unsigned long long* by_ticket;  // element dequeued for each ticket
  unsigned int* consumed;         // elements dequeued so far
  unsigned int* failures;         // enqueue timeouts and kernel watchdog expiries
  uint32_t per_producer;
  uint32_t total;
};

// Producer warps enqueue per_producer elements each, 1 to 32 lanes at a time (varying); consumer
// warps dequeue up to 1..32 at a time until every element is consumed.
template <gm::QueueScope S>
__device__ void play(const gm::WarpQueue<unsigned long long, S>& q, const Run& r, uint32_t producer, bool is_producer) {
  const uint32_t lane = gpucomm::coop::lane_id();
  if (is_producer) {
    uint32_t seq = 0, round = 0;
    while (seq < r.per_producer) {
      const uint32_t want = 1 + (producer * 7 + round++ * 13) % 32;
      const uint32_t n = min(want, r.per_producer - seq);
      if (!gm::enqueue(Warp{}, q, element(producer, seq + lane), lane < n)) {
        if (lane == 0) atomicAdd(r.failures, 1u);
        return;
      }
      seq += n;
    }
    return;
  }
  const unsigned long long start = gm::detail::now_ns();
  uint32_t round = 0;
  for (;;) {
    const uint32_t done =
        __shfl_sync(0xffffffffu, lane == 0 ? *reinterpret_cast<volatile unsigned int*>(r.consumed) : 0u, 0);
    if (done >= r.total) return;
    unsigned long long item = 0, ticket = 0;
    const uint32_t n = gm::try_dequeue(Warp{}, q, item, 1 + (round++ * 5) % 32, &ticket);
    if (lane < n && ticket < r.total) r.by_ticket[ticket] = item;
    if (lane == 0 && n) atomicAdd(r.consumed, n);
    int late = 0;
    if (lane == 0 && n == 0 && gm::detail::now_ns() - start > 4 * kTimeoutNs) late = 1;
    if (__shfl_sync(0xffffffffu, late, 0)) {
      if (lane == 0) atomicAdd(r.failures, 1u);
      return;
    }
  }
}

__global__ void global_queue_kernel(gm::WarpQueue<unsigned long long, gm::QueueScope::device> q, Run r,
                                    uint32_t producers) {
  const uint32_t w = blockIdx.x * (blockDim.x / 32) + gpucomm::coop::warp_id();
  // Interleave roles across blocks so producers and consumers share SMs.
  play(q, r, w / 2, (w % 2 == 0) && (w / 2 < producers));
}

__global__ void shared_queue_kernel(Run r, uint32_t capacity, uint32_t producers) {
  extern __shared__ unsigned long long smem[];
  __shared__ gm::QueueControl control;
  auto q = gm::make_shared_queue(gpucomm::coop::Block{}, smem, smem + capacity, &control, capacity, kTimeoutNs);
  const uint32_t w = gpucomm::coop::warp_id();
  play(q, r, w, w < producers);
  __syncthreads();
  if (threadIdx.x == 0 && control.errors.value) atomicAdd(r.failures, static_cast<unsigned>(control.errors.value));
}

struct Host {
  unsigned long long* by_ticket;
  unsigned int* counters;  // consumed, failures
  Run run(uint32_t per_producer, uint32_t total) { return Run{by_ticket, counters, counters + 1, per_producer, total}; }
};

void check(const std::vector<unsigned long long>& by_ticket, uint32_t producers, uint32_t per_producer,
           unsigned consumed, unsigned failures, const char* what) {
  const uint32_t total = producers * per_producer;
  ASSERT_EQ(failures, 0u) << what << ": timeouts (a wait ran past its bound)";
  ASSERT_EQ(consumed, total) << what << ": consumed count";
  std::vector<uint32_t> seen(total, 0), next(producers, 0);
  for (uint32_t t = 0; t < total; ++t) {
    const uint32_t p = static_cast<uint32_t>(by_ticket[t] >> 32), s = static_cast<uint32_t>(by_ticket[t]);
    ASSERT_LT(p, producers) << what << ": ticket " << t << " holds a foreign element " << by_ticket[t];
    ASSERT_LT(s, per_producer) << what << ": ticket " << t << " holds a foreign element";
    ASSERT_EQ(seen[p * per_producer + s]++, 0u) << what << ": producer " << p << " element " << s << " dequeued twice";
    ASSERT_EQ(s, next[p]) << what << ": producer " << p << " out of order at ticket " << t;
    ++next[p];
  }
}

void run_global(uint32_t capacity, uint32_t producers, uint32_t per_producer, uint32_t blocks, uint32_t warps) {
  const uint32_t total = producers * per_producer;
  unsigned long long *slots, *stamps, *by_ticket;
  gm::QueueControl* control;
  unsigned int* counters;
  GPUCOMM_CUDA_CHECK(cudaMalloc(&slots, capacity * sizeof(unsigned long long)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&stamps, capacity * sizeof(unsigned long long)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&control, sizeof(gm::QueueControl)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&by_ticket, total * sizeof(unsigned long long)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&counters, 2 * sizeof(unsigned int)));
  GPUCOMM_CUDA_CHECK(cudaMemset(stamps, 0, capacity * sizeof(unsigned long long)));
  GPUCOMM_CUDA_CHECK(cudaMemset(control, 0, sizeof(gm::QueueControl)));
  GPUCOMM_CUDA_CHECK(cudaMemset(by_ticket, 0xff, total * sizeof(unsigned long long)));
  GPUCOMM_CUDA_CHECK(cudaMemset(counters, 0, 2 * sizeof(unsigned int)));
  gm::WarpQueue<unsigned long long, gm::QueueScope::device> q{slots, stamps, control, capacity, kTimeoutNs};
  global_queue_kernel<<<blocks, warps * 32>>>(q, Host{by_ticket, counters}.run(per_producer, total), producers);
  GPUCOMM_CUDA_CHECK_LAUNCH("global_queue_kernel");
  GPUCOMM_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<unsigned long long> h(total);
  unsigned hc[2];
  gm::QueueControl hctl;
  GPUCOMM_CUDA_CHECK(cudaMemcpy(h.data(), by_ticket, total * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  GPUCOMM_CUDA_CHECK(cudaMemcpy(hc, counters, sizeof hc, cudaMemcpyDeviceToHost));
  GPUCOMM_CUDA_CHECK(cudaMemcpy(&hctl, control, sizeof hctl, cudaMemcpyDeviceToHost));
  for (void* p : {static_cast<void*>(slots), static_cast<void*>(stamps), static_cast<void*>(control),
                  static_cast<void*>(by_ticket), static_cast<void*>(counters)})
    GPUCOMM_CUDA_CHECK(cudaFree(p));
  char what[128];
  std::snprintf(what, sizeof what, "global queue, capacity %u, %u producers x %u", capacity, producers, per_producer);
  EXPECT_EQ(hctl.errors.value, 0ull) << what << ": timeouts inside queue operations";
  EXPECT_EQ(hctl.write_reserve.value, total) << what;
  EXPECT_EQ(hctl.read_commit.value, total) << what;
  check(h, producers, per_producer, hc[0], hc[1], what);
}

}  // namespace

TEST(WarpQueueGpu, GlobalQueueLargeCapacityNoLossNoDuplicates) {
  GPUCOMM_REQUIRE_GPUS(1);
  run_global(1u << 20, 64, 4096, 16, 8);  // never full
}

TEST(WarpQueueGpu, GlobalQueueSmallCapacityWrapsManyTimes) {
  GPUCOMM_REQUIRE_GPUS(1);
  run_global(64, 32, 2000, 8, 8);  // full and empty all the time, ~1000 laps
  run_global(1024, 16, 5000, 4, 8);
}

TEST(WarpQueueGpu, SharedQueueNoLossNoDuplicates) {
  GPUCOMM_REQUIRE_GPUS(1);
  const uint32_t capacity = 256, producers = 8, warps = 16, per_producer = 3000, total = producers * per_producer;
  unsigned long long* by_ticket;
  unsigned int* counters;
  GPUCOMM_CUDA_CHECK(cudaMalloc(&by_ticket, total * sizeof(unsigned long long)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&counters, 2 * sizeof(unsigned int)));
  GPUCOMM_CUDA_CHECK(cudaMemset(counters, 0, 2 * sizeof(unsigned int)));
  GPUCOMM_CUDA_CHECK(cudaMemset(by_ticket, 0xff, total * sizeof(unsigned long long)));
  shared_queue_kernel<<<1, warps * 32, 2 * static_cast<size_t>(capacity) * sizeof(unsigned long long)>>>(
      Host{by_ticket, counters}.run(per_producer, total), capacity, producers);
  GPUCOMM_CUDA_CHECK_LAUNCH("shared_queue_kernel");
  GPUCOMM_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<unsigned long long> h(total);
  unsigned hc[2];
  GPUCOMM_CUDA_CHECK(cudaMemcpy(h.data(), by_ticket, total * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  GPUCOMM_CUDA_CHECK(cudaMemcpy(hc, counters, sizeof hc, cudaMemcpyDeviceToHost));
  GPUCOMM_CUDA_CHECK(cudaFree(by_ticket));
  GPUCOMM_CUDA_CHECK(cudaFree(counters));
  check(h, producers, per_producer, hc[0], hc[1], "shared queue");
}
