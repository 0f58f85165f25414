// The GPU-only parts of the runtime's API on host-memory PEs (clear errors, no effect), and the
// text of recorded device failures (built from synthetic records, no GPU needed).
#include <gtest/gtest.h>
#include <stdlib.h>

#include "gpu_state.hpp"
#include "gpucomm/gpucomm.hpp"

namespace gpucomm {
namespace {

class HostPe : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("GPUCOMM_DEVICE", "host", 1);
    setenv("GPUCOMM_HEAP_SIZE", "4M", 1);
    unsetenv("GPUCOMM_UNIQUE_ID");
    unsetenv("GPUCOMM_RANK");
    unsetenv("GPUCOMM_SIZE");
  }
};

template <class F>
void expect_unsupported(F&& f, const char* what) {
  try {
    f();
    ADD_FAILURE() << what << " did not raise";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::unsupported) << what << ": " << e.what();
  }
}

TEST_F(HostPe, GpuOnlyCallsRaiseUnsupported) {
  Runtime rt;
  auto* buf = static_cast<uint64_t*>(rt.calloc(4, sizeof(uint64_t)));
  expect_unsupported([&] { rt.device_handle(); }, "device_handle");
  expect_unsupported([&] { rt.stream(); }, "stream");
  expect_unsupported([&] { rt.register_buffer(buf, 8); }, "register_buffer");
  expect_unsupported([&] { rt.deregister_buffer(buf); }, "deregister_buffer");
  expect_unsupported([&] { rt.put_on_stream(buf, buf + 1, 8, 0, nullptr); }, "put_on_stream");
  expect_unsupported([&] { rt.get_on_stream(buf, buf + 1, 8, 0, nullptr); }, "get_on_stream");
  expect_unsupported([&] { rt.put_signal_on_stream(buf, buf + 1, 8, buf + 2, 1, SignalOp::set, 0, nullptr); },
                     "put_signal_on_stream");
  expect_unsupported([&] { rt.signal_on_stream(buf, 1, SignalOp::add, 0, nullptr); }, "signal_on_stream");
  expect_unsupported([&] { rt.wait_until_on_stream(buf, Cmp::eq, 0, nullptr); }, "wait_until_on_stream");
  expect_unsupported([&] { rt.barrier_on_stream(nullptr); }, "barrier_on_stream");
  EXPECT_NO_THROW(rt.check_device());
  EXPECT_EQ(rt.heap().kind(), heap::MemoryKind::host);
  rt.free(buf);
}

DeviceDiag record(DeviceFault f, DeviceOp op, Cmp cmp, uint64_t expected, uint64_t seen) {
  DeviceDiag d{};
  d.state = DeviceDiag::kReady;
  d.fault = f;
  d.op = op;
  d.cmp = cmp;
  d.rank = 3;
  d.peer = 1;
  d.offset = 0x40;
  d.in_heap = 1;
  d.expected = expected;
  d.seen = seen;
  d.elapsed_ns = 2500000000ull;
  d.block[0] = 7;
  d.thread[0] = 31;
  return d;
}

TEST(DeviceFailureText, TimeoutNamesRankPeerOpAddressValuesAndThread) {
  auto s = detail::describe_device_failure(record(DeviceFault::timeout, DeviceOp::barrier_dissemination, Cmp::ge, 5, 4),
                                           1 << 20);
  EXPECT_EQ(s,
            "rank 3, block (7,0,0) thread (31,0,0): barrier_dissemination on heap+0x40 waiting for PE 1: expected "
            "value >= 5, "
            "last seen 4; timed out after 2.500 s (GPUCOMM_TIMEOUT sets the limit)");
}

TEST(DeviceFailureText, ArgumentFaults) {
  EXPECT_NE(detail::describe_device_failure(record(DeviceFault::bad_argument, DeviceOp::put, Cmp::lt, 9, 2), 0)
                .find("put: PE 9 is outside 0..1"),
            std::string::npos);
  EXPECT_NE(detail::describe_device_failure(record(DeviceFault::bad_argument, DeviceOp::get, Cmp::le, 64, 4096), 0)
                .find("get: heap+0x40 (+64 bytes) is not inside the symmetric heap of 4096 bytes"),
            std::string::npos);
  EXPECT_NE(detail::describe_device_failure(record(DeviceFault::bad_argument, DeviceOp::atomic, Cmp::eq, 4, 8), 0)
                .find("atomic: heap+0x40 is not aligned to 8 bytes"),
            std::string::npos);
  EXPECT_NE(detail::describe_device_failure(record(DeviceFault::unreachable, DeviceOp::signal, Cmp::eq, 0, 0), 0)
                .find("signal to PE 1 (heap+0x40): PE 1 is not reachable from this GPU"),
            std::string::npos);
}

}  // namespace
}  // namespace gpucomm
