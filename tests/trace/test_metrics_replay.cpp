// Known-answer tests: synthetic traces whose metrics and queue contents are worked out by hand.
#include <gtest/gtest.h>

#include <sstream>

#include "gpucomm/trace/analysis.hpp"
#include "scenarios.hpp"

namespace gpucomm::trace {
namespace {
using namespace testing;

TEST(TraceMetrics, ScenarioAPointToPointAndTimes) {
  TempDir dir("a");
  write_scenario_a(dir.path);
  Analysis a = analyze(TraceSet::open(dir.path.string()));
  ASSERT_EQ(a.ranks.size(), 2u);
  const RankMetrics& r0 = a.ranks[0];
  EXPECT_EQ(r0.sends, 2u);
  EXPECT_EQ(r0.proc_null_sends, 1u);
  EXPECT_EQ(r0.send_bytes.summary().total, 32.0);  // 4 ints + 2 doubles
  EXPECT_EQ(r0.send_functions.at("Isend"), 2u);
  EXPECT_EQ(r0.nonblocking_sends, 2u);
  EXPECT_EQ(r0.send_peers, (std::set<int32_t>{1}));
  EXPECT_EQ(r0.collectives.at("Allreduce"), 1u);
  EXPECT_EQ(r0.coll_bytes.summary().total, 24.0);
  // Times: app 210 us; MPI 10+1+1+1+1+4+10+10 = 38 us; communicating calls (Isend x2, Send,
  // Waitall, Allreduce) 1+1+1+4+10 = 17 us over the span 100..130 us.
  EXPECT_NEAR(r0.t_app_s(), 210e-6, 1e-12);
  EXPECT_NEAR(r0.s_mpi(), 38.0 / 210.0, 1e-12);
  EXPECT_NEAR(r0.s_comm(), 17.0 / 30.0, 1e-12);
  EXPECT_NEAR(r0.s_admin(), 1.0 - 17.0 / 38.0, 1e-12);

  const RankMetrics& r1 = a.ranks[1];
  EXPECT_EQ(r1.recvs, 2u);
  EXPECT_EQ(r1.any_source_recvs, 1u);
  EXPECT_EQ(r1.any_source_unresolved, 0u);
  EXPECT_EQ(r1.recv_peers, (std::set<int32_t>{0}));  // the wildcard receive resolved to 0
  EXPECT_EQ(r1.max_outstanding_recv_requests, 2u);
  EXPECT_EQ(r1.recv_bytes.summary().median, 16.0);
  EXPECT_EQ(a.pairs[0][1].sends, 2u);
  EXPECT_EQ(a.pairs[0][1].recvs, 2u);
  EXPECT_EQ(a.pairs[0][1].send_bytes, a.pairs[0][1].recv_bytes);
  EXPECT_TRUE(a.warnings.empty()) << a.warnings.front();
}

// A .meta file whose numprocs is below the run's rank files: the analysis warns about the files it
// leaves out, and the pair check fails on the messages to them instead of saying ok.
TEST(TraceMetrics, MetaBelowTheRankFilesFailsThePairCheck) {
  TempDir dir("short-meta");
  write_scenario_a(dir.path);
  write_meta(dir.path, "a", 1);  // the run has a-0000.bin and a-0001.bin
  Analysis a = analyze(TraceSet::open(dir.path.string()));
  ASSERT_EQ(a.ranks.size(), 1u);
  ASSERT_FALSE(a.warnings.empty());
  EXPECT_NE(a.warnings.front().find("numprocs=1, but 1 more rank files"), std::string::npos) << a.warnings.front();
  EXPECT_EQ(a.invalid_peer, 2u);  // rank 0's two sends to rank 1
  std::ostringstream json;
  write_json(a, json, -1);
  EXPECT_NE(json.str().find("\"pair_count_check\":false"), std::string::npos);
  EXPECT_NE(json.str().find("\"sends_outside_run\":2"), std::string::npos);
}

TEST(TraceReplay, ScenarioAQueues) {
  TempDir dir("a");
  write_scenario_a(dir.path);
  Analysis a = analyze(TraceSet::open(dir.path.string()));
  const QueueStats& q = a.queues[1];
  EXPECT_EQ(q.expected, 1u);
  EXPECT_EQ(q.unexpected, 1u);
  EXPECT_DOUBLE_EQ(q.unexpected_share(), 0.5);
  EXPECT_EQ(q.prq_length.values(), (std::map<int64_t, uint64_t>{{1, 2}}));
  EXPECT_EQ(q.prq_depth.values(), (std::map<int64_t, uint64_t>{{1, 2}}));
  EXPECT_EQ(q.umq_length.values(), (std::map<int64_t, uint64_t>{{0, 1}, {1, 1}}));
  EXPECT_EQ(q.umq_depth.values(), (std::map<int64_t, uint64_t>{{0, 1}, {1, 1}}));
  EXPECT_EQ(q.max_umq, 1u);
  EXPECT_EQ(q.max_prq, 1u);
  EXPECT_EQ(q.left_umq + q.left_prq, 0u);
  EXPECT_EQ(a.queues[0].expected + a.queues[0].unexpected, 0u);
  // Rank 1's largest state: right after the tag-5 message queued behind the posted tag-6 receive.
  ASSERT_EQ(a.snapshots.size(), 1u);
  EXPECT_EQ(a.snapshots[0].rank, 1);
  EXPECT_EQ(a.snapshots[0].umq, (std::vector<QueueEnvelope>{{kCommWorld, 0, 5, 16}}));
  EXPECT_EQ(a.snapshots[0].prq, (std::vector<QueueEnvelope>{{kCommWorld, 0, 6, 16}}));
  EXPECT_NEAR(a.snapshots[0].time_s, 100e-6, 1e-12);
}

TEST(TraceReplay, ScenarioBWorstCaseThenWildcards) {
  TempDir dir("b");
  write_scenario_b(dir.path);
  Analysis a = analyze(TraceSet::open(dir.path.string()));
  const QueueStats& q = a.queues[1];
  EXPECT_EQ(q.unexpected, 5u);
  EXPECT_EQ(q.expected, 0u);
  EXPECT_EQ(q.umq_length.values(), (std::map<int64_t, uint64_t>{{1, 2}, {2, 2}, {3, 1}}));
  EXPECT_EQ(q.umq_depth.values(), (std::map<int64_t, uint64_t>{{1, 3}, {2, 1}, {3, 1}}));
  EXPECT_EQ(q.max_umq, 3u);
  Summary s = q.umq_length.summary();
  EXPECT_EQ(s.median, 2.0);
  EXPECT_EQ(s.max, 3.0);
  ASSERT_FALSE(a.snapshots.empty());
  const QueueSnapshot& snap = a.snapshots[0];
  ASSERT_EQ(snap.umq.size(), 3u);  // tags 1, 2, 3 in arrival order
  for (int k = 0; k < 3; ++k) EXPECT_EQ(snap.umq[k].tag, k + 1);
  EXPECT_NEAR(snap.time_s, 13e-6, 1e-12);
}

TEST(TraceReplay, DirectQueueSemantics) {
  MatchingReplay rp(2);
  P2PEvent recv_any{P2PEvent::recv_post, 1, 1, kCommWorld, kAnySource, kAnyTag, 8, 1};
  P2PEvent recv_t7{P2PEvent::recv_post, 2, 1, kCommWorld, 0, 7, 8, 1};
  P2PEvent send_t7{P2PEvent::send, 3, 0, kCommWorld, 1, 7, 8, 1};
  P2PEvent send_other_comm{P2PEvent::send, 4, 0, 5, 1, 7, 8, 1};
  rp.post(recv_any);
  rp.post(recv_t7);
  rp.arrive(1, 0, send_t7);          // the earlier wildcard receive wins (posted order)
  rp.arrive(1, 0, send_other_comm);  // different communicator: matches nothing
  rp.finish();
  const QueueStats& q = rp.stats(1);
  EXPECT_EQ(q.expected, 1u);
  EXPECT_EQ(q.unexpected, 1u);
  EXPECT_EQ(q.prq_depth.values(), (std::map<int64_t, uint64_t>{{1, 2}}));
  EXPECT_EQ(q.prq_length.values(), (std::map<int64_t, uint64_t>{{1, 1}, {2, 1}}));
  EXPECT_EQ(q.left_prq, 1u);  // the tag-7 receive stays posted
  EXPECT_EQ(q.left_umq, 1u);
}

}  // namespace
}  // namespace gpucomm::trace
