#pragma once
// A team: an ordered subset of the world's PEs. Teams are values (cheap to copy); the world
// and node-local teams come with the runtime, others from Runtime::split. Each live team holds
// one of kMaxTeams (64) synchronization slots on every member PE: the world slot 0, the node
// slot 1, and up to 62 split teams alive at once. Runtime::device_team gives kernels a TeamHandle.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace gpucomm {

class Team {
 public:
  Team() = default;  // an invalid team (not a member)
  bool valid() const { return state_ != nullptr; }
  int size() const;
  int rank() const;                     // this PE's index in the team
  int world_rank(int team_rank) const;  // raises on a bad index
  int team_rank(int world_rank) const;  // -1 if not a member
  const std::vector<int>& members() const;
  int id() const;  // slot of the team's synchronization flags

 private:
  friend class Runtime;
  struct State {
    int id = 0;
    int my_index = 0;
    std::vector<int> members;
    uint64_t barrier_epoch = 0;                     // host-PE dissemination barrier count on this PE
    uint64_t collective_seq = 0;                    // names of the team's bootstrap collectives
    std::shared_ptr<std::atomic<uint64_t>> slots;   // the runtime's slot bitmap; freed on destruction
    std::shared_ptr<const int32_t> device_members;  // GPU PEs: the member table in device memory
    ~State() {
      if (slots && id >= 2) slots->fetch_and(~(uint64_t(1) << id));
    }
  };
  explicit Team(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

}  // namespace gpucomm
