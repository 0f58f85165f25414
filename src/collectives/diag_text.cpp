#include "diag_text.hpp"

#include <cstdio>

namespace gpucomm::coll::detail {

std::string call_context(CollOp op, Algorithm a, int team_slot, int team_size, uint64_t seq, uint64_t epoch,
                         uint32_t channel) {
  char b[200];
  std::snprintf(b, sizeof b, "collective %s on team %d (%d PEs), sequence %llu, round %llu (%s, channel %u)",
                op_name(op), team_slot, team_size, static_cast<unsigned long long>(seq),
                static_cast<unsigned long long>(epoch), algorithm_name(a), channel);
  return b;
}

namespace {

// The peer's root or channel count when the 17-bit hash of (count, root, channels) is explained by
// that field alone (tried against every team rank and channel count); "" when it is not.
std::string hashed_field_text(uint32_t theirs, const HashedArgs& a) {
  const CollOp op = sig_op(theirs);
  const uint64_t count = op == CollOp::alltoallv ? 0 : a.count;
  auto same_hash = [&](int root, uint32_t channels) {
    return (signature(op, sig_type(theirs), sig_redop(theirs), sig_algorithm(theirs), count, root, channels) >> 15) ==
           (theirs >> 15);
  };
  for (int r = -1; r < a.team_size; ++r) {
    if (r != a.root && same_hash(r, a.channels)) {
      return " root differs (" + std::to_string(a.root) + " here, " + std::to_string(r) + " there, by the hash)";
    }
  }
  for (uint32_t c = 1; c <= static_cast<uint32_t>(kMaxChannels); ++c) {
    if (c != a.channels && same_hash(a.root, c)) {
      return " channel count differs (" + std::to_string(a.channels) + " here, " + std::to_string(c) +
             " there, by the hash)";
    }
  }
  return " count differs (" + std::to_string(a.count) + " here; each PE's message names its own)";
}

}  // namespace

std::string mismatch_text(uint32_t mine, uint32_t theirs, int peer, int peer_world, const HashedArgs& args) {
  std::string s = "team rank " + std::to_string(peer) + " (world " + std::to_string(peer_world) +
                  ") called it with other arguments:";
  bool any = false;
  auto field = [&](const char* what, const char* here, const char* there) {
    s += std::string(any ? ";" : "") + " " + what + " differs (" + here + " here, " + there + " there)";
    any = true;
  };
  if (sig_op(mine) != sig_op(theirs)) field("operation", op_name(sig_op(mine)), op_name(sig_op(theirs)));
  if (sig_type(mine) != sig_type(theirs)) field("data type", type_name(sig_type(mine)), type_name(sig_type(theirs)));
  if (sig_redop(mine) != sig_redop(theirs))
    field("reduction", redop_name(sig_redop(mine)), redop_name(sig_redop(theirs)));
  if (sig_algorithm(mine) != sig_algorithm(theirs)) {
    field("algorithm", algorithm_name(sig_algorithm(mine)), algorithm_name(sig_algorithm(theirs)));
  }
  if ((mine >> 15) != (theirs >> 15)) {
    s += std::string(any ? ";" : "") + hashed_field_text(theirs, args);
    any = true;
  }
  if (!any) s += " (signature differs)";
  return s;
}

std::string missing_text(const std::vector<int>& team_ranks, const std::vector<int>& world_ranks, int peer,
                         uint64_t seen_word, bool is_flag) {
  std::string ranks, worlds;
  for (size_t i = 0; i < team_ranks.size(); ++i) {
    ranks += (i ? ", " : "") + std::to_string(team_ranks[i]);
    worlds += (i ? ", " : "") + std::to_string(world_ranks[i]);
  }
  std::string s =
      "waiting for team rank" + std::string(team_ranks.size() > 1 ? "s " : " ") + ranks + " (world " + worlds + ")";
  if (is_flag) {
    const uint32_t stamp = static_cast<uint32_t>(seen_word);
    s += seen_word == 0
             ? "; team rank " + std::to_string(peer) + " has raised no flag on this channel yet"
             : "; team rank " + std::to_string(peer) + "'s last flag is from round " + std::to_string(stamp >> 12) +
                   " step " + std::to_string(stamp & 0xfff) + " (rounds modulo 2^20)";
  } else {
    s += "; its acknowledgement stands at round " + std::to_string(seen_word);
  }
  return s;
}

std::string describe(const CollDiag& d, const std::vector<int>& members) {
  std::string s = call_context(static_cast<CollOp>(d.op), static_cast<Algorithm>(d.algorithm), d.team_slot, d.team_size,
                               d.seq, d.epoch, d.channel) +
                  " on team rank " + std::to_string(d.team_rank) + " (world " + std::to_string(d.world_rank) + "): ";
  switch (d.kind) {
    case CollDiag::mismatch:
      return s + mismatch_text(d.sig_mine, d.sig_theirs, d.peer, d.peer_world,
                               HashedArgs{d.count, d.root, d.channels, d.team_size});
    case CollDiag::count_mismatch:
      return s + "alltoallv: team rank " + std::to_string(d.peer) + " sends " + std::to_string(d.seen) +
             " elements to this PE, recv_counts[" + std::to_string(d.peer) + "] is " + std::to_string(d.expected);
    case CollDiag::bad_argument:
      return s + "bad argument (value " + std::to_string(d.seen) + ", limit " + std::to_string(d.expected) + ")";
    default:
      break;
  }
  std::vector<int> ranks, worlds;
  for (int i = 0; i < 1024 && i < d.team_size; ++i) {
    if (d.missing[i / 64] >> (i % 64) & 1) ranks.push_back(i);
  }
  if (ranks.empty()) ranks.push_back(d.peer);
  for (int r : ranks) {
    worlds.push_back(r == d.peer                               ? d.peer_world
                     : static_cast<size_t>(r) < members.size() ? members[static_cast<size_t>(r)]
                                                               : -1);
  }
  char t[64];
  std::snprintf(t, sizeof t, " after %.3f s", static_cast<double>(d.elapsed_ns) / 1e9);
  // An abort's `expected` is the job-state word less one: the first failed PE, or 0xfffffffe when
  // no PE failed first (the launcher is gone).
  const std::string first =
      d.expected == 0xfffffffeull ? std::string("the launcher is gone") : "rank " + std::to_string(d.expected);
  const std::string what = d.kind == CollDiag::aborted
                               ? "aborted (the job failed elsewhere: " + first + ")" + t + " while "
                               : std::string("timed out") + t + " (GPUCOMM_TIMEOUT sets the limit) ";
  return s + what + missing_text(ranks, worlds, d.peer, d.seen, true);
}

}  // namespace gpucomm::coll::detail
