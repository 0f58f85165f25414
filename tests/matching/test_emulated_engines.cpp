// The GPU engines' device code, run on the host by the SIMT emulator (simt_emulation.hpp), against
// the reference (ordered engines) and the legality checker (hash engine), and the warp-parallel
// queue's protocol. Small sizes: every emulated collective is a rendezvous of OS threads.
#include "simt_emulation.hpp"  // first: defines the CUDA names the device headers use

#include <gtest/gtest.h>

#include <random>

#include "gpucomm/matching/checker.hpp"
#include "gpucomm/matching/engine.hpp"
#include "gpucomm/matching/hash_match_device.cuh"
#include "gpucomm/matching/match_device.cuh"
#include "gpucomm/matching/oracle.hpp"
#include "gpucomm/matching/warp_queue_device.cuh"
#include "gpucomm/matching/workload.hpp"
#include "test_support.hpp"

namespace gm = gpucomm::matching;
namespace coop = gpucomm::coop;
using gpucomm::testing::seed_note;
using gpucomm::testing::test_seed;

namespace {

enum class Kind { block, warp, no_unexpected_block, partitioned, hash };

struct Result {
  gm::Outcome outcome;
  uint32_t status = 0;
};

// Runs one job through an engine's device function on one emulated block.
Result run(Kind kind, const gm::Batch& b, uint32_t threads, gm::HashStrategy strategy = gm::HashStrategy::automatic) {
  std::vector<gm::Envelope> umq(b.umq.size() + b.msgs.size() + 1), prq(b.prq.size() + b.recvs.size() + 1);
  std::copy(b.umq.begin(), b.umq.end(), umq.begin());
  std::copy(b.prq.begin(), b.prq.end(), prq.begin());
  std::vector<gm::Match> matches(b.msgs.size() + b.recvs.size() + 1);
  std::vector<int32_t> scratch(std::max(b.msgs.size(), b.recvs.size()) + 1);
  uint32_t words[4] = {static_cast<uint32_t>(b.umq.size()), static_cast<uint32_t>(b.prq.size()), 0, 0};
  gm::MatchJob job{umq.data(),
                   &words[0],
                   static_cast<uint32_t>(umq.size() - 1),
                   prq.data(),
                   &words[1],
                   static_cast<uint32_t>(prq.size() - 1),
                   b.msgs.data(),
                   static_cast<uint32_t>(b.msgs.size()),
                   b.recvs.data(),
                   static_cast<uint32_t>(b.recvs.size()),
                   matches.data(),
                   &words[2],
                   scratch.data(),
                   &words[3],
                   {}};
  std::vector<uint32_t> table;
  const size_t most = gm::max_targets_of(b);
  if (kind == Kind::hash && most > gm::kHashSharedTargets) {
    uint32_t slots = 1;
    while (slots < 2 * most) slots <<= 1;
    table.resize(size_t{gm::kHashWordsPerSlot} * slots + most);
    job.table = gm::HashTableStorage{table.data(), slots, static_cast<uint32_t>(most)};
  }
  auto block_shared = std::make_unique<gm::BlockMatchShared>();
  auto warp_shared = std::make_unique<gm::WarpMatchShared>();
  auto hash_shared = std::make_unique<gm::HashShared>();
  std::vector<uint32_t> hash_smem(gm::kHashSharedBytes / 4);
  simt::launch(threads, [&] {
    switch (kind) {
      case Kind::block:
        gm::match_ordered(coop::Block{}, job, *block_shared);
        break;
      case Kind::no_unexpected_block:
        gm::match_no_unexpected(coop::Block{}, job, *block_shared);
        break;
      case Kind::warp:
        gm::match_ordered(coop::Warp{}, job, *warp_shared);
        break;
      case Kind::partitioned:
        gm::match_partitioned(coop::Warp{}, job, *warp_shared);
        break;
      case Kind::hash:
        gm::match_hash(coop::Block{}, job, *hash_shared, hash_smem.data(), strategy);
        break;
    }
  });
  Result r;
  r.status = words[3];
  r.outcome.umq.assign(umq.begin(), umq.begin() + words[0]);
  r.outcome.prq.assign(prq.begin(), prq.begin() + words[1]);
  r.outcome.matches.assign(matches.begin(), matches.begin() + words[2]);
  return r;
}

gm::WorkloadSpec spec(std::mt19937_64& rng, uint32_t max_len, bool wildcards = true) {
  gm::WorkloadSpec s;
  s.umq = rng() % (max_len / 2 + 1);
  s.prq = rng() % (max_len + 1);
  s.msgs = rng() % (max_len + 1);
  s.recvs = rng() % (max_len / 2 + 1);
  s.comms = 1 + static_cast<int32_t>(rng() % 2);
  s.sources = 1 + static_cast<int32_t>(rng() % 6);
  s.tags = 1 + static_cast<int32_t>(rng() % 10);
  s.any_source = wildcards ? (rng() % 3) * 0.2 : 0.0;
  s.any_tag = wildcards ? (rng() % 3) * 0.2 : 0.0;
  s.multiplicity = (rng() % 3) * 0.25;
  return s;
}

void expect_reference(Kind kind, const gm::Batch& b, uint32_t threads, uint64_t seed, const char* what) {
  const Result r = run(kind, b, threads);
  ASSERT_EQ(r.status & (gm::kStatusInfo - 1), 0u) << what << ": " << gm::status_text(r.status) << "\n"
                                                  << seed_note(seed);
  ASSERT_EQ(gm::describe_difference(gm::match_reference(b), r.outcome), "") << what << ", " << threads << " threads\n"
                                                                            << seed_note(seed) << "\n"
                                                                            << gm::describe(b, 12);
}

}  // namespace

