// Litmus tests of the device memory-ordering vocabulary (gpucomm/base/ordering_device.cuh) on the
// patterns gpucomm relies on, between blocks of one GPU:
//   SB     store then load of another word (Dekker), with mem::fence<kDevice>(seq_cst) between:
//          the GPU agent's idle exit against a producer's post (queue_device.cuh). Never may both
//          sides read 0. An unfenced control run is reported, not asserted.
//   MP     a block writes data, publish_group (fence.acq_rel.sys + barrier), its leader releases a
//          flag (set, or a posted release add); another block's leader acquires it and every
//          thread must see the data: put_signal at block level, the barrier notifications.
//   HANDLE a checked-mode kernel refuses a handle of another version with a bad_handle record.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define GPUCOMM_CHECKED 1  // this file's kernels check handles whatever the build
#include "gpucomm/base/group_device.cuh"
#include "gpucomm/base/handle_device.cuh"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/core/cuda_check.hpp"
#include "test_support.hpp"

namespace gpucomm {
namespace {

constexpr int kTrials = 1 << 16;

// Side `me` (0 or 1) of the store-buffering test; `progress` keeps the sides within a window.
__global__ void store_buffering(uint32_t* x, uint32_t* y, uint32_t* seen, uint32_t* progress, bool fenced) {
  const int me = static_cast<int>(blockIdx.x);
  if (threadIdx.x != 0) return;
  uint32_t* mine = me == 0 ? x : y;
  uint32_t* theirs = me == 0 ? y : x;
  for (int i = 0; i < kTrials; ++i) {
    while (static_cast<int>(mem::load<mem::kDevice>(&progress[1 - me], mem::relaxed)) + 4 < i) {
    }
    mem::store<mem::kDevice>(&mine[i], 1u, mem::relaxed);
    if (fenced) mem::fence<mem::kDevice>(mem::seq_cst);
    seen[me * kTrials + i] = mem::load<mem::kDevice>(&theirs[i], mem::relaxed);
    mem::store<mem::kDevice>(&progress[me], static_cast<uint32_t>(i), mem::relaxed);
  }
}

uint64_t run_store_buffering(bool fenced) {
  uint32_t *x, *y, *seen, *progress;
  GPUCOMM_CUDA_CHECK(cudaMalloc(&x, kTrials * sizeof(uint32_t)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&y, kTrials * sizeof(uint32_t)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&seen, 2 * static_cast<size_t>(kTrials) * sizeof(uint32_t)));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&progress, 2 * sizeof(uint32_t)));
  GPUCOMM_CUDA_CHECK(cudaMemset(x, 0, kTrials * sizeof(uint32_t)));
  GPUCOMM_CUDA_CHECK(cudaMemset(y, 0, kTrials * sizeof(uint32_t)));
  GPUCOMM_CUDA_CHECK(cudaMemset(progress, 0, 2 * sizeof(uint32_t)));
  store_buffering<<<2, 32>>>(x, y, seen, progress, fenced);
  GPUCOMM_CUDA_CHECK_LAUNCH("store_buffering");
  GPUCOMM_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint32_t> h(2 * static_cast<size_t>(kTrials));
  GPUCOMM_CUDA_CHECK(cudaMemcpy(h.data(), seen, h.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  uint64_t both_zero = 0;
  for (int i = 0; i < kTrials; ++i) both_zero += h[i] == 0 && h[kTrials + i] == 0;
  cudaFree(x), cudaFree(y), cudaFree(seen), cudaFree(progress);
  return both_zero;
}

TEST(OrderingGpu, StoreBufferingWithSeqCstFenceAtDeviceScope) {
  GPUCOMM_REQUIRE_GPUS(1);
  const uint64_t fenced = run_store_buffering(true);
  const uint64_t control = run_store_buffering(false);
  std::printf("store buffering between blocks: %llu of %d unfenced trials reordered (control), %llu fenced\n",
              static_cast<unsigned long long>(control), kTrials, static_cast<unsigned long long>(fenced));
  EXPECT_EQ(fenced, 0u);
}

constexpr int kMpRounds = 2048;
constexpr int kMpThreads = 256;

// Block 0 writes round r's data and signals; block 1 waits and checks every word.
__global__ void message_passing(uint64_t* data, uint64_t* flags, unsigned long long* bad, bool posted_add) {
  const uint32_t t = threadIdx.x;
  for (int r = 0; r < kMpRounds; ++r) {
    uint64_t* row = data + static_cast<size_t>(r) * kMpThreads;
    if (blockIdx.x == 0) {
      row[t] = (static_cast<uint64_t>(r) << 20) + t + 1;
      detail::publish_group(coop::Block{});
      if (t == 0) {
        if (posted_add) {
          mem::red_add<mem::kSystem>(&flags[r], 1, mem::release);
        } else {
          mem::store<mem::kSystem>(&flags[r], uint64_t(1), mem::release);
        }
      }
    } else {
      uint64_t f = 0;
      if (t == 0) {
        while ((f = mem::load<mem::kSystem>(&flags[r], mem::acquire)) == 0) {
        }
      }
      f = detail::broadcast(coop::Block{}, f);
      const uint64_t v = row[t];
      if (v != (static_cast<uint64_t>(r) << 20) + t + 1) atomicAdd(bad, 1ull);
    }
  }
}

void run_message_passing(bool posted_add) {
  uint64_t *data, *flags;
  unsigned long long* bad;
  GPUCOMM_CUDA_CHECK(cudaMalloc(&data, sizeof(uint64_t) * kMpRounds * kMpThreads));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&flags, sizeof(uint64_t) * kMpRounds));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&bad, sizeof(unsigned long long)));
  GPUCOMM_CUDA_CHECK(cudaMemset(data, 0, sizeof(uint64_t) * kMpRounds * kMpThreads));
  GPUCOMM_CUDA_CHECK(cudaMemset(flags, 0, sizeof(uint64_t) * kMpRounds));
  GPUCOMM_CUDA_CHECK(cudaMemset(bad, 0, sizeof(unsigned long long)));
  message_passing<<<2, kMpThreads>>>(data, flags, bad, posted_add);
  GPUCOMM_CUDA_CHECK_LAUNCH("message_passing");
  GPUCOMM_CUDA_CHECK(cudaDeviceSynchronize());
  unsigned long long h = 0;
  GPUCOMM_CUDA_CHECK(cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost));
  EXPECT_EQ(h, 0u) << (posted_add ? "posted release add" : "release store") << ": words seen before their data";
  cudaFree(data), cudaFree(flags), cudaFree(bad);
}

