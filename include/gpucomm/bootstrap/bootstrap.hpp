#pragma once
// Bootstrap without MPI: rank 0 serves a TCP store (key-value, gathers, barriers); every PE,
// rank 0 included, connects to it with the job's unique id. The connection doubles as the
// job's liveness channel: when a PE dies or aborts, the others learn it from failed()/failure()
// (under `gpucomm run` also through the launcher's lifeline).
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
  // The PE that failed first (-1: none, or not known: the launcher is gone).
  int failed_rank() const;
  void note_local_failure(const std::string& what) const override;
  // What failed on this PE by itself (a wait that timed out or was interrupted), "" if nothing.
  std::string local_failure() const;
  // A barrier of every PE completed after that failure (the program caught it and the job is in
  // step again): finalize() need not abort for it.
  void forgive_local_failure();
  // Fails the job now: every PE learns "rank R aborted: reason" at once (through the store and
  // the launcher). Does not wait; a later finalize() does not wait either.
  void abort(const std::string& reason);
  // The host-mapped word GPU kernels poll (DeviceHandle::job_state): set to the first failed PE's
  // rank + 1 (0xffffffff when no PE failed first: the launcher is gone) from the thread that
  // learns of the failure. nullptr unregisters it; unregister before freeing it.
  void set_job_state_word(uint32_t* word);
  // Barrier, then an orderly goodbye; rank 0 keeps serving until every PE said goodbye. Once the
  // job failed, or after a local failure (which it turns into an abort), it waits for nobody.
  void finalize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_;
  int size_;
  uint64_t collective_seq_ = 0;
  int64_t shutdown_wait_ms_ = 60000;
  bool finalized_ = false;
  std::string how_;
};

}  // namespace gpucomm::bootstrap
