// This PE's part of the signal protocol between PEs (docs/PATTERNS.md, "Signals between PEs"):
// at boundary b it stores the launch's epoch into the slots of the PEs it signals at b, then
// waits until each of its slots for b holds at least the epoch.
#include "gpucomm/runtime/runtime.hpp"
#include "plan_impl.hpp"

namespace gpucomm::patterns::detail {

std::vector<BoundarySync> sync_program(const Schedule& s, int rank) {
  std::vector<BoundarySync> b(s.phases + 1);
  for (const SyncEdge& e : s.edges) {
    if (e.from == rank) b.at(e.from_boundary).signals.push_back({e.to, e.slot});
    if (e.to == rank) b.at(e.to_boundary).waits.push_back({e.from, e.slot, e.reason});
  }
  return b;
}

std::string explain_slot(const Schedule& s, int rank, uint32_t slot) {
  for (const SyncEdge& e : s.edges) {
    if (e.to != rank || e.slot != slot) continue;
    const std::string from = "rank " + std::to_string(e.from);
    switch (e.reason) {
      case SyncReason::entry:
        return "the entry signal of " + from + " (it launched the plan)";
      case SyncReason::exit:
        return "the exit signal of " + from + " (its transfers into or out of this PE completed)";
      case SyncReason::phase:
        return "the phase signal of " + from + " (it finished phase " + std::to_string(e.from_boundary - 1) + ")";
      case SyncReason::dependency:
        return "the dependency signal of " + from + " (its steps of phase " + std::to_string(e.from_boundary - 1) +
               " that steps of phase " + std::to_string(e.to_boundary) + " here depend on completed)";
    }
  }
  return "slot " + std::to_string(slot) + " of the plan's sync block";
}

char* PlanContext::address(const GlobalRegion& r) const {
  if (r.place == Place::symmetric) {
    char* sym = rt->heap().base() + r.address;
    if (r.pe == rank) return sym;
    return static_cast<char*>(rt->ptr(sym, r.pe));
  }
  return r.pe == rank ? reinterpret_cast<char*>(static_cast<uintptr_t>(r.address)) : nullptr;
}

std::string PlanContext::name() const {
  return "plan '" + pattern->name + "' (" + kind_name(pattern->kind) + ", strategy " +
         strategy_name(schedule->strategy) + ")";
}

}  // namespace gpucomm::patterns::detail
