#pragma once
// What a blocking wait watches besides its own condition: whether the job has failed elsewhere.
// The bootstrap implements it (its connection to the store doubles as the job's liveness
// channel); lower layers take it by pointer, so they need not know the bootstrap.
#include <string>

namespace gpucomm {

class JobLiveness {
 public:
  virtual ~JobLiveness() = default;
  // True once the job failed (a PE died, the store vanished, a PE aborted).
  virtual bool failed() const = 0;
  // Why, naming the PE that failed first.
  virtual std::string failure() const = 0;
  // A wait of this PE failed by itself (timed out, interrupted): the PE is out of step with the
  // others, so it must abort the job instead of finalizing it. Waits call it before they raise;
  // it records and returns (thread-safe; the first note is kept).
  virtual void note_local_failure(const std::string& /*what*/) const {}
};

}  // namespace gpucomm
