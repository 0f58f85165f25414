// The strategies that keep one step per transfer and only choose phases: all-at-once (phase 0
// for all), round, left-right and pairwise.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "box.hpp"
#include "schedule_build.hpp"

namespace gpucomm::patterns::detail {

Endpoint endpoint_of_region(const GlobalRegion& r, const Fabric& f);

std::vector<Step> direct_steps(const GlobalPattern& g, const Fabric& f) {
  std::vector<Step> steps;
  steps.reserve(g.transfers.size());
  for (uint32_t i = 0; i < g.transfers.size(); ++i) {
    const GlobalTransfer& t = g.transfers[i];
    Step s;
    s.transfer = i;
    s.owner = t.owner;
    s.dst = t.dst;
    s.src = t.src;
    merge_rows(s.dst.box, s.src.box);
    s.from = endpoint_of_region(t.src, f);
    s.to = endpoint_of_region(t.dst, f);
    s.engine = t.engine;
    s.after = t.after;
    steps.push_back(std::move(s));
  }
  return steps;
}

void phases_round(std::vector<Step>& steps) {
  // The k-th step of every (owner, source, destination) link goes to phase k.
  std::map<std::tuple<int, int, bool, int, bool>, uint32_t> seen;
  for (Step& s : steps) s.phase = seen[{s.owner, s.from.pe, s.from.device, s.to.pe, s.to.device}]++;
}

void phases_left_right(std::vector<Step>& steps, const GlobalPattern& g, const Fabric& f) {
  // Axes in increasing order, each with a "right" phase then a "left" one; steps within one
  // endpoint take the first phase.
  std::set<int> axes;
  for (const Step& s : steps) axes.insert(static_cast<int>(g.transfers[s.transfer].axis));
  std::map<int, uint32_t> axis_rank;
  for (int a : axes) axis_rank.emplace(a, static_cast<uint32_t>(axis_rank.size()));
  for (Step& s : steps) {
    const GlobalTransfer& t = g.transfers[s.transfer];
    int dir = t.direction > 0 ? 1 : (t.direction < 0 ? -1 : 0);  // the sign is all that counts
    if (dir == 0) {
      const int a = f.order(s.from), b = f.order(s.to);
      dir = a == b ? 1 : (b > a ? 1 : -1);
    }
    s.phase = 2 * axis_rank[static_cast<int>(t.axis)] + (dir < 0 ? 1 : 0);
  }
}

void phases_pairwise(std::vector<Step>& steps, const Fabric& f) {
  // Endpoints by topological order; pairs of endpoints that exchange, ordered like the even-odd
  // then odd-even phases of a line; each pair takes the first phase in which neither endpoint is
  // busy yet.
  std::vector<int> orders;
  for (const Step& s : steps) {
    orders.push_back(f.order(s.from));
    orders.push_back(f.order(s.to));
  }
  std::sort(orders.begin(), orders.end());
  orders.erase(std::unique(orders.begin(), orders.end()), orders.end());
  auto pos = [&](Endpoint e) {
    return static_cast<int>(std::lower_bound(orders.begin(), orders.end(), f.order(e)) - orders.begin());
  };
  using Pair = std::pair<int, int>;
  std::set<std::tuple<int, int, int>> keyed;  // (parity of the lower end, lower, upper)
  for (const Step& s : steps) {
    const int a = pos(s.from), b = pos(s.to);
    if (a != b) keyed.insert({std::min(a, b) % 2, std::min(a, b), std::max(a, b)});
  }
  std::map<Pair, uint32_t> phase_of;
  std::map<int, std::set<uint32_t>> busy;  // endpoint position -> phases it is in
  for (const auto& [parity, lo, hi] : keyed) {
    uint32_t k = 0;
    while (busy[lo].count(k) || busy[hi].count(k)) ++k;
    busy[lo].insert(k);
    busy[hi].insert(k);
    phase_of[{lo, hi}] = k;
  }
  for (Step& s : steps) {
    const int a = pos(s.from), b = pos(s.to);
    s.phase = a == b ? 0 : phase_of[{std::min(a, b), std::max(a, b)}];
  }
}

}  // namespace gpucomm::patterns::detail
