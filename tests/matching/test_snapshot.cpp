#include <gtest/gtest.h>

#include "gpucomm/core/error.hpp"
#include "gpucomm/matching/oracle.hpp"
#include "gpucomm/matching/snapshot.hpp"

namespace gm = gpucomm::matching;

TEST(Snapshot, ParsesTheDocumentedFormat) {
  const auto s = gm::parse_snapshots(R"({"snapshots": [
      {"app": "lulesh", "rank": 3, "umq": [[0, 1, 5], [0, 2, 5]], "prq": [[0, -1, 7], [1, 4, -1]]},
      {"app": 12, "rank": 0, "umq": [], "prq": []}], "version": 1})");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].app, "lulesh");
  EXPECT_EQ(s[0].rank, 3);
  ASSERT_EQ(s[0].umq.size(), 2u);
  EXPECT_EQ(s[0].umq[1].src, 2);
  EXPECT_EQ(s[0].umq[1].handle, 1u);
  ASSERT_EQ(s[0].prq.size(), 2u);
  EXPECT_EQ(s[0].prq[0].src, gm::kAnySource);
  EXPECT_EQ(s[0].prq[1].tag, gm::kAnyTag);
  EXPECT_EQ(s[1].app, "12");
  EXPECT_TRUE(s[1].umq.empty());
}

TEST(Snapshot, RejectsBadInput) {
  for (const char* bad : {"", "{}", R"({"snapshots": 3})", R"({"snapshots": [{"umq": [[0, 1]]}]})",
                          R"({"snapshots": [{"umq": [[0, -1, 2]]}]})", R"({"snapshots": [{"prq": [[0, -2, 2]]}]})",
                          R"({"snapshots": [{"umq": [[0, 1.5, 2]]}]})", R"({"snapshots": [)"}) {
    EXPECT_THROW(gm::parse_snapshots(bad), gpucomm::Error) << bad;
  }
}

TEST(Snapshot, DrainsMatchEveryEntry) {
  const auto s = gm::parse_snapshots(
      R"({"snapshots": [{"umq": [[0, 1, 5], [0, 1, 5], [0, 2, 6]], "prq": [[0, -1, 7], [0, 3, -1], [0, 3, 4]]}]})");
  const gm::Outcome u = gm::match_reference(gm::drain_umq(s[0]));
  EXPECT_EQ(u.matches.size(), 3u);
  EXPECT_TRUE(u.umq.empty() && u.prq.empty());
  const gm::Outcome p = gm::match_reference(gm::drain_prq(s[0]));
  EXPECT_EQ(p.matches.size(), 3u);
  EXPECT_TRUE(p.umq.empty() && p.prq.empty());
}
