#pragma once
// Queries on a TeamHandle (gpucomm/base/handle.hpp) that host and device code share: team rank
// <-> world rank, and the world team of a DeviceHandle. Teams come from Runtime::device_team();
// several may be used at once (at most kMaxTeams alive per PE).
#include "gpucomm/base/handle.hpp"
#include "gpucomm/base/hd.hpp"

namespace gpucomm {

// World rank of team member `i` (0 <= i < t.size).
GPUCOMM_HD int team_world_rank(const TeamHandle& t, int i) {
  return t.stride != 0 ? t.start + i * t.stride : t.members[i];
}

// Team rank of world rank `pe`, or -1 when `pe` is not a member.
GPUCOMM_HD int team_rank_of(const TeamHandle& t, int pe) {
  if (t.stride != 0) {
    const int d = pe - t.start;
    if (d % t.stride != 0) return -1;
    const int i = d / t.stride;
    return i >= 0 && i < t.size ? i : -1;
  }
  for (int i = 0; i < t.size; ++i)
    if (t.members[i] == pe) return i;
  return -1;
}

// The world as a team (slot 0), made from the device handle alone.
GPUCOMM_HD TeamHandle world_team(const DeviceHandle& h) {
  TeamHandle t{};
  t.magic = kTeamMagic;
  t.version = kHandleVersion;
  t.bytes = sizeof(TeamHandle);
  t.slot = 0;
  t.size = h.size;
  t.rank = h.rank;
  t.start = 0;
  t.stride = 1;
  t.members = nullptr;
  return t;
}

}  // namespace gpucomm
