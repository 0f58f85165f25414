#pragma once
// Inside a Plan: the job's pattern and schedule, this PE's part of the signal protocol, and the
// executor that runs this PE's steps (CPU copies on host-memory PEs, streams and kernels on GPU
// PEs).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/patterns/plan.hpp"

namespace gpucomm::patterns::detail {

// This PE's signals and waits at one phase boundary.
struct BoundarySync {
  struct Signal {
    int pe;         // the target
    uint32_t slot;  // its word in the target's copy of the sync block
  };
  struct Wait {
    int pe;  // the PE that signals
    uint32_t slot;
    SyncReason reason;
  };
  std::vector<Signal> signals;
  std::vector<Wait> waits;
  bool empty() const { return signals.empty() && waits.empty(); }
};
// Per boundary 0..phases: what `rank` signals and waits for.
std::vector<BoundarySync> sync_program(const Schedule& s, int rank);

// What an executor works with. The sync block is symmetric (one word per slot, the largest slot
// count of any PE); epochs count launches and only grow (a wait is for "slot >= epoch").
struct PlanContext {
  Runtime* rt = nullptr;
  int rank = 0;
  const GlobalPattern* pattern = nullptr;
  const Schedule* schedule = nullptr;
  const CompileOptions* options = nullptr;
  uint64_t* sync_block = nullptr;    // nullptr when no PE signals another
  uint64_t* host_epoch = nullptr;    // host-memory PEs: the launch count
  uint64_t* device_epoch = nullptr;  // GPU PEs: the launch count, in device memory
  // This PE's address of a region's buffer (its first byte), or nullptr when not reachable.
  char* address(const GlobalRegion& r) const;
  // "plan 'halo' (halo, strategy left_right)"
  std::string name() const;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void launch(Stream stream) = 0;
  virtual void synchronize() = 0;
  // The schedule's addresses changed (Plan::rebind): resolve them again.
  virtual void rebind() = 0;
  virtual bool uses_graph() const { return false; }
};

std::unique_ptr<Executor> make_host_executor(const PlanContext& c);
std::unique_ptr<Executor> make_gpu_executor(const PlanContext& c);

// The words of the symmetric sync block a failed wait was on, explained: "the exit signal of
// rank 3 (its transfers into this PE completed)".
std::string explain_slot(const Schedule& s, int rank, uint32_t slot);

}  // namespace gpucomm::patterns::detail

namespace gpucomm::patterns {

struct Plan::Impl {
  Runtime* rt = nullptr;
  CompileOptions options;
  GlobalPattern pattern;
  Schedule schedule;
  std::string choice;  // why this strategy: "cost model (...)", "autotune", "caller"
  bool autotuned = false;
  bool collective = false;  // compiled together with the other PEs
  uint64_t* sync_block = nullptr;
  size_t sync_words = 0;
  uint64_t host_epoch = 0;
  uint64_t* device_epoch = nullptr;
  detail::PlanContext context;
  std::unique_ptr<detail::Executor> executor;

  void make_executor();
  ~Impl();
};

}  // namespace gpucomm::patterns
