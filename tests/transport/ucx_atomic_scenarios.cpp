// Every AtomicOp at both widths against known answers: a sequential model per PE pair, storms of
// fetch_add from every PE on one word, bit operations and compare_swap contention.
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ucx_scenarios.hpp"

namespace ucxtest {

namespace {
// Heap layout (byte offsets).
constexpr uint64_t kModel = 0;      // per sender: {u64 w64; u32 w32; u32 guard}
constexpr uint64_t kShared = 4096;  // words shared by every PE, see below
constexpr uint64_t kCount64 = kShared, kCount32 = kShared + 8, kCount32Guard = kShared + 12;
constexpr uint64_t kBits64 = kShared + 16, kBits32 = kShared + 24, kSet64 = kShared + 32;
constexpr uint64_t kCas64 = kShared + 40, kCas32 = kShared + 48;
constexpr uint32_t kGuard = 0xA5A5A5A5u;

uint64_t apply(AtomicOp op, uint64_t old, uint64_t v, uint64_t cmp, uint64_t mask) {
  switch (op) {
    case AtomicOp::fetch:
      return old;
    case AtomicOp::set:
    case AtomicOp::swap:
      return v & mask;
    case AtomicOp::fetch_add:
      return (old + v) & mask;
    case AtomicOp::compare_swap:
      return old == (cmp & mask) ? v & mask : old;
    case AtomicOp::fetch_and:
      return old & v;
    case AtomicOp::fetch_or:
      return (old | v) & mask;
    case AtomicOp::fetch_xor:
      return (old ^ v) & mask;
  }
  return old;
}

// Each PE applies a random sequence of operations to its own two words on its right neighbour
// and checks every old value against a model. Operations without a result are followed by a
// fence, which orders them before the next one.
void model_sequence(Job& j, int iters) {
  auto* rec = j.at<uint8_t>(kModel);
  for (int s = 0; s < j.n; ++s) {
    std::memset(rec + 16 * static_cast<size_t>(s), 0, 12);
    std::memcpy(rec + 16 * static_cast<size_t>(s) + 12, &kGuard, 4);
  }
  j.barrier();
  const int t = (j.me + 1) % j.n;
  std::mt19937_64 rng(mix(j.seed, 10, static_cast<uint64_t>(j.me)));
  uint64_t model[2] = {0, 0};  // [0]: 8-byte word, [1]: 4-byte word
  for (int i = 0; i < iters; ++i) {
    const auto op = static_cast<AtomicOp>(rng() % (static_cast<unsigned>(AtomicOp::last) + 1));
    const unsigned width = (rng() & 1) ? 8 : 4;
    const uint64_t mask = width == 8 ? ~uint64_t(0) : 0xffffffffULL;
    const int w = width == 8 ? 0 : 1;
    const uint64_t off = kModel + 16 * static_cast<uint64_t>(j.me) + (width == 8 ? 0 : 8);
    uint64_t v = rng(), cmp = (rng() & 1) ? model[w] : model[w] ^ 1;
    if (op == AtomicOp::fetch_and) v |= ~mask;  // the model keeps the upper half zero
    const unsigned mode = rng() % 3;            // 0: result and flag, 1: flag only, 2: neither
    uint64_t result = ~uint64_t(0), done = 0;
    j.r().atomic(t, off, op, width, v, cmp, mode == 0 ? &result : nullptr, mode < 2 ? Completion{&done} : Completion{});
    if (mode < 2) j.wait([&] { return load_acquire(&done) == 1; }, "an atomic");
    if (mode > 0) j.r().fence(t);
    if (mode == 0) {
      UCX_CHECK(result == model[w], "op %d (%u bytes) #%d returned %llx, model %llx", static_cast<int>(op), width, i,
                static_cast<unsigned long long>(result), static_cast<unsigned long long>(model[w]));
    }
    model[w] = apply(op, model[w], v, cmp, mask);
  }
  for (unsigned width : {8u, 4u}) {
    uint64_t result = ~uint64_t(0), done = 0;
    const uint64_t off = kModel + 16 * static_cast<uint64_t>(j.me) + (width == 8 ? 0 : 8);
    j.r().atomic(t, off, AtomicOp::fetch, width, 0, 0, &result, Completion{&done});
    j.wait([&] { return load_acquire(&done) == 1; }, "the final fetch");
    UCX_CHECK(result == model[width == 8 ? 0 : 1], "final %u-byte word %llx, model %llx", width,
              static_cast<unsigned long long>(result), static_cast<unsigned long long>(model[width == 8 ? 0 : 1]));
  }
  j.barrier();
  for (int s = 0; s < j.n; ++s) {
    uint32_t g;
    std::memcpy(&g, rec + 16 * static_cast<size_t>(s) + 12, 4);
    UCX_CHECK(g == kGuard, "the word beside PE %d's 4-byte word changed to %x", s, g);
  }
}

// Collects every PE's old values and checks they are the distinct numbers 0 .. total-1 (with the
// posted adds' numbers missing).
void check_distinct(Job& j, const std::vector<uint64_t>& olds, uint64_t total, const char* what) {
  std::string mine(reinterpret_cast<const char*>(olds.data()), olds.size() * 8);
  auto all = j.rt.bootstrap().allgather(mine);
  if (j.me != 0) return;
  std::set<uint64_t> seen;
  for (const auto& s : all) {
    for (size_t i = 0; i + 8 <= s.size(); i += 8) {
      uint64_t v;
      std::memcpy(&v, s.data() + i, 8);
      UCX_CHECK(v < total && seen.insert(v).second, "%s: old value %llu repeated or out of range", what,
                static_cast<unsigned long long>(v));
    }
  }
}

// fetch_add storm: every PE adds 1 `iters` times to a 64-bit word on PE 0 and a 32-bit word on
// the last PE, 64 in flight, every other add posted (no result, no flag).
void fetch_add_storm(Job& j, int iters) {
  if (j.me == 0) *j.at<uint64_t>(kCount64) = 0;
  if (j.me == j.n - 1) {
    *j.at<uint32_t>(kCount32) = 0;
    *j.at<uint32_t>(kCount32Guard) = kGuard;
  }
  j.barrier();
  const size_t window = 64;
  std::vector<uint64_t> res64(static_cast<size_t>(iters)), res32(static_cast<size_t>(iters));
  std::vector<uint64_t> done(window * 2, 1);
  for (int i = 0; i < iters; ++i) {
    const size_t slot = static_cast<size_t>(i) % window;
    j.wait([&] { return load_acquire(&done[2 * slot]) == 1 && load_acquire(&done[2 * slot + 1]) == 1; },
           "storm window");
    const bool fetch = i % 2 == 0;
    done[2 * slot] = done[2 * slot + 1] = fetch ? 0 : 1;
    j.r().atomic(0, kCount64, AtomicOp::fetch_add, 8, 1, 0, fetch ? &res64[static_cast<size_t>(i)] : nullptr,
                 fetch ? Completion{&done[2 * slot]} : Completion{});
    j.r().atomic(j.n - 1, kCount32, AtomicOp::fetch_add, 4, 1, 0, fetch ? &res32[static_cast<size_t>(i)] : nullptr,
                 fetch ? Completion{&done[2 * slot + 1]} : Completion{});
    if (i % 16 == 15) j.r().progress();
  }
  j.barrier();
  const uint64_t total = static_cast<uint64_t>(iters) * static_cast<uint64_t>(j.n);
  if (j.me == 0) {
    UCX_CHECK(*j.at<uint64_t>(kCount64) == total, "64-bit storm total %llu, expected %llu",
              static_cast<unsigned long long>(*j.at<uint64_t>(kCount64)), static_cast<unsigned long long>(total));
  }
  if (j.me == j.n - 1) {
    UCX_CHECK(*j.at<uint32_t>(kCount32) == total, "32-bit storm total %u, expected %llu", *j.at<uint32_t>(kCount32),
              static_cast<unsigned long long>(total));
    UCX_CHECK(*j.at<uint32_t>(kCount32Guard) == kGuard, "32-bit storm touched the next word");
  }
  std::vector<uint64_t> olds64, olds32;
  for (int i = 0; i < iters; i += 2) {
    olds64.push_back(res64[static_cast<size_t>(i)]);
    olds32.push_back(res32[static_cast<size_t>(i)]);
  }
  check_distinct(j, olds64, total, "64-bit fetch_add");
  check_distinct(j, olds32, total, "32-bit fetch_add");
}

// Posted or, and, xor and set from every PE on shared words of PE 0, at both widths.
void bit_operations(Job& j) {
  auto* b64 = j.at<uint64_t>(kBits64);
  auto* b32 = j.at<uint32_t>(kBits32);
  if (j.me == 0) {
    *b64 = 0;
    *b32 = 0;
    *j.at<uint64_t>(kSet64) = 0;
  }
  j.barrier();
  const uint64_t bit = uint64_t(1) << j.me;
  j.r().atomic(0, kBits64, AtomicOp::fetch_or, 8, bit << 32, 0, nullptr, {});
  j.r().atomic(0, kBits32, AtomicOp::fetch_or, 4, bit, 0, nullptr, {});
  j.r().atomic(0, kSet64, AtomicOp::set, 8, static_cast<uint64_t>(j.me) + 1, 0, nullptr, {});
  j.barrier();
  const uint64_t all = (uint64_t(1) << j.n) - 1;
  if (j.me == 0) {
    UCX_CHECK(*b64 == all << 32 && *b32 == all, "fetch_or: %llx and %x", static_cast<unsigned long long>(*b64), *b32);
    uint64_t s = *j.at<uint64_t>(kSet64);
    UCX_CHECK(s >= 1 && s <= static_cast<uint64_t>(j.n), "set left %llu", static_cast<unsigned long long>(s));
  }
  j.barrier();  // PE 0 has looked: the words may change again
  uint64_t old64 = 0, old32 = 0, d64 = 0, d32 = 0;
  j.r().atomic(0, kBits64, AtomicOp::fetch_and, 8, ~(bit << 32), 0, &old64, Completion{&d64});
  j.r().atomic(0, kBits32, AtomicOp::fetch_and, 4, ~bit, 0, &old32, Completion{&d32});
  for (int k = 0; k < 2; ++k) {
    j.r().atomic(0, kBits64, AtomicOp::fetch_xor, 8, 0xffULL << (8 * j.me), 0, nullptr, {});
    j.r().atomic(0, kBits32, AtomicOp::fetch_xor, 4, 0xfULL << (4 * j.me), 0, nullptr, {});
  }
  j.wait([&] { return load_acquire(&d64) == 1 && load_acquire(&d32) == 1; }, "fetch_and");
  UCX_CHECK((old64 & (bit << 32)) && (old32 & bit) && old32 <= 0xffffffffULL, "fetch_and saw %llx / %llx",
            static_cast<unsigned long long>(old64), static_cast<unsigned long long>(old32));
  j.barrier();
  if (j.me == 0)
    UCX_CHECK(*b64 == 0 && *b32 == 0, "after and/xor: %llx and %x", static_cast<unsigned long long>(*b64), *b32);
}

// Every PE tries compare_swap(0 -> its value) on one word: exactly one wins, the others see it.
void compare_swap_contention(Job& j, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    const int owner = r % j.n;
    for (unsigned width : {8u, 4u}) {
      const uint64_t off = width == 8 ? kCas64 : kCas32;
      if (j.me == owner) *j.at<uint64_t>(off) = width == 8 ? 0 : 0xdeadbeef00000000ULL;  // upper half: guard
      j.barrier();
      const uint64_t mine = static_cast<uint64_t>(j.me + 1) | (static_cast<uint64_t>(r + 1) << 8);
      uint64_t old = ~uint64_t(0), done = 0;
      j.r().atomic(owner, off, AtomicOp::compare_swap, width, mine, 0, &old, Completion{&done});
      j.wait([&] { return load_acquire(&done) == 1; }, "compare_swap");
      j.barrier();  // the owner must progress until every PE's compare_swap completed
      auto all = j.rt.bootstrap().allgather(std::to_string(old) + " " + std::to_string(mine));
      uint64_t winner = 0;
      int zeros = 0;
      for (const auto& s : all)
        if (std::stoull(s.substr(0, s.find(' '))) == 0) ++zeros, winner = std::stoull(s.substr(s.find(' ') + 1));
      UCX_CHECK(zeros == 1, "round %d width %u: %d PEs saw 0", r, width, zeros);
      UCX_CHECK(old == 0 || old == winner, "round %d width %u: PE saw %llx, winner %llx", r, width,
                static_cast<unsigned long long>(old), static_cast<unsigned long long>(winner));
      if (j.me == owner) {
        uint64_t want = width == 8 ? winner : (0xdeadbeef00000000ULL | winner);
        UCX_CHECK(*j.at<uint64_t>(off) == want, "round %d width %u: word %llx, expected %llx", r, width,
                  static_cast<unsigned long long>(*j.at<uint64_t>(off)), static_cast<unsigned long long>(want));
      }
      j.barrier();
    }
  }
}
}  // namespace

void scenario_atomics(Job& j, int iters) {
  model_sequence(j, iters);
  fetch_add_storm(j, iters * 10);
  bit_operations(j);
  compare_swap_contention(j, 2 * j.n);
}

}  // namespace ucxtest
