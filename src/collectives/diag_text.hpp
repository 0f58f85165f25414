#pragma once
// The texts of collective failures, shared by host-memory PEs (raised at once) and GPU PEs (from
// the CollDiag record a kernel left): who waited for what, whose arguments differ and how.
#include <cstdint>
#include <string>
#include <vector>

#include "gpucomm/collectives/layout.hpp"

namespace gpucomm::coll::detail {

// "collective allreduce on team 0 (4 PEs), sequence 17, round 53 (oneshot, channel 0)"
std::string call_context(CollOp op, Algorithm a, int team_slot, int team_size, uint64_t seq, uint64_t epoch,
                         uint32_t channel);
// This PE's arguments that the signature hashes (count, root, channels), so that a mismatch can
// name them and, where the hash identifies it, the peer's root or channel count.
struct HashedArgs {
  uint64_t count;
  int32_t root;
  uint32_t channels;
  int team_size;
};
// "team rank 1 (world 1) called it with other arguments: reduction differs (sum here, max there); ..."
std::string mismatch_text(uint32_t mine, uint32_t theirs, int peer, int peer_world, const HashedArgs& args);
// "waiting for team ranks 2, 3 (world 2, 3); team rank 2 last seen at round 51"
std::string missing_text(const std::vector<int>& team_ranks, const std::vector<int>& world_ranks, int peer,
                         uint64_t seen_word, bool is_flag);
// The whole message of a CollDiag record; `members`: the team's world ranks when known.
std::string describe(const CollDiag& d, const std::vector<int>& members);

}  // namespace gpucomm::coll::detail
