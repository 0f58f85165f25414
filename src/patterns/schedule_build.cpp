// The common tail of every strategy: phases that respect the dependencies, engines, links and
// the signals between PEs (docs/PATTERNS.md, "Signals between PEs").
#include "schedule_build.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "gpucomm/core/error.hpp"

namespace gpucomm::patterns {

Endpoint endpoint_of(const GlobalRegion& r, const Fabric& f) {
  const bool gpu_pe = f.is_gpu(r.pe);
  return Endpoint{r.pe, r.place == Place::device || (r.place == Place::symmetric && gpu_pe)};
}

namespace detail {

Endpoint endpoint_of_region(const GlobalRegion& r, const Fabric& f) {
  return endpoint_of(r, f);
}

namespace {

// Phase of each step at least one more than the phases of the steps it depends on.
void order_by_dependencies(std::vector<Step>& steps, const GlobalPattern& g) {
  const size_t n = steps.size();
  std::vector<std::vector<uint32_t>> next(n);
  std::vector<uint32_t> pending(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t d : steps[i].after) {
      next.at(d).push_back(i);
      ++pending[i];
    }
  }
  std::vector<uint32_t> ready;
  for (uint32_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push_back(i);
  size_t done = 0;
  while (!ready.empty()) {
    const uint32_t i = ready.back();
    ready.pop_back();
    ++done;
    for (uint32_t j : next[i]) {
      steps[j].phase = std::max(steps[j].phase, steps[i].phase + 1);
      if (--pending[j] == 0) ready.push_back(j);
    }
  }
  if (done != n) {
    for (uint32_t i = 0; i < n; ++i) {
      if (pending[i] != 0) {
        raise_arg("patterns::compile", "pattern",
                  "the dependencies of '" + g.name + "' form a cycle through " +
                      (g.transfers[steps[i].transfer].label.empty() ? "transfer #" + std::to_string(steps[i].transfer)
                                                                    : g.transfers[steps[i].transfer].label));
      }
    }
  }
}

uint32_t compact_phases(std::vector<Step>& steps) {
  std::set<uint32_t> used;
  for (const Step& s : steps) used.insert(s.phase);
  std::map<uint32_t, uint32_t> renum;
  for (uint32_t p : used) renum.emplace(p, static_cast<uint32_t>(renum.size()));
  for (Step& s : steps) s.phase = renum[s.phase];
  return static_cast<uint32_t>(used.size());
}

std::string who(const GlobalPattern& g, uint32_t t) {
  const std::string& l = g.transfers[t].label;
  return "transfer #" + std::to_string(t) + (l.empty() ? "" : " ('" + l + "')");
}

Engine pick_engine(const Step& s, Engine requested, const GlobalPattern& g, const Fabric& f) {
  const bool host_pe = !f.is_gpu(s.owner);
  const bool host_to_host = !s.from.device && !s.to.device;
  if (host_pe) {
    if (requested != Engine::automatic && requested != Engine::host_copy) {
      raise_arg("patterns::compile", "engine",
                who(g, s.transfer) + " asks for " + engine_name(requested) + ", but rank " + std::to_string(s.owner) +
                    " is a host-memory PE (it copies with the CPU: host_copy)");
    }
    return Engine::host_copy;
  }
  if (host_to_host && requested != Engine::automatic && requested != Engine::host_copy) {
    raise_arg("patterns::compile", "engine",
              who(g, s.transfer) + " asks for " + engine_name(requested) +
                  ", but it copies host memory to host memory, which the CPU does (host_copy)");
  }
  if (requested == Engine::host_copy && !host_to_host) {
    raise_arg(
        "patterns::compile", "engine",
        who(g, s.transfer) + " asks for host_copy, but it moves " + (s.from.device ? "from" : "to") + " GPU memory");
  }
  if (requested != Engine::automatic) return requested;
  if (host_to_host) return Engine::host_copy;
  if (!s.from.device || !s.to.device) return Engine::copy_engine;  // PCIe: the copy engines
  const CostModel& m = f.model();
  const Box& b = s.dst.box;
  if (b.rows == 1 && b.planes == 1) return b.width < m.fused_max_bytes ? Engine::fused : Engine::copy_engine;
  return b.width < m.fused_row_bytes ? Engine::fused : Engine::copy_engine;
}

void assign_links(Schedule& sc) {
  std::map<std::tuple<int, int, bool, int, bool>, uint32_t> links;
  std::map<int, uint32_t> count;
  for (Step& s : sc.steps) {
    auto key = std::tuple(s.owner, s.from.pe, s.from.device, s.to.pe, s.to.device);
    auto it = links.find(key);
    if (it == links.end()) it = links.emplace(key, count[s.owner]++).first;
    s.link = it->second;
  }
}

void add_sync_edges(Schedule& sc, const ScheduleOptions& o, int npes) {
  const uint32_t P = sc.phases;
  std::set<std::tuple<int, uint32_t, int, uint32_t>> seen;
  auto edge = [&](int from, uint32_t fb, int to, uint32_t tb, SyncReason why) {
    if (from == to || !seen.insert({from, fb, to, tb}).second) return;
    sc.edges.push_back(SyncEdge{from, fb, to, tb, 0, why});
  };
  // Who touches whom (reads or writes the other's memory), per phase.
  std::vector<std::set<int>> touches(static_cast<size_t>(npes)), signals(static_cast<size_t>(npes));
  std::map<std::pair<uint32_t, int>, std::set<int>> near;  // (phase, pe) -> PEs it exchanges with
  for (const Step& s : sc.steps) {
    for (int pe : {s.src.pe, s.dst.pe}) {
      if (pe == s.owner) continue;
      touches[static_cast<size_t>(s.owner)].insert(pe);
      near[{s.phase, s.owner}].insert(pe);
      near[{s.phase, pe}].insert(s.owner);
    }
  }
  for (const Step& s : sc.steps) {
    for (uint32_t d : s.after) {
      const Step& e = sc.steps[d];
      if (e.owner == s.owner) continue;
      edge(e.owner, e.phase + 1, s.owner, s.phase, SyncReason::dependency);
      signals[static_cast<size_t>(e.owner)].insert(s.owner);
    }
  }
  if (sc.strict_phases) {
    for (uint32_t k = 1; k < P; ++k) {
      for (int p = 0; p < npes; ++p) {
        std::set<int> nb;
        for (uint32_t ph : {k - 1, k})
          if (auto it = near.find({ph, p}); it != near.end()) nb.insert(it->second.begin(), it->second.end());
        for (int q : nb) edge(p, k, q, k, SyncReason::phase);
      }
    }
  }
  for (int p = 0; p < npes; ++p) {
    std::set<int> wait_for = touches[static_cast<size_t>(p)];
    wait_for.insert(signals[static_cast<size_t>(p)].begin(), signals[static_cast<size_t>(p)].end());
    if (o.entry_sync)
      for (int q : wait_for) edge(q, 0, p, 0, SyncReason::entry);
    if (o.exit_sync)
      for (int q : touches[static_cast<size_t>(p)]) edge(p, P, q, P, SyncReason::exit);
  }
  // Slots: each target's incoming edges in a fixed order.
  std::stable_sort(sc.edges.begin(), sc.edges.end(), [](const SyncEdge& a, const SyncEdge& b) {
    return std::tuple(a.to, a.to_boundary, a.from, a.from_boundary) <
           std::tuple(b.to, b.to_boundary, b.from, b.from_boundary);
  });
  sc.slots.assign(static_cast<size_t>(npes), 0);
  for (SyncEdge& e : sc.edges) e.slot = sc.slots[static_cast<size_t>(e.to)]++;
}

}  // namespace

Schedule finish(std::vector<Step> steps, Strategy s, bool strict_phases, uint32_t chunks, const GlobalPattern& g,
                const Fabric& f, const ScheduleOptions& o) {
  Schedule sc;
  sc.strategy = s;
  sc.chunks = chunks;
  order_by_dependencies(steps, g);
  sc.phases = steps.empty() ? 0 : compact_phases(steps);
  for (Step& st : steps) {
    if (st.owner < 0 || st.owner >= f.num_pes()) {
      raise_arg("patterns::compile", "pattern", who(g, st.transfer) + ": no PE of the job can execute it");
    }
    const Engine requested = st.engine == Engine::automatic ? o.engine : st.engine;
    st.engine = pick_engine(st, requested, g, f);
  }
  sc.steps = std::move(steps);
  // Multi-PE strictness only matters where PEs meet.
  sc.strict_phases = strict_phases;
  assign_links(sc);
  add_sync_edges(sc, o, f.num_pes());
  sc.estimate_us = estimate_us(sc, f);
  return sc;
}

}  // namespace detail

std::vector<uint32_t> Schedule::steps_of(int pe) const {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < steps.size(); ++i)
    if (steps[i].owner == pe) out.push_back(i);
  return out;
}

uint32_t Schedule::links_of(int pe) const {
  uint32_t n = 0;
  for (const Step& s : steps)
    if (s.owner == pe) n = std::max(n, s.link + 1);
  return n;
}

}  // namespace gpucomm::patterns
