#include <gtest/gtest.h>

#include <fstream>

#include "dumpi_writer.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/trace/functions.hpp"
#include "gpucomm/trace/queue_snapshot.hpp"
#include "gpucomm/trace/stats.hpp"

namespace gpucomm::trace {
namespace {

TEST(CountHistogram, QuantilesMatchPythonStatistics) {
  CountHistogram h;
  for (int v : {8, 1536, 1536, 432, 3888, 1944}) h.add(v);
  Summary s = h.summary();
  EXPECT_EQ(s.n, 6u);
  EXPECT_EQ(s.min, 8);
  EXPECT_EQ(s.max, 3888);
  EXPECT_EQ(s.median, 1536);  // (1536 + 1536) / 2
  h.add(5);
  h.add(7);
  EXPECT_EQ(h.summary().median, 984);        // even count: mean of 432 and 1536
  EXPECT_DOUBLE_EQ(h.quantile(0.25), 7.75);  // numpy: 7 + 0.75 * (8 - 7)
  auto bins = h.log2_bins();
  ASSERT_FALSE(bins.empty());
  EXPECT_EQ(bins.front().lo, 4);
}

TEST(CountHistogram, Log2BinsKeepTheEmptyBinsOfAGap) {
  CountHistogram h;
  for (int v : {0, 8, 9, 4096}) h.add(v);
  auto bins = h.log2_bins();
  // [0,1) then [1,2) ... [4096,8192): 14 bins, only three of them non-empty.
  ASSERT_EQ(bins.size(), 14u);
  EXPECT_EQ(bins[0].lo, 0);
  EXPECT_EQ(bins[0].count, 1u);
  EXPECT_EQ(bins[1].lo, 1);
  EXPECT_EQ(bins[1].count, 0u);
  EXPECT_EQ(bins[4].lo, 8);
  EXPECT_EQ(bins[4].count, 2u);
  EXPECT_EQ(bins[5].count, 0u);
  EXPECT_EQ(bins[13].lo, 4096);
  EXPECT_EQ(bins[13].hi, 8192);
  EXPECT_EQ(bins[13].count, 1u);
  uint64_t total = 0;
  for (auto& b : bins) total += b.count;
  EXPECT_EQ(total, 4u);
}

TEST(WindowPeak, CountsEventsInsideTheWindow) {
  WindowPeak w(1000);
  for (int64_t t : {0, 100, 999, 1000, 5000, 5001}) w.add(t);
  EXPECT_EQ(w.peak(), 3u);  // 0, 100, 999 lie within [0, 1000)
}

TEST(TimeSeries, MergesBinsToStayBounded) {
  TimeSeries ts(10, 8);
  for (int64_t t = 0; t < 1000; ++t) ts.add(t);
  EXPECT_LE(ts.bins().size(), 8u);
  uint64_t total = 0;
  for (auto c : ts.bins()) total += c;
  EXPECT_EQ(total, 1000u);
}

TEST(Functions, NamesAndIdsRoundTrip) {
  EXPECT_EQ(function_name(fid::Isend), "MPI_Isend");
  EXPECT_EQ(function_id("MPI_Waitall"), fid::Waitall);
  EXPECT_EQ(function_id("Allreduce"), fid::Allreduce);
  EXPECT_EQ(function_class(fid::Comm_split), FuncClass::admin);
  EXPECT_EQ(function_class(fid::Alltoallv), FuncClass::collective);
  EXPECT_EQ(function_name(60000), "DUMPI_function_60000");
}

TEST(QueueSnapshot, RoundTripsAndRejectsTruncation) {
  testing::TempDir dir("snap");
  std::vector<QueueSnapshot> snaps(2);
  snaps[0].rank = 3;
  snaps[0].time_s = 1.25;
  snaps[0].umq = {{2, 1, 7, 64}, {2, 0, 7, -1}};
  snaps[0].prq = {{2, kSnapshotAny, 9, 8}};
  snaps[1].rank = 0;
  snaps[1].prq = {{2, 4, kSnapshotAny, 16}};
  const std::string p = (dir.path / "q.bin").string();
  write_queue_snapshots(p, snaps);
  EXPECT_EQ(read_queue_snapshots(p), snaps);
  EXPECT_TRUE(envelope_matches(snaps[0].prq[0], {2, 5, 9, 0}));
  EXPECT_FALSE(envelope_matches(snaps[0].prq[0], {3, 5, 9, 0}));

  const auto full = std::filesystem::file_size(p);
  std::filesystem::resize_file(p, full - 5);
  try {
    read_queue_snapshots(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("byte offset"), std::string::npos) << e.what();
  }
  std::ofstream(p) << "not a snapshot";
  EXPECT_THROW(read_queue_snapshots(p), Error);
}

}  // namespace
}  // namespace gpucomm::trace
