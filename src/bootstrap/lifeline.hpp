#pragma once
// The PE's end of `gpucomm run`'s lifeline: a Unix stream socket the launcher passes to every PE
// (GPUCOMM_LIFELINE=FD:PID, PID being the launcher's). The launcher holds the other end, so EOF
// means the launcher is gone (even killed with SIGKILL, even with a wrapper between it and the
// PE): the job fails. Over it the launcher relays a failure it saw ("abort RANK TEXT\n": a PE that
// exited, maybe before it could tell the store), and the PE reports the first failure it knows of
// ("failed RANK TEXT\n") so that the launcher names the PE that failed first. One per process,
// for the process's lifetime (a process may create several runtimes one after another).
#include <mutex>
#include <string>

#include "job_failure.hpp"

namespace gpucomm::bootstrap {

class Lifeline {
 public:
  // The process's lifeline; null when the process was not started by gpucomm run, or when the
  // variable does not name a socket connected to that launcher (a stale variable inherited by an
  // unrelated program).
  static Lifeline* get();
  // While attached, failures the lifeline learns of are recorded into `f`; detach before `f` dies
  // (detach waits for a recording in progress).
  void attach(JobFailure* f);
  void detach(const JobFailure* f);
  // Tells the launcher which PE failed first (best effort, never blocks).
  void report(int rank, const std::string& why);

 private:
  explicit Lifeline(int fd);
  void watch();
  void deliver(int rank, const std::string& why);

  int fd_;
  std::mutex mu_;
  JobFailure* attached_ = nullptr;
  bool gone_ = false;  // the launcher is gone (EOF seen)
  int gone_rank_ = -1;
  std::string gone_why_;
};

}  // namespace gpucomm::bootstrap
