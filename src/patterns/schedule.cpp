// Strategy names, which strategies apply, building and choosing a schedule.
#include "gpucomm/patterns/schedule.hpp"

#include <algorithm>
#include <cmath>

#include "gpucomm/core/error.hpp"
#include "schedule_build.hpp"

namespace gpucomm::patterns {

const char* strategy_name(Strategy s) noexcept {
  switch (s) {
    case Strategy::automatic:
      return "automatic";
    case Strategy::all_at_once:
      return "all_at_once";
    case Strategy::round:
      return "round";
    case Strategy::left_right:
      return "left_right";
    case Strategy::pairwise:
      return "pairwise";
    case Strategy::tree:
      return "tree";
    case Strategy::ring:
      return "ring";
  }
  return "?";
}

const std::vector<Strategy>& all_strategies() {
  static const std::vector<Strategy> all{Strategy::all_at_once, Strategy::round, Strategy::left_right,
                                         Strategy::pairwise,    Strategy::tree,  Strategy::ring};
  return all;
}

Strategy parse_strategy(const std::string& name) {
  if (name == "automatic" || name == "auto") return Strategy::automatic;
  for (Strategy s : all_strategies())
    if (name == strategy_name(s)) return s;
  std::string names = "automatic";
  for (Strategy s : all_strategies()) names += std::string(", ") + strategy_name(s);
  raise_arg("patterns::parse_strategy", "name", "'" + name + "' is not a strategy (" + names + ")");
}

const char* sync_reason_name(SyncReason r) noexcept {
  switch (r) {
    case SyncReason::entry:
      return "entry";
    case SyncReason::exit:
      return "exit";
    case SyncReason::phase:
      return "phase";
    case SyncReason::dependency:
      return "dependency";
  }
  return "?";
}

bool applies(Strategy s, const GlobalPattern& g, const Fabric& f, std::string* why) {
  switch (s) {
    case Strategy::automatic:
    case Strategy::all_at_once:
    case Strategy::round:
    case Strategy::left_right:
    case Strategy::pairwise:
      return true;
    case Strategy::tree:
      return detail::broadcast_shaped(g, f, why);
    case Strategy::ring:
      if (detail::broadcast_shaped(g, f, nullptr)) return true;
      return detail::all_gather_shaped(g, f, why);
  }
  return false;
}

namespace {

// Ring broadcast: the number of chunks the cost model prefers (powers of two up to 64).
uint32_t best_chunks(const GlobalPattern& g, const Fabric& f, const ScheduleOptions& o) {
  if (o.chunks > 0) return o.chunks;
  if (!detail::broadcast_shaped(g, f, nullptr)) return 1;
  uint32_t best = 1;
  double best_t = 0;
  for (uint32_t c = 1; c <= 64; c *= 2) {
    Schedule s = detail::finish(detail::ring_steps(g, f, c), Strategy::ring, false, c, g, f, o);
    if (c == 1 || s.estimate_us < best_t) {
      best = c;
      best_t = s.estimate_us;
    }
  }
  return best;
}

}  // namespace

Schedule build_schedule(const GlobalPattern& g, const Fabric& f, Strategy s, const ScheduleOptions& o) {
  std::string why;
  if (s == Strategy::automatic) raise(Errc::internal, "patterns::build_schedule", "strategy automatic");
  if (!applies(s, g, f, &why)) {
    raise_arg("patterns::compile", "strategy",
              std::string(strategy_name(s)) + " cannot serve '" + g.name + "' (" + kind_name(g.kind) + "): " + why);
  }
  switch (s) {
    case Strategy::automatic:
      break;
    case Strategy::all_at_once:
      return detail::finish(detail::direct_steps(g, f), s, false, 1, g, f, o);
    case Strategy::round: {
      auto steps = detail::direct_steps(g, f);
      detail::phases_round(steps);
      return detail::finish(std::move(steps), s, true, 1, g, f, o);
    }
    case Strategy::left_right: {
      auto steps = detail::direct_steps(g, f);
      detail::phases_left_right(steps, g, f);
      return detail::finish(std::move(steps), s, true, 1, g, f, o);
    }
    case Strategy::pairwise: {
      auto steps = detail::direct_steps(g, f);
      detail::phases_pairwise(steps, f);
      return detail::finish(std::move(steps), s, true, 1, g, f, o);
    }
    case Strategy::tree:
      return detail::finish(detail::tree_steps(g, f), s, false, 1, g, f, o);
    case Strategy::ring: {
      const uint32_t c = best_chunks(g, f, o);
      return detail::finish(detail::ring_steps(g, f, c), s, false, c, g, f, o);
    }
  }
  raise(Errc::internal, "patterns::build_schedule", "unknown strategy");
}

Schedule plan_schedule(const GlobalPattern& g, const Fabric& f, const ScheduleOptions& o) {
  if (o.strategy != Strategy::automatic) return build_schedule(g, f, o.strategy, o);
  Schedule best;
  bool have = false;
  for (Strategy s : all_strategies()) {
    if (!applies(s, g, f, nullptr)) continue;
    Schedule c = build_schedule(g, f, s, o);
    // Ties (within 0.1%) go to the earlier, simpler strategy.
    if (!have || c.estimate_us < best.estimate_us * 0.999) {
      best = std::move(c);
      have = true;
    }
  }
  return best;
}

}  // namespace gpucomm::patterns
