// The device API and the GPU PEs' host API on one GPU: a single PE talks to itself.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "rma_host_checks.cuh"
#include "test_support.hpp"

namespace {

using namespace gpucomm;

class GpuPe : public ::testing::Test {
 protected:
  void SetUp() override {
    GPUCOMM_REQUIRE_GPUS(1);
    setenv("GPUCOMM_DEVICE", "gpu", 1);
    setenv("GPUCOMM_HEAP_SIZE", "64M", 1);
    unsetenv("GPUCOMM_UNIQUE_ID");
    unsetenv("GPUCOMM_RANK");
    unsetenv("GPUCOMM_SIZE");
  }
};

TEST_F(GpuPe, HeapIsDeviceMemory) {
  Runtime rt;
  ASSERT_EQ(rt.pe_kind(), PeKind::gpu);
  EXPECT_EQ(rt.heap().kind(), heap::MemoryKind::device);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, rt.heap().base()), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  DeviceHandle h = rt.device_handle();
  EXPECT_EQ(h.rank, 0);
  EXPECT_EQ(h.size, 1);
  EXPECT_EQ(h.heap_base, rt.heap().base());
  EXPECT_EQ(rt.ptr(rt.heap().base(), 0), rt.heap().base());
}

TEST_F(GpuPe, DeviceApiEveryLevel) {
  uint64_t seed = gpucomm::testing::test_seed();
  SCOPED_TRACE(gpucomm::testing::seed_note(seed));
  Runtime rt;
  rma_checks::Report rep;
  rma_checks::Ctx c(rt, rep, seed);
  rma_checks::check_device_api(c);
  EXPECT_EQ(rep.failures, 0);
}

TEST_F(GpuPe, HostApiRegistrationAndGraphs) {
  uint64_t seed = gpucomm::testing::test_seed();
  SCOPED_TRACE(gpucomm::testing::seed_note(seed));
  Runtime rt;
  rma_checks::Report rep;
  rma_checks::Ctx c(rt, rep, seed);
  rma_checks::check_host_api(c);
  rma_checks::check_registered(c);
  rma_checks::check_graph(c, 5);
  EXPECT_EQ(rep.failures, 0);
}

// Both mappings of the heap work on their own.
TEST_F(GpuPe, IpcMapping) {
  setenv("GPUCOMM_HEAP_MAPPING", "ipc", 1);
  {
    Runtime rt;
    EXPECT_NE(rt.describe().find("heap mapped with ipc"), std::string::npos) << rt.describe();
    rma_checks::Report rep;
    rma_checks::Ctx c(rt, rep, gpucomm::testing::test_seed());
    rma_checks::check_put<coop::Block>(c, 65536 + 5, 1, 1, 0);
    rma_checks::check_put_signal<coop::Warp>(c, 4096, 0, SignalOp::set);
    EXPECT_EQ(rep.failures, 0);
  }
  unsetenv("GPUCOMM_HEAP_MAPPING");
}

// The tests below leave the CUDA context unusable (a trap); CTest runs each in its own process.
__global__ void wait_forever(DeviceHandle h, uint64_t* sig) {
  device::signal_wait_until(coop::Thread{}, h, sig, Cmp::ge, uint64_t(1));
}

TEST_F(GpuPe, DeviceTimeoutNamesTheWait) {
  setenv("GPUCOMM_TIMEOUT", "1", 1);
  Runtime rt;
  auto* sig = static_cast<uint64_t*>(rt.calloc(4, sizeof(uint64_t)));
  wait_forever<<<1, 1, 0, reinterpret_cast<cudaStream_t>(rt.stream())>>>(rt.device_handle(), sig + 2);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  cudaError_t e = cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(rt.stream()));
  EXPECT_NE(e, cudaSuccess) << "the wait should have trapped";
  try {
    rt.check_device();
    FAIL() << "check_device raised nothing";
  } catch (const Error& err) {
    std::string m = err.what();
    EXPECT_EQ(err.code(), Errc::timeout) << m;
    EXPECT_NE(m.find("rank 0, block (0,0,0) thread (0,0,0)"), std::string::npos) << m;
    EXPECT_NE(m.find("signal_wait_until on heap+0x10"), std::string::npos) << m;
    EXPECT_NE(m.find("expected value >= 1, last seen 0"), std::string::npos) << m;
    EXPECT_NE(m.find("GPUCOMM_TIMEOUT"), std::string::npos) << m;
  }
  // The record is this PE's own failure: reading it failed the job (the others' waits would leave).
  EXPECT_TRUE(rt.failed());
  EXPECT_NE(rt.failure().find("rank 0 aborted: a kernel failed"), std::string::npos) << rt.failure();
  unsetenv("GPUCOMM_TIMEOUT");
}

__global__ void put_to_missing_pe(DeviceHandle h, char* dst) {
  device::p(h, dst, 'x', 5);
}

TEST_F(GpuPe, BadPeIsDiagnosed) {
  Runtime rt;
  auto* buf = static_cast<char*>(rt.malloc(64));
  put_to_missing_pe<<<1, 1, 0, reinterpret_cast<cudaStream_t>(rt.stream())>>>(rt.device_handle(), buf);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_NE(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(rt.stream())), cudaSuccess);
  try {
    rt.check_device();
    FAIL() << "check_device raised nothing";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Errc::invalid_argument) << err.what();
    EXPECT_NE(std::string(err.what()).find("p: PE 5 is outside 0..0"), std::string::npos) << err.what();
  }
  EXPECT_TRUE(rt.failed());
}

#ifdef GPUCOMM_CHECKED
__global__ void put_outside_heap(DeviceHandle h) {
  device::put(coop::Thread{}, h, h.heap_base + h.heap_size - 8, h.heap_base, 64, 0);
}
#endif

TEST_F(GpuPe, CheckedBuildDiagnosesAddressOutsideHeap) {
#ifndef GPUCOMM_CHECKED
  GTEST_SKIP() << "heap-range checks exist in GPUCOMM_CHECKED builds only";
#else
  Runtime rt;
  put_outside_heap<<<1, 1, 0, reinterpret_cast<cudaStream_t>(rt.stream())>>>(rt.device_handle());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_NE(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(rt.stream())), cudaSuccess);
  try {
    rt.check_device();
    FAIL() << "check_device raised nothing";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Errc::invalid_argument) << err.what();
    EXPECT_NE(std::string(err.what()).find("put: heap+0x"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("(+64 bytes) is not inside the symmetric heap"), std::string::npos)
        << err.what();
  }
#endif
}

}  // namespace
