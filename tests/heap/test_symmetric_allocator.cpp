#include <gtest/gtest.h>

#include <map>
#include <random>

#include "gpucomm/heap/symmetric_allocator.hpp"
#include "test_support.hpp"

namespace gpucomm::heap {

TEST(SymmetricAllocator, AlignsAndReuses) {
  SymmetricAllocator a(1 << 20);
  size_t x = a.allocate(100, 256), y = a.allocate(100, 256);
  EXPECT_EQ(x % 256, 0u);
  EXPECT_EQ(y % 256, 0u);
  EXPECT_NE(x, y);
  EXPECT_TRUE(a.release(x));
  EXPECT_FALSE(a.release(x));
  EXPECT_EQ(a.allocate(100, 256), x);
  EXPECT_EQ(a.allocate(2 << 20, 8), SIZE_MAX);
  EXPECT_EQ(a.allocate(8, 3), SIZE_MAX);
}

// Random allocate/free sequences: blocks never overlap, stay inside, and freeing everything
// coalesces back to one range that fits the whole capacity.
TEST(SymmetricAllocator, RandomSequencesNeverOverlap) {
  uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_note(seed));
  std::mt19937_64 rng(seed);
  const size_t cap = 1 << 22;
  SymmetricAllocator a(cap);
  std::map<size_t, size_t> live;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      size_t bytes = 1 + rng() % 20000, align = size_t(1) << (rng() % 12);
      size_t off = a.allocate(bytes, align);
      if (off == SIZE_MAX) continue;
      ASSERT_EQ(off % align, 0u);
      ASSERT_LE(off + bytes, cap);
      auto next = live.lower_bound(off);
      if (next != live.end()) {
        ASSERT_LE(off + bytes, next->first);
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, off);
      }
      live[off] = bytes;
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      ASSERT_TRUE(a.release(it->first));
      live.erase(it);
    }
  }
  for (auto& [off, len] : live) ASSERT_TRUE(a.release(off));
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(a.allocate(cap, 1), 0u);
}

}  // namespace gpucomm::heap
