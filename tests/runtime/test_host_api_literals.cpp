// The common calls read the same on host and device and take plain literals as values: the
// value of a wait, a test, p and every atomic has the word's type (no deduction from the literal).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>

#include "gpucomm/gpucomm.hpp"

namespace gpucomm {
namespace {

class OnePe : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("GPUCOMM_DEVICE", "host", 1);
    setenv("GPUCOMM_HEAP_SIZE", "4M", 1);
    unsetenv("GPUCOMM_UNIQUE_ID");
    unsetenv("GPUCOMM_RANK");
    unsetenv("GPUCOMM_SIZE");
  }
};

TEST_F(OnePe, WaitsTestsAndAtomicsTakeLiterals) {
  Runtime rt;
  const int me = rt.rank();
  auto* sig = rt.alloc<uint64_t>(1);
  auto* i32 = rt.alloc<int32_t>(1);
  auto* u32 = rt.alloc<uint32_t>(1);
  auto* i64 = rt.alloc<int64_t>(1);
  rt.p(sig, 0, me);
  rt.p(i32, -3, me);
  rt.p(u32, 7, me);
  rt.p(i64, 1, me);
  rt.signal(sig, 2, SignalOp::add, me);
  EXPECT_EQ(rt.wait_until(sig, Cmp::ge, 1), 2u);
  EXPECT_EQ(rt.signal_wait_until(sig, Cmp::eq, 2), 2u);
  EXPECT_TRUE(rt.test(sig, Cmp::gt, 1));
  EXPECT_EQ(rt.wait_until(i32, Cmp::lt, 0), -3);
  EXPECT_EQ(rt.atomic_fetch_add(i32, 5, me), -3);
  rt.atomic_add(u32, 1, me);
  rt.atomic_inc(u32, me);
  EXPECT_EQ(rt.atomic_fetch(u32, me), 9u);
  rt.atomic_set(i64, 40, me);
  EXPECT_EQ(rt.atomic_swap(i64, 41, me), 40);
  EXPECT_EQ(rt.atomic_compare_swap(i64, 41, 42, me), 41);
  EXPECT_EQ(rt.atomic_fetch_and(i64, 0xF0, me), 42);
  EXPECT_EQ(rt.atomic_fetch_or(i64, 1, me), 32);
  EXPECT_EQ(rt.atomic_fetch_xor(i64, 3, me), 33);
  EXPECT_EQ(rt.g(i64, me), 34);
  EXPECT_EQ(rt.g(i32, me), 2);
  rt.free(i64);
  rt.free(u32);
  rt.free(i32);
  rt.free(sig);
}

}  // namespace
}  // namespace gpucomm
