// Hand-written cases of the batch semantics, checked against the reference and the list matcher.
#include <gtest/gtest.h>

#include "gpucomm/matching/list_matcher.hpp"
#include "gpucomm/matching/oracle.hpp"

namespace gm = gpucomm::matching;
using gm::Envelope;
using gm::kAnySource;
using gm::kAnyTag;

namespace {
Envelope E(int c, int s, int t, uint32_t h) {
  return Envelope{c, s, t, h};
}

struct Expect {
  std::vector<std::pair<uint32_t, uint32_t>> matches;  // (msg, recv) handles in order
  std::vector<uint32_t> umq, prq;                      // handles in order
};

void check(const gm::Batch& b, const Expect& x) {
  for (int which = 0; which < 2; ++which) {
    SCOPED_TRACE(which == 0 ? "reference" : "list matcher");
    const gm::Outcome o = which == 0 ? gm::match_reference(b) : gm::ListMatcher::run(b);
    std::vector<std::pair<uint32_t, uint32_t>> m;
    m.reserve(o.matches.size());
    for (auto& p : o.matches) m.push_back({p.msg, p.recv});
    std::vector<uint32_t> u, r;
    for (auto& e : o.umq) u.push_back(e.handle);
    for (auto& e : o.prq) r.push_back(e.handle);
    EXPECT_EQ(m, x.matches) << gm::describe(b);
    EXPECT_EQ(u, x.umq) << gm::describe(b);
    EXPECT_EQ(r, x.prq) << gm::describe(b);
  }
}
}  // namespace

TEST(MatchingSemantics, EmptyBatch) {
  check({}, {});
}

TEST(MatchingSemantics, EmptyQueuesEverythingIsAppended) {
  gm::Batch b;
  b.msgs = {E(0, 1, 1, 10), E(0, 2, 2, 11)};
  b.recvs = {E(0, 3, 3, 20)};
  check(b, {{}, {10, 11}, {20}});
}

TEST(MatchingSemantics, AnySourceTakesEarliestArrivedMessage) {
  gm::Batch b;
  b.umq = {E(0, 2, 5, 1), E(0, 1, 5, 2)};
  b.recvs = {E(0, kAnySource, 5, 7)};
  check(b, {{{1, 7}}, {2}, {}});
}

TEST(MatchingSemantics, AnyTagAndBothWildcards) {
  gm::Batch b;
  b.umq = {E(0, 1, 9, 1), E(0, 2, 4, 2), E(1, 2, 4, 3)};
  b.recvs = {E(0, 2, kAnyTag, 7), E(1, kAnySource, kAnyTag, 8), E(0, kAnySource, kAnyTag, 9)};
  check(b, {{{2, 7}, {3, 8}, {1, 9}}, {}, {}});
}

TEST(MatchingSemantics, NonOvertakingSameSource) {
  gm::Batch b;
  b.umq = {E(0, 1, 7, 1), E(0, 1, 7, 2), E(0, 1, 7, 3)};
  b.recvs = {E(0, 1, 7, 10), E(0, 1, 7, 11)};
  check(b, {{{1, 10}, {2, 11}}, {3}, {}});
}

TEST(MatchingSemantics, EarliestPostedReceiveWins) {
  gm::Batch b;
  b.prq = {E(0, 4, 4, 1), E(0, kAnySource, kAnyTag, 2), E(0, 1, 7, 3)};
  b.msgs = {E(0, 1, 7, 10), E(0, 1, 7, 11), E(0, 1, 7, 12)};
  check(b, {{{10, 2}, {11, 3}}, {12}, {1}});
}

TEST(MatchingSemantics, CommunicatorsAreSeparate) {
  gm::Batch b;
  b.prq = {E(1, kAnySource, kAnyTag, 1)};
  b.msgs = {E(0, 1, 1, 10), E(2, 1, 1, 11), E(1, 5, 5, 12)};
  check(b, {{{12, 1}}, {10, 11}, {}});
}

TEST(MatchingSemantics, NewReceiveSeesThisBatchsUnmatchedMessages) {
  gm::Batch b;
  b.umq = {E(0, 9, 9, 1)};
  b.msgs = {E(0, 3, 3, 10)};
  b.recvs = {E(0, 3, 3, 20), E(0, 9, 9, 21)};
  check(b, {{{10, 20}, {1, 21}}, {}, {}});
}

TEST(MatchingSemantics, MessagesMatchBeforeReceivesArePosted) {
  gm::Batch b;
  b.prq = {E(0, 1, 1, 1)};
  b.msgs = {E(0, 1, 1, 10)};
  b.recvs = {E(0, kAnySource, kAnyTag, 20)};
  check(b, {{{10, 1}}, {}, {20}});
}

TEST(MatchingSemantics, OldEntriesNeverPairWithEachOther) {
  gm::Batch b;  // an inconsistent state: the batch alone decides what matches
  b.umq = {E(0, 1, 1, 1)};
  b.prq = {E(0, 1, 1, 2)};
  check(b, {{}, {1}, {2}});
}

TEST(MatchingSemantics, AllMatch) {
  gm::Batch b;
  Expect x;
  for (uint32_t i = 0; i < 50; ++i) {
    b.prq.push_back(E(0, static_cast<int>(i % 5), static_cast<int>(i), i));
    b.msgs.push_back(E(0, static_cast<int>((49 - i) % 5), static_cast<int>(49 - i), 100 + i));
    x.matches.push_back({100 + i, 49 - i});
  }
  check(b, x);
}

TEST(MatchingSemantics, NoneMatch) {
  gm::Batch b;
  Expect x;
  for (uint32_t i = 0; i < 20; ++i) {
    b.umq.push_back(E(0, 1, static_cast<int>(i), i));
    b.prq.push_back(E(0, 2, static_cast<int>(i), i));
    b.msgs.push_back(E(0, 3, static_cast<int>(i), 100 + i));
    b.recvs.push_back(E(0, 4, kAnyTag, 100 + i));
  }
  for (uint32_t i = 0; i < 20; ++i) x.umq.push_back(i);
  for (uint32_t i = 0; i < 20; ++i) x.umq.push_back(100 + i);
  for (uint32_t i = 0; i < 20; ++i) x.prq.push_back(i);
  for (uint32_t i = 0; i < 20; ++i) x.prq.push_back(100 + i);
  check(b, x);
}

TEST(MatchingSemantics, WildcardReceiveDoesNotBlockLaterSpecificOnes) {
  gm::Batch b;
  b.prq = {E(0, kAnySource, 3, 1), E(0, 2, kAnyTag, 2)};
  b.msgs = {E(0, 2, 5, 10), E(0, 7, 3, 11), E(0, 2, 3, 12)};
  check(b, {{{10, 2}, {11, 1}}, {12}, {}});
}
