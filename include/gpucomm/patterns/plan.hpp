#pragma once
// A Plan: a pattern compiled for this PE. compile() checks the pattern (overlapping
// destinations, transfers that read what others write without a dependency, buffers this PE
// cannot reach), agrees with the other PEs on the job's pattern, picks a strategy (cost model,
// autotune or the caller's), an engine per transfer and a stream per link, and prepares the
// signals between PEs. launch() runs it: asynchronous on GPU PEs (stream-ordered, optionally as
// one CUDA graph), a synchronous series of CPU copies on host-memory PEs.
#include <cstdint>
#include <memory>
#include <string>

#include "gpucomm/patterns/cost_model.hpp"
#include "gpucomm/patterns/pattern.hpp"
#include "gpucomm/patterns/schedule.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::patterns {

// What to do with pageable host memory on GPU PEs (pinned memory is used as it is).
enum class Pageable : uint8_t {
  register_memory,  // cudaHostRegister it for the plan's lifetime (staged, with a warning, if that fails)
  stage,            // copy through pinned staging buffers (with a warning: slower)
  refuse,           // raise Errc::invalid_argument naming the transfer
};

struct CompileOptions {
  Strategy strategy = Strategy::automatic;  // the user's choice wins over the cost model
  Engine engine = Engine::automatic;        // for transfers that leave their engine automatic
  bool graph = false;                       // GPU PEs: capture the plan into a CUDA graph; launch() replays it
  bool autotune = false;  // time every applicable strategy once, keep the fastest (cached per process)
  // Not collective: the pattern touches only this PE's memory (no other PE compiles with it).
  bool local = false;
  bool entry_sync = true;  // multi-PE plans: a transfer into or out of a PE waits until that PE launched
  bool exit_sync = true;   // multi-PE plans: a PE's launch completes when the transfers touching it did
  Pageable pageable = Pageable::register_memory;
  uint32_t chunks = 0;          // ring broadcast: pipeline chunks (0: the cost model picks)
  CostModel model{};            // the cost model's constants
  int autotune_iterations = 5;  // timed launches per candidate (after one warm-up)
};

class Plan {
 public:
  Plan();
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;
  // Collective when the plan signals other PEs (it frees its symmetric sync words); waits for
  // its launches to complete.
  ~Plan();

  bool valid() const { return impl_ != nullptr; }
  // GPU PEs: enqueues the plan on `stream` and returns (nullptr: the legacy default stream).
  // Work enqueued on `stream` before runs before the plan; work after runs after it.
  // Host-memory PEs: runs the plan now (`stream` must be nullptr).
  void launch(Stream stream = nullptr);
  // Waits until the plan's launches completed; raises the failure of a device wait.
  void synchronize();
  // Every buffer of the plan that starts at `old_ptr` (host, device, or symmetric) starts at
  // `new_ptr` from the next launch on; the buffer keeps its size and place. The destinations are
  // checked again. No recompilation: strategy, engines and streams stay. Waits for earlier
  // launches. Collective for symmetric buffers of a multi-PE plan (same arguments everywhere).
  // new_bytes: the size of the memory at new_ptr when the caller knows it (an error names it when
  // the plan reaches past it); kUnknownBytes trusts the caller, as with any pointer argument.
  static constexpr size_t kUnknownBytes = ~size_t{0};
  void rebind(const void* old_ptr, void* new_ptr, size_t new_bytes = kUnknownBytes);

  const Schedule& schedule() const;
  Strategy strategy() const { return schedule().strategy; }
  bool uses_graph() const;
  // Whether the strategy came from the autotune cache or a timing run.
  bool autotuned() const;
  // A readable summary: strategy and why, phases, each step of this PE (engine, link, bytes).
  std::string describe() const;

  struct Impl;

 private:
  friend Plan compile(Runtime& rt, const Pattern& p, const CompileOptions& o);
  std::unique_ptr<Impl> impl_;
};

// Compiles `p` for this PE. Collective over the world (every PE calls it, with its own pattern
// and the same strategy and sync options) unless o.local.
Plan compile(Runtime& rt, const Pattern& p, const CompileOptions& o = {});

}  // namespace gpucomm::patterns
