// GPU tests of the collectives with one PE (label gpu; skipped with a reason without a GPU): the
// device conversions against the host implementation over every input, the host API's whole
// matrix, and the in-kernel API at warp, block and grid level.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "coll_kernels.cuh"
#include "cuda_assert.hpp"
#include "gpucomm/collectives/numeric.hpp"
#include "test_support.hpp"

using namespace coll_check;

namespace {

// Every 32-bit pattern `base + i` as a float, through the device instruction and the host
// implementation; counts the differences (NaN inputs included: both must give the canonical NaN).
__global__ void k_round(uint64_t base, unsigned long long* bad, uint32_t* first) {
  const uint64_t i = base + blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const float f = num::bits_float(static_cast<uint32_t>(i));
  const bool ok = Num<DataType::f16>::from_acc(f) == num::f32_to_f16_host(f) &&
                  Num<DataType::bf16>::from_acc(f) == num::f32_to_bf16_host(f) &&
                  Num<DataType::f8e4m3>::from_acc(f) == num::f32_to_e4m3_host(f) &&
                  Num<DataType::f8e5m2>::from_acc(f) == num::f32_to_e5m2_host(f);
  if (!ok) {
    atomicAdd(bad, 1ull);
    atomicMin(first, static_cast<uint32_t>(i));
  }
}

// Every value of each low-precision type, decoded by the device and the host (bits, NaN as NaN).
__global__ void k_decode(unsigned long long* bad) {
  const uint32_t v = blockIdx.x * blockDim.x + threadIdx.x;
  auto same = [](float a, float b) { return num::float_bits(a) == num::float_bits(b) || (a != a && b != b); };
  bool ok =
      same(Num<DataType::f16>::to_acc(static_cast<uint16_t>(v)), num::f16_to_f32_host(static_cast<uint16_t>(v))) &&
      same(Num<DataType::bf16>::to_acc(static_cast<uint16_t>(v)), num::bf16_to_f32_host(static_cast<uint16_t>(v)));
  if (v < 256) {
    ok = ok &&
         same(Num<DataType::f8e4m3>::to_acc(static_cast<uint8_t>(v)), num::e4m3_to_f32_host(static_cast<uint8_t>(v))) &&
         same(Num<DataType::f8e5m2>::to_acc(static_cast<uint8_t>(v)), num::e5m2_to_f32_host(static_cast<uint8_t>(v)));
  }
  if (!ok) atomicAdd(bad, 1ull);
}

}  // namespace

TEST(CollGpu, ConversionsMatchTheHostForEveryInput) {
  GPUCOMM_REQUIRE_GPUS(1);
  unsigned long long* bad = nullptr;
  uint32_t* first = nullptr;
  CUDA_OK(cudaMalloc(&bad, sizeof *bad));
  CUDA_OK(cudaMalloc(&first, sizeof *first));
  CUDA_OK(cudaMemset(bad, 0, sizeof *bad));
  CUDA_OK(cudaMemset(first, 0xff, sizeof *first));
  const uint64_t per = uint64_t{1} << 28;  // 2^32 floats in 16 launches
  for (uint64_t base = 0; base < (uint64_t{1} << 32); base += per) {
    k_round<<<static_cast<unsigned>(per / 256), 256>>>(base, bad, first);
    CUDA_OK(cudaGetLastError());
  }
  k_decode<<<256, 256>>>(bad);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  unsigned long long n = 0;
  uint32_t f = 0;
  CUDA_OK(cudaMemcpy(&n, bad, sizeof n, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(&f, first, sizeof f, cudaMemcpyDeviceToHost));
  EXPECT_EQ(n, 0u) << "first differing float bits 0x" << std::hex << f;
  cudaFree(bad);
  cudaFree(first);
}

TEST(CollGpu, HostApiMatrixOnOnePe) {
  GPUCOMM_REQUIRE_GPUS(1);
  Runtime rt;
  ASSERT_EQ(rt.pe_kind(), PeKind::gpu);
  Collectives coll(rt);
  const uint64_t seed = gpucomm::testing::test_seed();
  const auto cases = matrix(coll.topology(rt.world()), all_types(), false, 100000);
  DeviceMem mem;
  auto s = reinterpret_cast<cudaStream_t>(rt.stream());
  int printed = 0, failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    failures += run_case(
        rt, coll, rt.world(), cases[i], i, seed, mem, rt.stream(),
        [&] {
          if (cudaStreamSynchronize(s) != cudaSuccess) coll.check_device();
        },
        printed);
  }
  EXPECT_EQ(failures, 0) << cases.size() << " cases, " << gpucomm::testing::seed_note(seed);
}

TEST(CollGpu, InKernelAtEveryLevelOnOnePe) {
  GPUCOMM_REQUIRE_GPUS(1);
  Runtime rt;
  Collectives coll(rt);
  const uint64_t seed = gpucomm::testing::test_seed();
  EXPECT_EQ(run_levels(rt, coll, seed, 4), 0) << gpucomm::testing::seed_note(seed);
}

