// The CPU model: the declared pattern's data movement with plain loops, and the structural
// check that a schedule writes every destination byte exactly once.
#include "gpucomm/patterns/model.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <queue>
#include <tuple>

#include "box.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::patterns::model {

void copy_box(char* dst, const Box& dbox, const char* src, const Box& sbox) {
  const size_t drp = dbox.row_pitch(), dsp = dbox.slice_pitch(), srp = sbox.row_pitch(), ssp = sbox.slice_pitch();
  for (size_t p = 0; p < dbox.planes; ++p) {
    for (size_t r = 0; r < dbox.rows; ++r) {
      std::memmove(dst + dbox.offset + p * dsp + r * drp, src + sbox.offset + p * ssp + r * srp, dbox.width);
    }
  }
}

void apply(const GlobalPattern& g, const Resolve& at) {
  const size_t n = g.transfers.size();
  std::vector<std::vector<uint32_t>> next(n);
  std::vector<uint32_t> pending(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t d : g.transfers[i].after) {
      next.at(d).push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  size_t done = 0;
  while (!ready.empty()) {
    const uint32_t i = ready.top();
    ready.pop();
    ++done;
    const GlobalTransfer& t = g.transfers[i];
    copy_box(at(t.dst), t.dst.box, at(t.src), t.src.box);
    for (uint32_t j : next[i])
      if (--pending[j] == 0) ready.push(j);
  }
  if (done != n) raise_arg("patterns::model::apply", "g", "the dependencies form a cycle");
}

namespace {

using Space = std::tuple<int, int>;  // (place, pe)
struct Interval {
  uint64_t lo, hi;
  int weight;  // +1 per step write, +1000 per pattern destination
};

void add_rows(std::map<Space, std::vector<Interval>>& out, const GlobalRegion& r, int weight) {
  auto& v = out[{static_cast<int>(r.place), r.pe}];
  detail::for_each_row(r.box,
                       [&](size_t off) { v.push_back({r.address + off, r.address + off + r.box.width, weight}); });
}

const char* space_name(int place) {
  return place_name(static_cast<Place>(place));
}

}  // namespace

std::vector<std::string> write_coverage(const GlobalPattern& g, const Schedule& s) {
  constexpr int kPattern = 1000;
  std::map<Space, std::vector<Interval>> rows;
  for (const GlobalTransfer& t : g.transfers) add_rows(rows, t.dst, kPattern);
  for (const Step& st : s.steps) add_rows(rows, st.dst, 1);
  std::vector<std::string> problems;
  for (auto& [space, v] : rows) {
    // Sweep: the sum of weights over every elementary piece of the address space.
    std::vector<std::pair<uint64_t, int>> events;
    events.reserve(v.size() * 2);
    for (const Interval& i : v) {
      events.emplace_back(i.lo, i.weight);
      events.emplace_back(i.hi, -i.weight);
    }
    std::sort(events.begin(), events.end());
    int level = 0;
    for (size_t k = 0; k + 1 <= events.size(); ++k) {
      level += events[k].second;
      if (k + 1 == events.size() || events[k + 1].first == events[k].first) continue;
      const uint64_t lo = events[k].first, hi = events[k + 1].first;
      const int pattern = level / kPattern, steps = level % kPattern;
      if (level == 0 || (pattern == 1 && steps == 1)) continue;
      if (problems.size() < 20) {
        problems.push_back(std::string(space_name(std::get<0>(space))) + " memory of rank " +
                           std::to_string(std::get<1>(space)) + " bytes [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "): " + (pattern ? "a destination" : "not a destination") +
                           ", written by " + std::to_string(steps) + " step(s)");
      }
    }
  }
  return problems;
}

}  // namespace gpucomm::patterns::model
