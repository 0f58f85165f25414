// Endpoints' matching (gpucomm/messaging/endpoints_matcher.hpp) against the reference matcher:
// random sequences of arrivals and posts, wildcards included, each step compared with
// match_reference on the same queues. A fresh seed each run (printed on failure).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "gpucomm/matching/batch.hpp"
#include "gpucomm/matching/oracle.hpp"
#include "gpucomm/messaging/endpoints_matcher.hpp"
#include "test_support.hpp"

namespace {

namespace ep = gpucomm::msg::ep;
namespace gm = gpucomm::matching;

struct Shape {
  int srcs;
  int tags;
  int wild_pct;    // receives with a wildcard, percent
  int post_pct;    // events that post a receive, percent
  int finish_pct;  // matched receives given back at once, percent
};

template <class S>
void run_sequence(uint64_t seed, const Shape& sh, int events) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  auto st = std::make_unique<S>();
  ep::init(*st, 0, S::pes);
  gm::Batch ref;                                 // the reference's queues (umq, prq) between steps
  std::vector<uint32_t> handle_of(S::recvs, 0);  // our receive id -> the reference's handle
  std::vector<uint16_t> done;                    // matched receives not yet given back
  uint32_t next_handle = 1;
  for (int e = 0; e < events; ++e) {
    gm::Batch step;
    step.umq = ref.umq;
    step.prq = ref.prq;
    const bool post = pick(100) < sh.post_pct;
    if (post && st->held == S::recvs) {
      // Every entry is held: give back a matched one (a wait) or skip the post.
      if (done.empty()) continue;
      ep::give_recv(*st, done.back());
      done.pop_back();
    }
    if (!post && ep::umq_full(*st)) continue;  // the rings would keep it
    gm::Match ours{0, 0};
    bool matched = false;
    const uint32_t h = next_handle++;
    if (post) {
      int src = pick(sh.srcs), tag = pick(sh.tags);
      if (pick(100) < sh.wild_pct) {
        const int w = pick(3);
        if (w != 1) src = ep::kAnySource;
        if (w != 0) tag = ep::kAnyTag;
      }
      step.recvs.push_back(gm::Envelope{0, src, tag, h});
      const uint32_t i = ep::umq_find(*st, src, tag);
      const uint16_t id = ep::take_recv(*st);
      ASSERT_NE(id, ep::kNone);
      handle_of[id] = h;
      if (i != st->umq_tail) {
        const ep::Unexpected u = st->umq[i & (S::unexp - 1)];
        ep::umq_remove(*st, i);
        ours = {static_cast<uint32_t>(u.ticket), h};
        matched = true;
        done.push_back(id);
      } else {
        st->recv[id].src = src;
        st->recv[id].tag = tag;
        ep::bin_append(*st, id);
      }
    } else {
      const int src = pick(sh.srcs), tag = pick(sh.tags);
      step.msgs.push_back(gm::Envelope{0, src, tag, h});
      const uint16_t id = ep::take_posted(*st, src, tag);
      if (id != ep::kNone) {
        ours = {h, handle_of[id]};
        matched = true;
        st->recv[id].state = ep::kRecvDone;
        done.push_back(id);
      } else {
        ep::umq_push(*st, h, tag, static_cast<uint32_t>(src), 8);
      }
    }
    const gm::Outcome want = gm::match_reference(step);
    ASSERT_EQ(want.matches.size(), matched ? 1u : 0u) << "event " << e << ": " << gm::describe(step);
    if (matched) {
      ASSERT_EQ(want.matches[0].msg, ours.msg) << "event " << e << ": " << gm::describe(step);
      ASSERT_EQ(want.matches[0].recv, ours.recv) << "event " << e << ": " << gm::describe(step);
    }
    ASSERT_EQ(want.prq.size(), st->posted) << "event " << e;
    ref.umq = want.umq;
    ref.prq = want.prq;
    while (!done.empty() && pick(100) < sh.finish_pct) {
      ep::give_recv(*st, done.front());
      done.erase(done.begin());
    }
  }
}

// Small state, four bins per class: many keys share a bin.
using Small = ep::OwnerState<16, 8, 16, 4>;
// The defaults.
using Default = ep::OwnerState<>;
// Deep: hundreds of receives posted.
using Deep = ep::OwnerState<512, 8, 256, 64>;

TEST(EpMatcher, AgreesWithTheReferenceOnRandomSequences) {
  const uint64_t seed = gpucomm::testing::test_seed();
  SCOPED_TRACE(gpucomm::testing::seed_note(seed));
  const Shape shapes[] = {
      {1, 1, 0, 50, 50},    {2, 3, 30, 50, 50}, {4, 6, 50, 60, 30},  {8, 40, 20, 50, 40},
      {3, 1000, 10, 70, 5}, {8, 2, 90, 40, 60}, {1, 8, 100, 50, 50}, {5, 5, 25, 30, 80},
  };
  for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); ++k) {
    SCOPED_TRACE("shape " + std::to_string(k));
    run_sequence<Small>(seed + k, shapes[k], 4000);
    run_sequence<Default>(seed + 100 + k, shapes[k], 4000);
    run_sequence<Deep>(seed + 200 + k, shapes[k], 4000);
  }
}

TEST(EpMatcher, BinsStayConsistentWhenTheMiddleOfABinIsTaken) {
  Small st;
  ep::init(st, 0, 8);
  // Three receives in one bin class (ANY, tag): tags 1, 5, 1 (4 bins: 1 and 5 may share one).
  const int tags[] = {1, 5, 1};
  uint16_t ids[3];
  for (int i = 0; i < 3; ++i) {
    ids[i] = ep::take_recv(st);
    st.recv[ids[i]].src = ep::kAnySource;
    st.recv[ids[i]].tag = tags[i];
    ep::bin_append(st, ids[i]);
  }
  EXPECT_EQ(ep::take_posted(st, 2, 5), ids[1]);
  EXPECT_EQ(ep::take_posted(st, 3, 1), ids[0]);
  EXPECT_EQ(ep::take_posted(st, 3, 5), ep::kNone);
  EXPECT_EQ(ep::take_posted(st, 0, 1), ids[2]);
  EXPECT_EQ(st.posted, 0u);
  for (uint32_t b = 0; b < Small::bins; ++b) {
    EXPECT_EQ(st.bin_head[b], ep::kNone);
    EXPECT_EQ(st.bin_tail[b], ep::kNone);
  }
}

}  // namespace
