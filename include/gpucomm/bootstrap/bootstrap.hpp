#pragma once
// Bootstrap without MPI: rank 0 serves a TCP store (key-value, gathers, barriers); every PE,
// rank 0 included, connects to it with the job's unique id. The connection doubles as the
// job's liveness channel: when a PE dies, the others learn it from failed()/failure().
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/bootstrap/launch_env.hpp"
#include "gpucomm/bootstrap/unique_id.hpp"
#include "gpucomm/core/liveness.hpp"

namespace gpucomm::bootstrap {

class Bootstrap final : public JobLiveness {
 public:
  // Joins the job of `id` as `rank` of `size` (rank 0 starts the store). Like an explicit
  // communicator init: the caller distributes the id (text form) by its own means.
  Bootstrap(const UniqueId& id, int rank, int size);
  // Joins the job this process was started in: gpucomm run, mpirun, srun, torchrun or alone.
  static std::unique_ptr<Bootstrap> from_environment(const LaunchInfo& info);
  ~Bootstrap() override;
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string describe() const;  // how this job bootstrapped, for `gpucomm info` and logs

  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key);  // blocks until set (with the wait timeout)
  // Every PE contributes `mine`; returns the contributions in rank order.
  std::vector<std::string> allgather(const std::string& mine);
  // Gather among a group: `count` members, this PE is `index`; `group` names the group and
  // must be unique per call (callers add a sequence number).
  std::vector<std::string> gather(const std::string& group, int count, int index, const std::string& mine);
  void barrier();
  // Collective consensus check: every PE offers `mine`. Returns the lowest rank whose value
  // differs from this PE's, with that value (rank -1 when every PE offered the same).
  struct Disagreement {
    int rank = -1;
    std::string value;
    explicit operator bool() const { return rank >= 0; }
  };
  Disagreement agree(const std::string& mine);

  bool failed() const override;
  std::string failure() const override;
  // Barrier, then an orderly goodbye; rank 0 keeps serving until every PE said goodbye.
  void finalize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_;
  int size_;
  uint64_t collective_seq_ = 0;
  bool finalized_ = false;
  std::string how_;
};

}  // namespace gpucomm::bootstrap