TEST(OrderingGpu, GroupPublishThenReleaseStore) {
  GPUCOMM_REQUIRE_GPUS(1);
  run_message_passing(false);
}

TEST(OrderingGpu, GroupPublishThenPostedReleaseAdd) {
  GPUCOMM_REQUIRE_GPUS(1);
  run_message_passing(true);
}

__global__ void use_handle(DeviceHandle h) {
  detail::check_handle(h, DeviceOp::handle_check);
}

// In a child process (the trap ends the CUDA context): a handle of another version is refused.
int refuse_other_version() {
  DeviceDiag* diag = nullptr;
  if (cudaHostAlloc(&diag, sizeof(DeviceDiag), cudaHostAllocMapped) != cudaSuccess) return 2;
  *diag = DeviceDiag{};
  DeviceDiag* diag_dev = nullptr;
  if (cudaHostGetDevicePointer(reinterpret_cast<void**>(&diag_dev), diag, 0) != cudaSuccess) return 3;
  DeviceHandle h{};
  h.magic = kHandleMagic;
  h.version = kHandleVersion + 1;
  h.bytes = sizeof(DeviceHandle);
  h.diag = diag_dev;
  use_handle<<<1, 1>>>(h);
  const cudaError_t e = cudaDeviceSynchronize();
  const bool ok = e != cudaSuccess && diag->state == DeviceDiag::kReady && diag->fault == DeviceFault::bad_handle &&
                  diag->offset == 1 && diag->expected == kHandleVersion && diag->seen == kHandleVersion + 1u;
  std::fprintf(stderr, "kernel: %s, fault %u, field %llu\n", cudaGetErrorName(e), static_cast<unsigned>(diag->fault),
               static_cast<unsigned long long>(diag->offset));
  return ok ? 0 : 1;
}

TEST(OrderingGpuDeathTest, KernelRefusesHandleOfAnotherVersion) {
  GPUCOMM_REQUIRE_GPUS(1);
  if (std::getenv("GPUCOMM_UNDER_SANITIZER"))
    GTEST_SKIP() << "the kernel traps on purpose; compute-sanitizer reports every trap";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::exit(refuse_other_version()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace gpucomm
