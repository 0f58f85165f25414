// The copy-engine executor's batching (RoundBuilder) on host memory: random sequences of copies,
// inline writes, signals and atomics go through the builder into a stream that performs them on
// host memory in order; the result must equal performing the entries one by one, every signal
// must find the data of every entry before it in place, and the stream must see merged copies,
// memory-operation calls of at most 255 operations and scatter batches without two writes to one
// byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "gpucomm/base/ordering_host.hpp"
#include "round_builder.hpp"
#include "test_support.hpp"

namespace gpucomm::proxy {
namespace {

constexpr size_t kData = 2048;     // data region
constexpr size_t kSignals = 4096;  // signal words (8 bytes each) follow the data
constexpr size_t kAtomics = 64;    // atomic words follow the signals
constexpr size_t kMemory = kData + kSignals * 8 + kAtomics * 8;

struct Memory {
  std::vector<char> bytes = std::vector<char>(kMemory, 0);
  char* data() { return bytes.data(); }
  uint64_t* signal(size_t i) { return reinterpret_cast<uint64_t*>(bytes.data() + kData + 8 * i); }
  uint64_t* atomic(size_t i) { return reinterpret_cast<uint64_t*>(bytes.data() + kData + 8 * kSignals + 8 * i); }
};

// Performs the builder's operations on host memory at once; checks every signal against the data
// the entries before it left.
class HostStream final : public StreamOps {
 public:
  Memory mem;
  RoundBuilder* builder = nullptr;
  const std::map<uint64_t, std::vector<char>>* expected_at_signal = nullptr;  // value -> data region
  int copies = 0, memop_calls = 0, scatters = 0, kernels = 0, reclaims = 0, bad_signals = 0;

  void copy(char* dst, const char* src, uint64_t bytes) override {
    ++copies;
    std::memmove(dst, src, bytes);
  }
  void memops(CUstreamBatchMemOpParams* ops, unsigned n) override {
    ++memop_calls;
    EXPECT_LE(n, kMaxMemOps);
    for (unsigned i = 0; i < n; ++i) {
      const auto& w = ops[i].writeValue;
      if (ops[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64) {
        write(w.address, w.value64, 8);
      } else if (ops[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_32) {
        write(w.address, w.value, 4);
      } else {
        EXPECT_EQ(ops[i].operation, CU_STREAM_MEM_OP_BARRIER);
      }
    }
  }
  void scatter(const ScatterWrite* w, uint32_t n) override {
    ++scatters;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t bytes = w[i].addr_bytes >> kScatterSizeShift;
      const uint64_t addr = w[i].addr_bytes & ((uint64_t(1) << kScatterSizeShift) - 1);
      ranges.emplace_back(addr, addr + bytes);
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) EXPECT_LE(ranges[i - 1].second, ranges[i].first) << "overlapping writes";
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t bytes = w[i].addr_bytes >> kScatterSizeShift;
      write(w[i].addr_bytes & ((uint64_t(1) << kScatterSizeShift) - 1), w[i].value, static_cast<uint32_t>(bytes));
    }
  }
  void signal_kernel(uint64_t* addr, uint64_t value, SignalOp op) override {
    ++kernels;
    mem::host_signal(addr, op, value);
    check_signal(reinterpret_cast<uint64_t>(addr), *addr);
  }
  void atomic_kernel(AtomicOp op, unsigned width, void* addr, uint64_t operand, uint64_t compare,
                     uint64_t* result) override {
    ++kernels;
    const uint64_t old = mem::host_apply_atomic(addr, width, op, operand, compare);
    if (result) *result = old;
  }
  void reclaim_slots() override {
    ++reclaims;
    builder->release_slots(builder->stage_next());  // everything issued has been performed
  }

