#pragma once
// The GPUCOMM_COLL_* settings, the pool of team workspaces in the symmetric heap, and a team's
// state: its workspace, CollHandle and topology summary (docs/COLLECTIVES.md, "The workspace").
#include <cstdint>
#include <memory>

#include "gpucomm/collectives/cost_model.hpp"
#include "gpucomm/collectives/layout.hpp"
#include "gpucomm/collectives/plan.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::coll::detail {

struct Settings {
  uint32_t channels = 8;        // GPUCOMM_COLL_MAX_CTAS
  uint64_t scratch = 0;         // GPUCOMM_COLL_SCRATCH: source slots per channel and parity (and the ring region)
  uint64_t ll = 0;              // GPUCOMM_COLL_LL: LL bytes per channel and parity
  uint64_t pool = 0;            // GPUCOMM_COLL_POOL (0: automatic)
  uint32_t threads = 512;       // GPUCOMM_COLL_THREADS
  bool force_protocol = false;  // GPUCOMM_COLL_FORCE_PROTOCOL
};
Settings read_settings();
// The sizes of a workspace for a team of n.
Sizes sizes_for(const Settings& s, int n);
uint64_t workspace_bytes(const Settings& s, int n);

// The symmetric pool the team workspaces come from; team workspaces are carved out at an offset
// the members agree on (the largest of their cursors) and never reused while the pool lives, so
// a new workspace is all zeros.
class Pool {
 public:
  Pool(Runtime& rt, const Settings& s);  // collective over the world
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  void release();  // collective over the world; idempotent
  char* base() const { return base_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t cursor = 0;
  uint64_t instance = 0;  // names the pool's gathers (Collectives objects are made collectively)

 private:
  Runtime& rt_;
  char* base_ = nullptr;
  uint64_t bytes_ = 0;
};

struct TeamState {
  Team team;  // keeps the member table of the TeamHandle alive
  CollHandle h{};
  TopoSummary topo;
  Sizes sizes;
};

// Collective over `team`: agrees on the workspace's offset and the topology summary, writes the
// node table, fills the handle and its automatic-selection rules.
std::unique_ptr<TeamState> make_team_state(Runtime& rt, Pool& pool, const Settings& s, const Team& team,
                                           CollDiag* diag);

}  // namespace gpucomm::coll::detail
