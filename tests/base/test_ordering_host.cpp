// Litmus tests of the host side of the memory-ordering vocabulary (gpucomm/base/ordering_host.hpp)
// and of the patterns gpucomm's host code relies on, run on real threads:
//   MP  message passing: data with plain stores, then host_signal (release); the reader acquires
//       the signal and must see the data. (Every put-with-signal of host-memory PEs.)
//   SB  store buffering (Dekker): each thread stores its flag, a seq_cst fence, then loads the
//       other's flag; never may both see 0. Without the fence x86 shows the reordering, which the
//       control run reports (it is not asserted: it depends on timing).
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <thread>
#include <vector>

#include "gpucomm/base/ordering_host.hpp"

namespace gpucomm {
namespace {

TEST(OrderingHost, MessagePassingThroughSignals) {
  constexpr int kRounds = 20000;
  std::vector<uint64_t> data(static_cast<size_t>(kRounds) * 4, 0);
  std::vector<uint64_t> flags(kRounds, 0);
  uint64_t bad = 0;
  std::thread writer([&] {
    for (int i = 0; i < kRounds; ++i) {
      for (int k = 0; k < 4; ++k)
        mem::host_store(&data[static_cast<size_t>(i) * 4 + k], uint64_t(i) * 4 + k + 1, std::memory_order_relaxed);
      mem::host_signal(&flags[static_cast<size_t>(i)], (i & 1) ? SignalOp::add : SignalOp::set, 1);
    }
  });
  std::thread reader([&] {
    for (int i = 0; i < kRounds; ++i) {
      while (mem::host_load(&flags[static_cast<size_t>(i)], std::memory_order_acquire) == 0) {
      }
      for (int k = 0; k < 4; ++k) {
        bad +=
            mem::host_load(&data[static_cast<size_t>(i) * 4 + k], std::memory_order_relaxed) != uint64_t(i) * 4 + k + 1;
      }
    }
  });
  writer.join();
  reader.join();
  EXPECT_EQ(bad, 0u);
}

// Runs `rounds` store-buffering trials; returns how many ended with both loads seeing 0.
uint64_t store_buffering(int rounds, bool fenced) {
  std::vector<uint32_t> x(static_cast<size_t>(rounds), 0), y(static_cast<size_t>(rounds), 0);
  std::vector<uint32_t> r0(static_cast<size_t>(rounds), 1), r1(static_cast<size_t>(rounds), 1);
  std::barrier sync(2);
  auto side = [&](std::vector<uint32_t>& mine, std::vector<uint32_t>& theirs, std::vector<uint32_t>& seen) {
    for (int i = 0; i < rounds; ++i) {
      if (i % 64 == 0) sync.arrive_and_wait();  // keep the two sides close in time
      mem::host_store(&mine[static_cast<size_t>(i)], 1u, std::memory_order_relaxed);
      if (fenced) std::atomic_thread_fence(std::memory_order_seq_cst);
      seen[static_cast<size_t>(i)] = mem::host_load(&theirs[static_cast<size_t>(i)], std::memory_order_relaxed);
    }
  };
  std::thread a(side, std::ref(x), std::ref(y), std::ref(r0));
  std::thread b(side, std::ref(y), std::ref(x), std::ref(r1));
  a.join();
  b.join();
  uint64_t both_zero = 0;
  for (int i = 0; i < rounds; ++i) both_zero += r0[static_cast<size_t>(i)] == 0 && r1[static_cast<size_t>(i)] == 0;
  return both_zero;
}

TEST(OrderingHost, StoreBufferingNeedsTheSeqCstFence) {
  const uint64_t fenced = store_buffering(200000, true);
  const uint64_t control = store_buffering(200000, false);
  RecordProperty("unfenced_violations", static_cast<int>(control));
  std::printf("store buffering: %llu of 200000 unfenced trials reordered (control), %llu fenced\n",
              static_cast<unsigned long long>(control), static_cast<unsigned long long>(fenced));
  EXPECT_EQ(fenced, 0u);
}

TEST(OrderingHost, AtomicsApplyInOperandOrder) {
  uint64_t w = 5;
  EXPECT_EQ(mem::host_apply_atomic(&w, 8, AtomicOp::compare_swap, 9, 5), 5u);  // operand 9, compare 5
  EXPECT_EQ(w, 9u);
  EXPECT_EQ(mem::host_apply_atomic(&w, 8, AtomicOp::compare_swap, 1, 5), 9u);  // compare fails
  EXPECT_EQ(w, 9u);
  uint32_t v = 0xf0;
  EXPECT_EQ(mem::host_apply_atomic(&v, 4, AtomicOp::fetch_xor, 0xff, 0), 0xf0u);
  EXPECT_EQ(v, 0x0fu);
  EXPECT_EQ(mem::host_apply_atomic(&v, 4, AtomicOp::set, 7, 0), 0x0fu);  // set returns the old value
  EXPECT_EQ(mem::host_apply_atomic(&v, 4, AtomicOp::fetch, 0, 0), 7u);
}

}  // namespace
}  // namespace gpucomm