TEST(EmulatedEngines, WarpMatcherEqualsReference) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 16; ++i) {
    const gm::Batch b = gm::random_batch(spec(rng, i < 10 ? 40 : 150), rng);
    expect_reference(Kind::warp, b, 32, seed, "warp matcher");
  }
}

TEST(EmulatedEngines, BlockMatcherEqualsReference) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 10; ++i) {
    const gm::Batch b = gm::random_batch(spec(rng, i < 4 ? 40 : 160), rng);
    expect_reference(Kind::block, b, i % 3 == 0 ? 32 : (i % 3 == 1 ? 64 : 128), seed, "block matcher");
  }
}

TEST(EmulatedEngines, BlockMatcherAcrossTiles) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  // More than one tile of 1024 targets, few probes (the emulator is slow), and a window
  // boundary (more than 128 probes).
  for (uint32_t probes : {12u, 136u}) {
    gm::WorkloadSpec s;
    s.prq = probes < 100 ? 2100 : 1100;
    s.msgs = probes;
    s.umq = probes < 100 ? 1030 : 0;
    s.recvs = probes / 8;
    s.sources = 3;
    s.tags = 400;
    s.any_source = 0.01;
    s.any_tag = 0.002;
    const gm::Batch b = gm::random_batch(s, rng);
    expect_reference(Kind::block, b, 128, seed, "block matcher, several tiles");
  }
}

TEST(EmulatedEngines, NoUnexpectedAndPartitioned) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 5; ++i) {
    gm::Batch b = gm::random_batch(spec(rng, 100, true), rng);
    b.umq.clear();  // and keep only messages that find a receive: the mode's precondition
    const gm::Outcome ref = gm::match_reference(b);
    uint32_t top = 0;
    for (const auto& m : b.msgs) top = std::max(top, m.handle);
    std::vector<char> matched(top + 1, 0);
    for (const auto& m : ref.matches)  // phase-1 matches only: receives of the PRQ (handles 0..)
      if (m.recv < b.prq.size()) matched[m.msg] = 1;
    std::erase_if(b.msgs, [&](const gm::Envelope& e) { return !matched[e.handle]; });
    expect_reference(Kind::no_unexpected_block, b, 64, seed, "no-unexpected");
    gm::Batch p = gm::random_batch(spec(rng, 100, false), rng);
    for (auto& part : gm::partition_by_source(p))
      expect_reference(Kind::partitioned, part.batch, 32, seed, "partitioned");
  }
  gm::Batch any;
  any.recvs = {{0, gm::kAnySource, 1, 0}};
  EXPECT_TRUE(run(Kind::partitioned, any, 32).status & gm::kStatusWildcard);
  gm::Batch unexpected;
  unexpected.msgs = {{0, 1, 1, 0}};
  const Result r = run(Kind::no_unexpected_block, unexpected, 64);
  EXPECT_TRUE(r.status & gm::kStatusUnexpected);
  EXPECT_EQ(r.outcome.umq.size(), 1u);
}

