#pragma once
// What compiling a pattern produces before anything runs: the job's transfers in a global form,
// and a Schedule - the copies each PE executes (steps), grouped into phases, with the engine and
// stream of each, the dependencies between steps, and the signals between PEs at phase
// boundaries. Pure data, the same on every PE: strategies, the cost model and the tests work on
// it without a GPU or a job (plan_schedule below).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpucomm/patterns/fabric.hpp"
#include "gpucomm/patterns/pattern.hpp"

namespace gpucomm::patterns {

// How the transfers are ordered into phases (docs/PATTERNS.md, "Strategies").
enum class Strategy : uint8_t {
  automatic,    // the cost model picks among the strategies that apply
  all_at_once,  // every transfer in one phase, one stream per link
  round,        // phase k holds the k-th transfer of every link
  left_right,   // every PE sends "right", then "left" (neighbour exchanges)
  pairwise,     // pairs of endpoints exchange; each endpoint in one pair per phase
  tree,         // broadcast: a binomial tree whose first levels cross the slowest links
  ring,         // broadcast (pipelined in chunks) and all-gather: each endpoint forwards to the next
};
const char* strategy_name(Strategy s) noexcept;
// Raises Errc::invalid_argument naming the accepted names.
Strategy parse_strategy(const std::string& name);
// Every strategy but automatic, in the order the cost model breaks ties.
const std::vector<Strategy>& all_strategies();

// A memory a transfer reads or writes, in the job's terms.
struct GlobalRegion {
  Place place = Place::host;
  int pe = 0;            // the PE whose memory it is (the owner for host and device memory)
  uint64_t address = 0;  // symmetric: offset in the heap; host/device: the owner's address
  uint64_t bytes = 0;    // of the buffer
  Box box;
  bool operator==(const GlobalRegion&) const = default;
};

struct GlobalTransfer {
  int owner = 0;
  GlobalRegion dst, src;
  Engine engine = Engine::automatic;
  int8_t direction = 0, axis = 0;
  std::vector<uint32_t> after;  // indices into GlobalPattern::transfers
  std::string label;
};

struct GlobalPattern {
  std::string name = "pattern";
  Kind kind = Kind::custom;
  std::vector<GlobalTransfer> transfers;
};

// Endpoint of a region (host memory of host-memory PEs included).
Endpoint endpoint_of(const GlobalRegion& r, const Fabric& f);

struct Step {
  uint32_t transfer = 0;  // the pattern's transfer this step serves (part of)
  int owner = 0;          // the PE that executes it
  GlobalRegion dst, src;  // a forwarded copy reads another step's destination
  Endpoint from, to;
  uint32_t phase = 0;
  Engine engine = Engine::automatic;  // resolved by the schedule (never automatic)
  uint32_t link = 0;                  // index of the owner's link (from, to): one stream each
  std::vector<uint32_t> after;        // steps (any owner) that complete before this one starts
};

enum class SyncReason : uint8_t {
  entry,       // the target is ready: its earlier work completed (boundary 0)
  exit,        // the source's transfers into or out of the target completed (last boundary)
  phase,       // strict phases: neighbours finished the previous phase
  dependency,  // a step of the target depends on a step of the source
};
const char* sync_reason_name(SyncReason r) noexcept;

// At boundary b (before phase b; boundary `phases` is the end), PE `from` signals PE `to`, which
// waits for it at its boundary `to_boundary` (>= from_boundary). `slot` indexes the target's
// words of the plan's symmetric sync block.
struct SyncEdge {
  int from = 0;
  uint32_t from_boundary = 0;
  int to = 0;
  uint32_t to_boundary = 0;
  uint32_t slot = 0;
  SyncReason reason = SyncReason::entry;
};

struct ScheduleOptions {
  Strategy strategy = Strategy::automatic;
  Engine engine = Engine::automatic;  // default engine of transfers that say automatic
  bool entry_sync = true;             // multi-PE plans: wait until the targets are ready
  bool exit_sync = true;              // multi-PE plans: targets wait until their data arrived
  uint32_t chunks = 0;                // ring broadcast: pipeline chunks (0: the cost model picks)
};

struct Schedule {
  Strategy strategy = Strategy::all_at_once;
  uint32_t phases = 0;
  bool strict_phases = false;  // phase boundaries synchronize neighbouring PEs
  uint32_t chunks = 1;
  std::vector<Step> steps;
  std::vector<SyncEdge> edges;
  std::vector<uint32_t> slots;  // per PE: words of the sync block it waits on
  double estimate_us = 0;       // the cost model's estimate
  // Steps of one owner, and the number of links of each owner.
  std::vector<uint32_t> steps_of(int pe) const;
  uint32_t links_of(int pe) const;
};

// Whether `s` can serve the pattern (tree: one source copied to several endpoints; ring: that,
// or an all-gather). `why` says why not.
bool applies(Strategy s, const GlobalPattern& g, const Fabric& f, std::string* why = nullptr);
// Builds the schedule of one strategy (not automatic). Raises Errc::invalid_argument when it does
// not apply.
Schedule build_schedule(const GlobalPattern& g, const Fabric& f, Strategy s, const ScheduleOptions& o);
// The cost model's estimate of a schedule, in microseconds.
double estimate_us(const Schedule& s, const Fabric& f);
// The chosen schedule: the strategy of `o`, or with automatic the applicable one of least
// estimated time (ties: the order of all_strategies()).
Schedule plan_schedule(const GlobalPattern& g, const Fabric& f, const ScheduleOptions& o);

// Link conflicts of a phase: two different links (endpoint pairs) that use one shared link
// resource at the same time. Returns "phase 1: links 0->1 and 0->2 share gpu0.nvlink.out", ...
std::vector<std::string> link_conflicts(const Schedule& s, const Fabric& f);

}  // namespace gpucomm::patterns
