// Runtime in one process: a single-PE job (bootstraps alone) exercises teams, the heap and
// host operations on itself; bad arguments get errors naming the argument.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "gpucomm/gpucomm.hpp"

namespace gpucomm {

class SinglePe : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("GPUCOMM_DEVICE", "host", 1);
    setenv("GPUCOMM_HEAP_SIZE", "8M", 1);
    unsetenv("GPUCOMM_UNIQUE_ID");
    unsetenv("GPUCOMM_RANK");
    unsetenv("GPUCOMM_SIZE");
  }
};

TEST_F(SinglePe, IdentityAndTeams) {
  Runtime rt;
  EXPECT_EQ(rt.rank(), 0);
  EXPECT_EQ(rt.size(), 1);
  EXPECT_EQ(rt.pe_kind(), PeKind::host);
  EXPECT_EQ(rt.world().size(), 1);
  Team t = rt.split(rt.world(), 3, 0);
  ASSERT_TRUE(t.valid());
  EXPECT_EQ(t.size(), 1);
  EXPECT_EQ(t.world_rank(0), 0);
  EXPECT_EQ(t.team_rank(0), 0);
  EXPECT_THROW(t.world_rank(1), Error);
  Team none = rt.split(rt.world(), -1, 0);
  EXPECT_FALSE(none.valid());
  EXPECT_THROW(none.size(), Error);
  rt.barrier(t);
}

TEST_F(SinglePe, TeamSlotsAreReused) {
  Runtime rt;
  for (int i = 0; i < 200; ++i) {
    Team t = rt.split(rt.world(), 0, 0);
    rt.barrier(t);
  }
}

TEST_F(SinglePe, HeapAndOperationsOnSelf) {
  Runtime rt;
  auto* a = static_cast<uint64_t*>(rt.calloc(16, sizeof(uint64_t)));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(a[i], 0u);
  uint64_t v = 42;
  rt.put(&a[3], &v, sizeof v, 0);
  EXPECT_EQ(a[3], 42u);
  EXPECT_EQ(rt.g(&a[3], 0), 42u);
  EXPECT_EQ(rt.atomic_fetch_add<uint64_t>(&a[4], 5, 0), 0u);
  EXPECT_EQ(rt.atomic_compare_swap<uint64_t>(&a[4], 5, 9, 0), 5u);
  EXPECT_EQ(a[4], 9u);
  rt.signal(&a[5], 3, SignalOp::add, 0);
  EXPECT_EQ(rt.wait_until<uint64_t>(&a[5], Cmp::ge, 3), 3u);
  EXPECT_TRUE(rt.test<uint64_t>(&a[5], Cmp::eq, 3));
  EXPECT_EQ(rt.ptr(a, 0), a);
  rt.free(a);
}

TEST_F(SinglePe, BadArgumentsNameTheArgument) {
  Runtime rt;
  auto* a = rt.alloc<uint64_t>(2);
  try {
    rt.put(a, a, 8, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("'pe'"), std::string::npos) << e.what();
  }
  uint64_t outside = 0;
  try {
    rt.put(&outside, a, 8, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("symmetric heap"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rt.malloc(size_t(1) << 40), Error);
  EXPECT_THROW(rt.aligned_alloc(3, 8), Error);
  EXPECT_THROW(rt.free(&outside), Error);
  rt.free(a);
}

TEST_F(SinglePe, WaitTimesOutWithDiagnostic) {
  setenv("GPUCOMM_TIMEOUT", "0.3", 1);
  Runtime rt;
  auto* s = rt.alloc<uint64_t>(1);
  *s = 7;
  try {
    rt.wait_until<uint64_t>(s, Cmp::ge, 9);
    FAIL();
  } catch (const Error& e) {
    std::string w = e.what();
    EXPECT_EQ(e.code(), Errc::timeout);
    EXPECT_NE(w.find("rank 0"), std::string::npos) << w;
    EXPECT_NE(w.find(">= 9"), std::string::npos) << w;
    EXPECT_NE(w.find("last seen 7"), std::string::npos) << w;
  }
  unsetenv("GPUCOMM_TIMEOUT");
  rt.free(s);
}

}  // namespace gpucomm
