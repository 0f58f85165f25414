// The versioned handles: host-side refusal of wrong magic, version or size, and the team rank
// translations shared by host and device code.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpucomm/base/handle.hpp"
#include "gpucomm/base/ops.hpp"
#include "gpucomm/base/team.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm {
namespace {

DeviceHandle good_handle() {
  DeviceHandle h{};
  h.magic = kHandleMagic;
  h.version = kHandleVersion;
  h.bytes = sizeof(DeviceHandle);
  h.rank = 1;
  h.size = 4;
  return h;
}

std::string refusal(const DeviceHandle& h) {
  try {
    validate_handle(h, "test");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    return e.what();
  }
  return "";
}

TEST(Handles, WellFormedHandleIsAccepted) {
  EXPECT_NO_THROW(validate_handle(good_handle(), "test"));
  EXPECT_NO_THROW(validate_handle(world_team(good_handle()), "test"));
}

TEST(Handles, WrongVersionMagicOrSizeIsRefusedNamingTheField) {
  DeviceHandle h = good_handle();
  h.version = kHandleVersion + 1;
  EXPECT_NE(refusal(h).find("version " + std::to_string(kHandleVersion + 1) + " is not this library's"),
            std::string::npos)
      << refusal(h);
  h = good_handle();
  h.magic = 0;
  EXPECT_NE(refusal(h).find("magic 0x0 is not"), std::string::npos) << refusal(h);
  h = good_handle();
  h.bytes = sizeof(DeviceHandle) - 8;
  EXPECT_NE(refusal(h).find("size " + std::to_string(sizeof(DeviceHandle) - 8)), std::string::npos) << refusal(h);
}

TEST(Handles, BadTeamHandlesAreRefused) {
  TeamHandle t = world_team(good_handle());
  t.version = 1;
  EXPECT_THROW(validate_handle(t, "test"), Error);
  t = world_team(good_handle());
  t.slot = kMaxTeams;
  EXPECT_THROW(validate_handle(t, "test"), Error);
  t = world_team(good_handle());
  t.rank = t.size;
  EXPECT_THROW(validate_handle(t, "test"), Error);
  t = world_team(good_handle());
  t.magic = kHandleMagic;  // a device handle's magic is not a team's
  EXPECT_THROW(validate_handle(t, "test"), Error);
}

TEST(Handles, TeamRankTranslationsAgreeForStridesAndTables) {
  // Strided: world ranks 7, 5, 3, 1.
  TeamHandle s = world_team(good_handle());
  s.size = 4;
  s.start = 7;
  s.stride = -2;
  s.rank = 2;
  const std::vector<int32_t> members = {4, 0, 9, 2, 6};
  TeamHandle m = s;
  m.size = static_cast<int32_t>(members.size());
  m.stride = 0;
  m.start = 0;
  m.members = members.data();
  for (int i = 0; i < s.size; ++i) {
    EXPECT_EQ(team_world_rank(s, i), 7 - 2 * i);
    EXPECT_EQ(team_rank_of(s, 7 - 2 * i), i);
  }
  EXPECT_EQ(team_rank_of(s, 2), -1);
  EXPECT_EQ(team_rank_of(s, 9), -1);
  EXPECT_EQ(team_rank_of(s, -1), -1);
  for (int i = 0; i < m.size; ++i) {
    EXPECT_EQ(team_world_rank(m, i), members[static_cast<size_t>(i)]);
    EXPECT_EQ(team_rank_of(m, members[static_cast<size_t>(i)]), i);
  }
  EXPECT_EQ(team_rank_of(m, 1), -1);
  const TeamHandle w = world_team(good_handle());
  EXPECT_EQ(w.slot, 0);
  EXPECT_EQ(w.size, 4);
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(team_world_rank(w, 3), 3);
}

TEST(Ops, CompareAndValidity) {
  EXPECT_TRUE(compare<uint64_t>(3, Cmp::ge, 3));
  EXPECT_FALSE(compare<uint64_t>(2, Cmp::gt, 3));
  EXPECT_TRUE(compare<int32_t>(-1, Cmp::lt, 0));
  EXPECT_TRUE(is_valid(Cmp::le));
  EXPECT_FALSE(is_valid(static_cast<Cmp>(6)));
  EXPECT_FALSE(is_valid(static_cast<SignalOp>(2)));
  EXPECT_FALSE(is_valid(static_cast<AtomicOp>(8)));
  EXPECT_STREQ(cmp_name(Cmp::ne), "!=");
  EXPECT_STREQ(atomic_op_name(AtomicOp::compare_swap), "compare_swap");
  EXPECT_STREQ(signal_op_name(static_cast<SignalOp>(9)), "?");
}

}  // namespace
}  // namespace gpucomm