TEST(EmulatedEngines, HashIsLegalForEveryStrategy) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  for (auto strategy : {gm::HashStrategy::automatic, gm::HashStrategy::linear_probing, gm::HashStrategy::double_hashing,
                        gm::HashStrategy::chained}) {
    for (int i = 0; i < 6; ++i) {
      const gm::Batch b = gm::random_batch(spec(rng, i < 3 ? 50 : 400, false), rng);
      const Result r = run(Kind::hash, b, 64, strategy);
      ASSERT_EQ(r.status & (gm::kStatusInfo - 1), 0u) << gm::status_text(r.status);
      ASSERT_EQ(gm::check_legal_matching(b, r.outcome), "") << "strategy " << static_cast<int>(strategy) << "\n"
                                                            << seed_note(seed) << "\n"
                                                            << gm::describe(b, 12);
    }
  }
  // Beyond kHashSharedTargets the tables live in the job's global storage.
  gm::WorkloadSpec s;
  s.prq = 1500;
  s.msgs = 300;
  s.sources = 4;
  s.tags = 50;
  s.multiplicity = 0.3;
  const gm::Batch big = gm::random_batch(s, rng);
  for (auto strategy : {gm::HashStrategy::double_hashing, gm::HashStrategy::chained}) {
    const Result r = run(Kind::hash, big, 64, strategy);
    ASSERT_EQ(r.status & (gm::kStatusInfo - 1), 0u) << gm::status_text(r.status);
    ASSERT_EQ(gm::check_legal_matching(big, r.outcome), "") << seed_note(seed);
  }
  gm::Batch wild;
  wild.prq = {{0, 1, gm::kAnyTag, 0}};
  EXPECT_TRUE(run(Kind::hash, wild, 64).status & gm::kStatusWildcard);
}

// The warp-parallel queue's protocol on emulated warps of one block: producers and consumers
// share a small queue; every element must come out exactly once, each producer's in order.
TEST(EmulatedWarpQueue, NoLossNoDuplicatesInOrder) {
  constexpr uint32_t kProducers = 3, kConsumers = 3, kPer = 150, kTotal = kProducers * kPer;
  for (uint32_t capacity : {32u, 64u, 1024u}) {
    std::vector<unsigned long long> slots(capacity), stamps(capacity, 0), by_ticket(kTotal, ~0ull);
    gm::QueueControl control{};
    gm::WarpQueue<unsigned long long, gm::QueueScope::device> q{slots.data(), stamps.data(), &control, capacity,
                                                                10ull * 1000 * 1000 * 1000};
    unsigned consumed = 0, failures = 0;
    simt::launch((kProducers + kConsumers) * 32, [&] {
      const uint32_t w = threadIdx.x / 32, lane = threadIdx.x % 32;
      if (w < kProducers) {
        for (uint32_t seq = 0, round = 0; seq < kPer;) {
          const uint32_t n = std::min<uint32_t>(1 + (w * 5 + round++ * 11) % 32, kPer - seq);
          if (!gm::enqueue(coop::Warp{}, q, (static_cast<unsigned long long>(w) << 32) | (seq + lane), lane < n)) {
            if (lane == 0) __atomic_fetch_add(&failures, 1u, __ATOMIC_SEQ_CST);
            return;
          }
          seq += n;
        }
        return;
      }
      for (uint32_t round = 0;; ++round) {
        const uint32_t done =
            __shfl_sync(0xffffffffu, lane == 0 ? __atomic_load_n(&consumed, __ATOMIC_SEQ_CST) : 0u, 0);
        if (done >= kTotal) return;
        unsigned long long item = 0, ticket = 0;
        const uint32_t n = gm::try_dequeue(coop::Warp{}, q, item, 1 + (round * 7 + w) % 32, &ticket);
        if (lane < n && ticket < kTotal) by_ticket[ticket] = item;
        if (lane == 0 && n) __atomic_fetch_add(&consumed, n, __ATOMIC_SEQ_CST);
        if (n == 0) __nanosleep(100);
      }
    });
    ASSERT_EQ(failures, 0u) << "capacity " << capacity;
    ASSERT_EQ(control.errors.value, 0ull);
    ASSERT_EQ(consumed, kTotal);
    EXPECT_EQ(control.read_commit.value, kTotal);
    std::vector<uint32_t> next(kProducers, 0);
    for (uint32_t t = 0; t < kTotal; ++t) {
      const uint32_t p = static_cast<uint32_t>(by_ticket[t] >> 32), s = static_cast<uint32_t>(by_ticket[t]);
      ASSERT_LT(p, kProducers) << "capacity " << capacity << ", ticket " << t << " holds " << by_ticket[t];
      ASSERT_EQ(s, next[p]) << "capacity " << capacity << ": producer " << p << " out of order or lost at ticket " << t;
      ++next[p];
    }
  }
}
