#include "gpucomm/runtime/team.hpp"

#include "gpucomm/core/error.hpp"

namespace gpucomm {

namespace {
void require_valid(const void* s, const char* op) {
  if (!s) raise(Errc::invalid_argument, op, "the team is invalid (this PE is not a member)");
}
}  // namespace

int Team::size() const {
  require_valid(state_.get(), "Team::size");
  return static_cast<int>(state_->members.size());
}
int Team::rank() const {
  require_valid(state_.get(), "Team::rank");
  return state_->my_index;
}
int Team::id() const {
  require_valid(state_.get(), "Team::id");
  return state_->id;
}
const std::vector<int>& Team::members() const {
  require_valid(state_.get(), "Team::members");
  return state_->members;
}
int Team::world_rank(int team_rank) const {
  require_valid(state_.get(), "Team::world_rank");
  GPUCOMM_CHECK_ARG(team_rank >= 0 && team_rank < size(), "Team::world_rank", "team_rank",
                    std::to_string(team_rank) + " is outside 0.." + std::to_string(size() - 1));
  return state_->members[static_cast<size_t>(team_rank)];
}
int Team::team_rank(int world_rank) const {
  require_valid(state_.get(), "Team::team_rank");
  for (size_t i = 0; i < state_->members.size(); ++i)
    if (state_->members[i] == world_rank) return static_cast<int>(i);
  return -1;
}

}  // namespace gpucomm