TEST(CollGpu, GridLaunchRefusesBlocksThatCannotBeResident) {
  GPUCOMM_REQUIRE_GPUS(1);
  Runtime rt;
  Collectives coll(rt);
  const CollHandle ch = coll.handle(rt.world());
  try {
    launch_grid_barrier_f32(1u << 20, rt.device_handle(), ch);
    FAIL() << "launch_grid accepted 2^20 blocks";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("cannot all be resident"), std::string::npos) << e.what();
  }
}

namespace {

// Nodes a capture of `enqueue` on `s` holds (-1 when capturing failed).
template <class F>
long captured_nodes(cudaStream_t s, F&& enqueue) {
  cudaGraph_t g = nullptr;
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return -1;
  enqueue();
  size_t n = 0;
  const bool ok = cudaStreamEndCapture(s, &g) == cudaSuccess && cudaGraphGetNodes(g, nullptr, &n) == cudaSuccess;
  if (g) (void)cudaGraphDestroy(g);
  return ok ? static_cast<long>(n) : -1;
}

}  // namespace

// A one-member team runs no protocol (docs/COLLECTIVES.md, "One-member teams"): in place nothing
// is enqueued, out of place one kernel; low-precision reductions still round through f32 (NaN
// payloads become the canonical NaN, as the reference says), and unaligned copies are exact.
TEST(CollGpu, OneMemberTeamsRunAtMostOneKernel) {
  GPUCOMM_REQUIRE_GPUS(1);
  Runtime rt;
  ASSERT_EQ(rt.size(), 1);
  Collectives coll(rt);
  coll.prepare(rt.world());
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  constexpr size_t kBytes = 4096;
  char* a = nullptr;
  char* b = nullptr;
  CUDA_OK(cudaMalloc(&a, kBytes));
  CUDA_OK(cudaMalloc(&b, kBytes));
  const Team& w = rt.world();
  EXPECT_EQ(captured_nodes(s, [&] { coll.allreduce(a, a, 2, DataType::f32, RedOp::sum, w, s); }), 0);
  EXPECT_EQ(captured_nodes(s, [&] { coll.allgather(a, a, 2, DataType::f32, w, s); }), 0);
  EXPECT_EQ(captured_nodes(s, [&] { coll.barrier(w, s); }), 0);
  EXPECT_EQ(captured_nodes(s, [&] { coll.allreduce(a, b, 2, DataType::f32, RedOp::sum, w, s); }), 1);
  EXPECT_EQ(captured_nodes(s, [&] { coll.allreduce(a, a, 2, DataType::f16, RedOp::max, w, s); }), 1);

  // f16 in place: finite values, infinities, signed zeros and NaNs with payloads.
  const std::vector<uint16_t> in = {0x0000, 0x8000, 0x3c00, 0xfbff, 0x0001, 0x7c00, 0xfc00, 0x7c01, 0x7e55, 0xfd00};
  CUDA_OK(cudaMemcpy(a, in.data(), in.size() * 2, cudaMemcpyHostToDevice));
  coll.allreduce(a, a, in.size(), DataType::f16, RedOp::sum, w, s);
  CUDA_OK(cudaStreamSynchronize(s));
  std::vector<uint16_t> got(in.size());
  CUDA_OK(cudaMemcpy(got.data(), a, in.size() * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t want = num::f32_to_f16_host(num::f16_to_f32_host(in[i]));
    EXPECT_EQ(got[i], want) << "element " << i << " (0x" << std::hex << in[i] << ")";
  }

  // Unaligned byte copies (broadcast of FP8 elements at odd offsets), guard bytes untouched.
  std::vector<uint8_t> src(kBytes), dst(kBytes, 0xA5);
  for (size_t i = 0; i < kBytes; ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  CUDA_OK(cudaMemcpy(a, src.data(), kBytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(b, dst.data(), kBytes, cudaMemcpyHostToDevice));
  coll.broadcast(a + 3, b + 5, 1001, DataType::f8e4m3, 0, w, s);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(dst.data(), b, kBytes, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < kBytes; ++i) {
    const uint8_t want = i >= 5 && i < 5 + 1001 ? src[i - 2] : 0xA5;
    if (dst[i] != want) {
      ADD_FAILURE() << "byte " << i << " is " << int{dst[i]} << ", expected " << int{want};
      break;
    }
  }

  // alltoallv's counts of a one-member team are checked on the host.
  const uint64_t two = 2, three = 3, zero = 0;
  try {
    coll.alltoallv(a, &two, &zero, b, &three, &zero, DataType::f32, w, s);
    ADD_FAILURE() << "alltoallv accepted recv_counts[0] != send_counts[0]";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
  }
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  CUDA_OK(cudaStreamDestroy(s));
}