 private:
  void write(uint64_t addr, uint64_t value, uint32_t bytes) {
    std::memcpy(reinterpret_cast<void*>(addr), &value, bytes);
    check_signal(addr, value);
  }
  // A write into the signal words is a signal of value v: entry v - 1 and those before it are done.
  void check_signal(uint64_t addr, uint64_t value) {
    const auto lo = reinterpret_cast<uint64_t>(mem.signal(0)), hi = reinterpret_cast<uint64_t>(mem.signal(kSignals));
    if (addr < lo || addr >= hi || !expected_at_signal) return;
    auto it = expected_at_signal->find(value);
    if (it == expected_at_signal->end()) return;  // an add signal's running value
    if (std::memcmp(it->second.data(), mem.data(), kData) != 0) ++bad_signals;
  }
};

struct Case {
  bool memops;
  uint32_t memop_max;
  uint64_t slots;
  uint32_t batch_max;
};

void run_case(const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
  HostStream s;
  Memory ref;
  std::vector<char> source(kData);
  for (auto& b : source) b = static_cast<char>(rng());
  std::vector<ScatterWrite> staging(c.slots);
  RoundLimits limits{c.memops, c.memop_max, c.slots, c.batch_max};
  RoundBuilder b(s, limits, staging.data());
  s.builder = &b;
  std::map<uint64_t, std::vector<char>> expected;
  s.expected_at_signal = &expected;
  // Offsets into the data region of both memories (the builder sees the stream's addresses).
  uint64_t last_dst = 0, last_src = 0, last_len = 0;
  std::vector<uint64_t> written;  // addresses written before, to write again
  const int entries = 400;
  for (int e = 0; e < entries; ++e) {
    const uint64_t kind = pick(10);
    if (kind < 3) {  // a put from the source buffer, often continuing the previous one
      uint64_t len = 1 + pick(64), dst = pick(kData - 64), src = pick(kData - 64);
      if (pick(2) == 0 && last_len && last_dst + last_len + len <= kData && last_src + last_len + len <= kData) {
        dst = last_dst + last_len;
        src = last_src + last_len;
      }
      b.copy(s.mem.data() + dst, source.data() + src, len);
      std::memcpy(ref.data() + dst, source.data() + src, len);
      last_dst = dst, last_src = src, last_len = len;
    } else if (kind < 7) {  // an inline write: mostly aligned 8 or 4 bytes, sometimes the same word again
      static constexpr uint32_t kSizes[] = {8, 8, 8, 4, 4, 2, 1, 3, 5, 7};
      const uint32_t bytes = kSizes[pick(10)];
      uint64_t off = pick(kData - 8);
      if (bytes == 8 || bytes == 4 || bytes == 2) off &= ~uint64_t(bytes - 1);
      if (!written.empty() && pick(3) == 0) off = written[pick(written.size())] & ~uint64_t(7);
      written.push_back(off);
      const uint64_t value = rng();
      b.write(reinterpret_cast<uint64_t>(s.mem.data() + off), value, bytes);
      std::memcpy(ref.data() + off, &value, bytes);
    } else if (kind < 9) {  // a signal: set (value e + 1 marks entry e) or add
      const auto i = static_cast<size_t>(e);
      if (pick(4) == 0) {  // its running values stay clear of the set signals' entry numbers
        b.signal(s.mem.signal(i), uint64_t(1) << 40, SignalOp::add);
        *ref.signal(i) += uint64_t(1) << 40;
      } else {
        const auto v = static_cast<uint64_t>(e) + 1;
        expected[v] = std::vector<char>(ref.data(), ref.data() + kData);
        b.signal(s.mem.signal(i), v, SignalOp::set);
        *ref.signal(i) = v;
      }
    } else {  // an atomic
      const size_t w = pick(kAtomics);
      b.atomic(AtomicOp::fetch_add, 8, s.mem.atomic(w), 3, 0, nullptr);
      *ref.atomic(w) += 3;
    }
    if (pick(16) == 0) b.finish();  // the proxy's round ends
  }
  b.finish();
  EXPECT_EQ(std::memcmp(s.mem.bytes.data(), ref.bytes.data(), kMemory), 0) << "the memories differ";
  EXPECT_EQ(s.bad_signals, 0) << "signals before their data";
  EXPECT_GT(s.copies, 0);
  if (c.memops && c.memop_max > 0) {
    EXPECT_GT(s.memop_calls, 0);
  }
  if (!c.memops || c.memop_max == 0) {
    EXPECT_GT(s.scatters, 0);
  }
}

TEST(ProxyRoundBuilder, SameResultAsOneByOneAndSignalsAfterTheirData) {
  const uint64_t seed = testing::test_seed();
  const Case cases[] = {
      {true, 64, 1u << 16, 8192}, {true, 4, 64, 16}, {true, 0, 64, 16}, {false, 64, 64, 16}, {false, 0, 32, 4}};
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::seed_note(seed) + " memops " + std::to_string(c.memops) + " memop_max " +
                 std::to_string(c.memop_max) + " slots " + std::to_string(c.slots));
    for (int round = 0; round < 20; ++round) run_case(c, seed + static_cast<uint64_t>(round));
  }
}

// Puts whose ranges continue each other become one copy; overlapping continuations do not.
TEST(ProxyRoundBuilder, ContiguousCopiesMerge) {
  HostStream s;
  std::vector<ScatterWrite> staging(64);
  RoundBuilder b(s, RoundLimits{true, 64, 64, 16}, staging.data());
  std::vector<char> src(256, 7);
  for (size_t i = 0; i < 8; ++i) b.copy(s.mem.data() + 32 * i, src.data() + 32 * i, 32);
  b.finish();
  EXPECT_EQ(s.copies, 1);
  // dst continues src: copying them as one would read bytes the first part wrote.
  b.copy(s.mem.data() + 64, s.mem.data(), 64);
  b.copy(s.mem.data() + 128, s.mem.data() + 64, 64);
  b.finish();
  EXPECT_EQ(s.copies, 3);
}

// A round of small writes and a set signal is one call of stream memory operations, with the
// completion mark appended to it.
TEST(ProxyRoundBuilder, SmallRoundIsOneMemopCall) {
  HostStream s;
  std::vector<ScatterWrite> staging(64);
  RoundBuilder b(s, RoundLimits{true, 64, 64, 16}, staging.data());
  b.write(reinterpret_cast<uint64_t>(s.mem.data()), 5, 8);
  b.signal(s.mem.signal(0), 1, SignalOp::set);
  uint64_t mark = 0;
  const CUstreamBatchMemOpParams tail[2] = {barrier_op(), write_op(reinterpret_cast<uint64_t>(&mark), 9, true)};
  b.finish(tail, 2);
  EXPECT_EQ(s.memop_calls, 1);
  EXPECT_EQ(s.kernels, 0);
  EXPECT_EQ(mark, 9u);
  EXPECT_EQ(*s.mem.signal(0), 1u);
}

// More small writes than memop_max go as scatter batches that never hold two writes of one word.
TEST(ProxyRoundBuilder, LargeRoundsScatterAndTheLatestWriteOfAWordWins) {
  HostStream s;
  std::vector<ScatterWrite> staging(1024);
  RoundBuilder b(s, RoundLimits{true, 8, 1024, 512}, staging.data());
  for (uint64_t v = 0; v < 100; ++v) b.write(reinterpret_cast<uint64_t>(s.mem.data() + 8 * (v % 10)), v, 8);
  b.finish();
  EXPECT_EQ(s.scatters, 1);
  for (uint64_t w = 0; w < 10; ++w) EXPECT_EQ(*reinterpret_cast<uint64_t*>(s.mem.data() + 8 * w), 90 + w);
}

}  // namespace
}  // namespace gpucomm::proxy
