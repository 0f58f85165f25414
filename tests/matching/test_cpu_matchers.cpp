// Property tests: the list matcher equals the reference on random workloads; the checker accepts
// the reference and rejects broken outcomes; partitioning by source is exact.
#include <gtest/gtest.h>

#include <random>

#include "gpucomm/core/error.hpp"
#include "gpucomm/matching/checker.hpp"
#include "gpucomm/matching/list_matcher.hpp"
#include "gpucomm/matching/oracle.hpp"
#include "gpucomm/matching/workload.hpp"
#include "test_support.hpp"

namespace gm = gpucomm::matching;
using gpucomm::testing::seed_note;
using gpucomm::testing::test_seed;

namespace {
gm::WorkloadSpec random_spec(std::mt19937_64& rng, uint32_t max_len) {
  std::uniform_int_distribution<uint32_t> len(0, max_len);
  const double rates[] = {0.0, 0.05, 0.2, 0.5};
  const double mult[] = {0.0, 0.06, 0.12, 0.5};
  gm::WorkloadSpec s;
  s.umq = len(rng);
  s.prq = len(rng);
  s.msgs = len(rng);
  s.recvs = len(rng);
  s.comms = 1 + static_cast<int32_t>(rng() % 3);
  s.sources = 1 + static_cast<int32_t>(rng() % 16);
  s.tags = 1 + static_cast<int32_t>(rng() % 64);
  s.any_source = rates[rng() % 4];
  s.any_tag = rates[rng() % 4];
  s.multiplicity = mult[rng() % 4];
  return s;
}
}  // namespace

TEST(ListMatcher, EqualsReferenceOnRandomWorkloads) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 3000; ++iter) {
    const auto spec = random_spec(rng, iter % 10 == 0 ? 400 : 40);
    const gm::Batch b = gm::random_batch(spec, rng);
    const std::string diff = gm::describe_difference(gm::match_reference(b), gm::ListMatcher::run(b));
    ASSERT_EQ(diff, "") << seed_note(seed) << ", iteration " << iter << "\n" << gm::describe(b);
  }
}

TEST(ListMatcher, CarriesStateAcrossBatches) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  gm::ListMatcher lm;
  gm::Batch state;
  uint32_t next = 0;
  for (int step = 0; step < 200; ++step) {
    auto spec = random_spec(rng, 30);
    spec.umq = spec.prq = 0;
    gm::Batch b = gm::random_batch(spec, rng);
    for (auto& e : b.msgs) e.handle = next++;
    for (auto& e : b.recvs) e.handle = next++;
    b.umq = state.umq;
    b.prq = state.prq;
    const gm::Outcome ref = gm::match_reference(b);
    std::vector<gm::Match> got;
    lm.process(b.msgs, b.recvs, got);
    gm::Outcome o{got, lm.umq(), lm.prq()};
    ASSERT_EQ(gm::describe_difference(ref, o), "") << seed_note(seed) << ", step " << step;
    ASSERT_EQ(lm.umq_size(), ref.umq.size());
    ASSERT_EQ(lm.prq_size(), ref.prq.size());
    state.umq = ref.umq;
    state.prq = ref.prq;
  }
}

TEST(Checker, AcceptsTheReference) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 500; ++iter) {
    const gm::Batch b = gm::random_batch(random_spec(rng, 60), rng);
    ASSERT_EQ(gm::check_legal_matching(b, gm::match_reference(b)), "") << seed_note(seed) << "\n" << gm::describe(b);
  }
}

TEST(Checker, RejectsBrokenOutcomes) {
  gm::Batch b;
  b.umq = {{0, 1, 1, 0}};
  b.msgs = {{0, 2, 2, 1}};
  b.recvs = {{0, 1, 1, 0}, {0, 2, 2, 1}};
  const gm::Outcome good = gm::match_reference(b);
  ASSERT_EQ(gm::check_legal_matching(b, good), "");
  ASSERT_EQ(good.matches.size(), 2u);

  gm::Outcome wrong_pair = good;  // swapped partners do not fit
  std::swap(wrong_pair.matches[0].recv, wrong_pair.matches[1].recv);
  EXPECT_NE(gm::check_legal_matching(b, wrong_pair).find("do not match"), std::string::npos);

  gm::Outcome twice = good;
  twice.matches[1] = twice.matches[0];
  EXPECT_NE(gm::check_legal_matching(b, twice).find("twice"), std::string::npos);

  gm::Outcome not_maximal;  // nothing matched, everything queued
  not_maximal.umq = {b.umq[0], b.msgs[0]};
  not_maximal.prq = b.recvs;
  EXPECT_NE(gm::check_legal_matching(b, not_maximal).find("not maximal"), std::string::npos);

  gm::Outcome lost = good;  // a matched message still queued
  lost.umq.push_back(b.msgs[0]);
  EXPECT_NE(gm::check_legal_matching(b, lost), "");

  gm::Batch old_pair;
  old_pair.umq = {{0, 1, 1, 0}};
  old_pair.prq = {{0, 1, 1, 0}};
  gm::Outcome pairs_old{{{0, 0}}, {}, {}};
  EXPECT_NE(gm::check_legal_matching(old_pair, pairs_old).find("old"), std::string::npos);
}

TEST(Partitioning, MergedPartitionsEqualTheWhole) {
  const uint64_t seed = test_seed();
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 1000; ++iter) {
    auto spec = random_spec(rng, 80);
    spec.any_source = 0;
    const gm::Batch b = gm::random_batch(spec, rng);
    std::vector<gm::Outcome> parts;
    for (const auto& p : gm::partition_by_source(b)) {
      for (const auto* q : {&p.batch.umq, &p.batch.prq, &p.batch.msgs, &p.batch.recvs})
        for (const auto& e : *q) ASSERT_TRUE(e.comm == p.comm && e.src == p.src);
      parts.push_back(gm::match_reference(p.batch));
    }
    ASSERT_EQ(gm::describe_difference(gm::match_reference(b), gm::merge_partitions(b, parts)), "")
        << seed_note(seed) << "\n"
        << gm::describe(b);
  }
}

TEST(Partitioning, RefusesAnySource) {
  gm::Batch b;
  b.recvs = {{0, gm::kAnySource, 1, 0}};
  EXPECT_THROW(gm::partition_by_source(b), gpucomm::Error);
}

TEST(Workload, PairedBatchOrders) {
  std::mt19937_64 rng(1);
  for (auto order : {gm::Order::best, gm::Order::average, gm::Order::worst}) {
    for (bool unexpected : {false, true}) {
      const gm::Batch b = gm::paired_batch(300, order, 0.12, unexpected, rng);
      const gm::Outcome o = gm::match_reference(b);
      EXPECT_EQ(o.matches.size(), 300u) << gm::order_name(order);
      EXPECT_TRUE(o.umq.empty() && o.prq.empty());
      if (order == gm::Order::best && !unexpected) {
        for (uint32_t i = 0; i < 300; ++i) EXPECT_EQ(o.matches[i].recv, i);
      }
    }
  }
}
