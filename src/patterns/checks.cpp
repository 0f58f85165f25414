#include "checks.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

#include "box.hpp"

namespace gpucomm::patterns::detail {

namespace {

std::string who(const GlobalPattern& g, uint32_t t) {
  const std::string& l = g.transfers[t].label;
  return "transfer #" + std::to_string(t) + (l.empty() ? "" : " ('" + l + "')");
}

// Which transfers each transfer depends on, directly or not (bit sets).
std::vector<std::vector<uint64_t>> closure(const GlobalPattern& g) {
  const size_t n = g.transfers.size(), words = n / 64 + (n % 64 != 0);  // no n + 63 overflow
  std::vector<std::vector<uint64_t>> reach(n, std::vector<uint64_t>(words, 0));
  std::vector<int> state(n, 0);  // 0 new, 1 visiting, 2 done
  // Depth-first, iteratively; cycles are reported by the schedule's ordering, here they stop.
  for (size_t root = 0; root < n; ++root) {
    if (state[root]) continue;
    std::vector<std::pair<uint32_t, size_t>> stack{{static_cast<uint32_t>(root), 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [t, k] = stack.back();
      const auto& after = g.transfers[t].after;
      if (k < after.size()) {
        const uint32_t d = after[k++];
        if (d < n && state[d] == 0) {
          state[d] = 1;
          stack.emplace_back(d, 0);
        }
        continue;
      }
      for (uint32_t d : after) {
        if (d >= n) continue;
        reach[t][d / 64] |= uint64_t{1} << (d % 64);
        for (size_t w = 0; w < words; ++w) reach[t][w] |= reach[d][w];
      }
      state[t] = 2;
      stack.pop_back();
    }
  }
  return reach;
}

bool ordered(const std::vector<std::vector<uint64_t>>& reach, uint32_t a, uint32_t b) {
  return ((reach[a][b / 64] >> (b % 64)) & 1) || ((reach[b][a / 64] >> (a % 64)) & 1);
}

struct Use {
  uint32_t transfer;
  bool write;
  const GlobalRegion* r;
  uint64_t lo, hi;  // the box's span in the address space
};

}  // namespace

std::vector<std::string> check_memory(const GlobalPattern& g, int rank) {
  std::vector<std::string> out;
  // Uses of the memory this PE answers for, grouped by space.
  std::map<std::pair<int, int>, std::vector<Use>> spaces;  // (place, pe)
  for (uint32_t i = 0; i < g.transfers.size(); ++i) {
    const GlobalTransfer& t = g.transfers[i];
    for (const auto& [r, write] : {std::pair{&t.dst, true}, std::pair{&t.src, false}}) {
      if (r->pe != rank) continue;
      const uint64_t lo = r->address + r->box.offset;
      spaces[{static_cast<int>(r->place), r->pe}].push_back(Use{i, write, r, lo, lo + r->box.span()});
    }
  }
  std::vector<std::vector<uint64_t>> reach;
  for (auto& [space, uses] : spaces) {
    std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.lo < b.lo; });
    for (size_t i = 0; i < uses.size() && out.size() < 10; ++i) {
      for (size_t j = i + 1; j < uses.size() && uses[j].lo < uses[i].hi && out.size() < 10; ++j) {
        const Use &a = uses[i], &b = uses[j];
        if (!a.write && !b.write) continue;
        if (a.transfer == b.transfer && (a.write == b.write)) continue;
        if (!boxes_overlap(a.r->address, a.r->box, b.r->address, b.r->box)) continue;
        const std::string where = std::string(place_name(a.r->place)) + " memory of rank " + std::to_string(rank);
        if (a.write && b.write) {
          out.push_back(who(g, a.transfer) + " and " + who(g, b.transfer) + " write overlapping destinations (" +
                        where + ")");
          continue;
        }
        const Use& w = a.write ? a : b;
        const Use& rd = a.write ? b : a;
        if (w.transfer == rd.transfer) {
          out.push_back(who(g, w.transfer) + " reads bytes it writes (" + where + ")");
          continue;
        }
        if (reach.empty()) reach = closure(g);
        if (!ordered(reach, w.transfer, rd.transfer)) {
          out.push_back(who(g, rd.transfer) + " reads bytes that " + who(g, w.transfer) + " writes (" + where +
                        "), and no dependency orders them (Pattern::depends)");
        }
      }
    }
  }
  return out;
}

std::vector<std::string> check_reach(const Schedule& s, const GlobalPattern& g, const Runtime& rt) {
  std::vector<std::string> out;
  const int me = rt.rank();
  auto& h = const_cast<Runtime&>(rt).heap();
  for (const Step& st : s.steps) {
    if (st.owner != me) continue;
    for (const auto& [r, side] : {std::pair{&st.dst, "dst"}, std::pair{&st.src, "src"}}) {
      if (r->pe == me) continue;
      if (r->place != Place::symmetric) {
        out.push_back(who(g, st.transfer) + ": " + side + " is " + place_name(r->place) + " memory of rank " +
                      std::to_string(r->pe) + ", which rank " + std::to_string(me) + " cannot reach");
        continue;
      }
      if (rt.ptr(h.base() + r->address, r->pe) == nullptr) {
        out.push_back(who(g, st.transfer) + ": " + side + " is rank " + std::to_string(r->pe) +
                      "'s symmetric memory, which rank " + std::to_string(me) + " cannot reach (" +
                      (rt.node_of(r->pe) != rt.node_id() ? "another node" : "no peer mapping") + ")");
      }
    }
    if (out.size() >= 10) break;
  }
  return out;
}

}  // namespace gpucomm::patterns::detail
