// compile(): from a Pattern on every PE to this PE's part of the job's Plan.
//   1. declare: this PE's pattern in the job's terms (local checks: buffers in reach);
//   2. all-gather the declarations (collective compiles) and merge them into the job's pattern;
//   3. check the memory this PE answers for; plan every strategy that applies and check that this
//      PE can execute its steps; all-gather the problems, so that every PE raises the same error;
//   4. choose: the caller's strategy, the cost model's, or the autotune winner;
//   5. allocate the symmetric sync words (collective) and make the executor.
#include <cuda_runtime_api.h>

#include <mutex>

#include "autotune.hpp"
#include "checks.hpp"
#include "declaration.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "plan_impl.hpp"

namespace gpucomm::patterns {

namespace {

const topology::Topology& node_topology() {
  static std::once_flag once;
  static topology::Topology t;
  std::call_once(once, [] { t = topology::detect(); });
  return t;
}

// Every PE's GPU as an index of the planning topology (rank 0's; PEs of other nodes: none).
std::vector<PeInfo> pe_infos(const std::vector<detail::Declaration>& all, const topology::Topology& t) {
  std::vector<PeInfo> out;
  const int node0 = all.at(0).node;
  for (const auto& d : all) {
    PeInfo p{d.node, -1, false};
    if (d.node == node0 && !d.pci_bus_id.empty()) {
      for (const auto& g : t.gpus)
        if (g.pci_bus_id == d.pci_bus_id) p.device = g.index;
    }
    p.gpu_unlisted = d.gpu && p.device < 0;
    out.push_back(p);
  }
  return out;
}

[[noreturn]] void raise_problems(const std::vector<std::string>& problems, int rank, const std::string& name) {
  std::string text = "pattern '" + name + "'";
  if (rank >= 0) text += " on rank " + std::to_string(rank);
  text += ": " + problems.at(0);
  if (problems.size() > 1) text += " (and " + std::to_string(problems.size() - 1) + " more problem(s))";
  raise(Errc::invalid_argument, "patterns::compile", text);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + '\n';
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    const size_t nl = s.find('\n', at);
    out.push_back(s.substr(at, nl - at));
    at = nl == std::string::npos ? s.size() : nl + 1;
  }
  return out;
}

}  // namespace

Plan compile(Runtime& rt, const Pattern& p, const CompileOptions& o) {
  auto impl = std::make_unique<Plan::Impl>();
  Plan::Impl& x = *impl;
  x.rt = &rt;
  x.options = o;
  x.collective = rt.size() > 1 && !o.local;

  // 1-2. Declarations and the job's pattern.
  detail::Declaration mine = detail::declare(rt, p, o);
  const topology::Topology& topo = node_topology();
  mine.gpu = rt.pe_kind() == PeKind::gpu;
  if (rt.pe_kind() == PeKind::gpu && rt.device_id() >= 0 && rt.device_id() < static_cast<int>(topo.gpus.size()))
    mine.pci_bus_id = topo.gpus[static_cast<size_t>(rt.device_id())].pci_bus_id;
  std::vector<std::string> problems = mine.errors;
  std::vector<detail::Declaration> all;
  if (x.collective) {
    if (rt.rank() == 0) {
      mine.has_topology = true;
      mine.topology = topo;
    }
    for (const std::string& bytes : rt.bootstrap().allgather(detail::encode(mine)))
      all.push_back(detail::decode(bytes));
    // Every PE reports every PE's declaration problems, so that all raise the same error.
    problems.clear();
    for (const auto& d : all)
      for (const auto& e : d.errors) problems.push_back("rank " + std::to_string(d.rank) + ": " + e);
    x.pattern = detail::merge(all, &problems);
  } else {
    for (const auto& t : mine.transfers) {
      for (const GlobalRegion* r : {&t.dst, &t.src}) {
        if (r->pe != rt.rank())
          problems.push_back("a local plan (CompileOptions::local) names rank " + std::to_string(r->pe) + "'s memory");
      }
      if (t.owner != rt.rank())
        problems.push_back("a local plan (CompileOptions::local) has transfers of rank " + std::to_string(t.owner));
    }
    x.pattern = detail::single(mine);
    all.assign(1, mine);
  }
  // The fabric: rank 0's topology and every PE's GPU.
  std::vector<PeInfo> pes;
  if (x.collective) {
    pes = pe_infos(all, all[0].topology);
  } else {
    pes.assign(static_cast<size_t>(rt.size()), PeInfo{});
    for (int r = 0; r < rt.size(); ++r) pes[static_cast<size_t>(r)].node = rt.node_of(r);
    if (rt.pe_kind() == PeKind::gpu) {
      const bool listed = rt.device_id() >= 0 && rt.device_id() < static_cast<int>(topo.gpus.size());
      pes[static_cast<size_t>(rt.rank())].device = listed ? rt.device_id() : -1;
      pes[static_cast<size_t>(rt.rank())].gpu_unlisted = !listed;
    }
  }
  Fabric fabric(x.collective ? all[0].topology : topo, pes, o.model);

  // 3. Checks, and the candidates this PE can execute.
  for (auto& e : detail::check_memory(x.pattern, rt.rank())) problems.push_back(std::move(e));
  ScheduleOptions so;
  so.strategy = o.strategy;
  so.engine = o.engine;
  so.entry_sync = o.entry_sync;
  so.exit_sync = o.exit_sync;
  so.chunks = o.chunks;
  std::vector<Schedule> candidates;
  std::string feasible;  // per strategy of all_strategies(): '1' when this PE can execute it
  if (problems.empty()) {
    try {
      for (Strategy s : all_strategies()) {
        const bool wanted = o.strategy == Strategy::automatic || o.strategy == s;
        std::string why;
        if (!wanted || !applies(s, x.pattern, fabric, &why)) {
          if (o.strategy == s) problems.push_back(std::string(strategy_name(s)) + " cannot serve this pattern: " + why);
          feasible += '0';
          candidates.emplace_back();
          continue;
        }
        Schedule c = build_schedule(x.pattern, fabric, s, so);
        auto reach = detail::check_reach(c, x.pattern, rt);
        if (o.strategy == s) problems.insert(problems.end(), reach.begin(), reach.end());
        feasible += reach.empty() ? '1' : '0';
        candidates.push_back(std::move(c));
      }
    } catch (const Error& e) {
      problems.push_back(e.detail());
    }
  }
  if (x.collective) {
    // Everyone's problems and feasibility, so that all PEs raise alike and choose alike.
    const auto gathered = rt.bootstrap().allgather(feasible + "\n" + join(problems));
    for (int r = 0; r < rt.size(); ++r) {
      const std::string& g = gathered[static_cast<size_t>(r)];
      const size_t nl = g.find('\n');
      const std::string f = g.substr(0, nl);
      for (size_t i = 0; i < feasible.size() && i < f.size(); ++i)
        if (f[i] == '0') feasible[i] = '0';
      const auto theirs = split(g.substr(nl + 1));
      if (!theirs.empty()) raise_problems(theirs, r, x.pattern.name);
    }
  } else if (!problems.empty()) {
    raise_problems(problems, -1, x.pattern.name);
  }

  // 4. The choice.
  std::vector<Schedule*> usable;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (feasible[i] == '1' && !candidates[i].steps.empty()) usable.push_back(&candidates[i]);
  if (usable.empty()) {
    // An empty pattern (or one no strategy can run, which the checks above reported).
    x.schedule = candidates.empty() ? Schedule{} : candidates[0];
    x.choice = "empty pattern";
  } else if (o.strategy != Strategy::automatic) {
    x.schedule = *usable[0];
    x.choice = "the caller's choice";
  } else {
    Schedule* best = usable[0];
    for (Schedule* c : usable)
      if (c->estimate_us < best->estimate_us * 0.999) best = c;
    x.schedule = *best;
    x.choice = "cost model";
  }

  // 5. Sync words, epochs, executor.
  size_t words = 0;
  for (const Schedule& c : candidates)
    for (uint32_t s : c.slots) words = std::max<size_t>(words, s);
  if (x.collective && words > 0) {
    x.sync_words = words;
    x.sync_block = static_cast<uint64_t*>(rt.calloc(words, sizeof(uint64_t)));
  }
  if (rt.pe_kind() == PeKind::gpu && x.sync_block) {
    void* e = nullptr;
    check_cuda(cudaMalloc(&e, sizeof(uint64_t)), "cudaMalloc", "patterns::compile: epoch word");
    x.device_epoch = static_cast<uint64_t*>(e);
    check_cuda(cudaMemset(e, 0, sizeof(uint64_t)), "cudaMemset", "patterns::compile: epoch word");
  }
  if (o.autotune && usable.size() > 1) {
    std::vector<const Schedule*> cands(usable.begin(), usable.end());
    x.schedule = detail::autotune(x, fabric, cands);
    x.autotuned = true;
  }
  x.make_executor();
  Plan plan;
  plan.impl_ = std::move(impl);
  return plan;
}

}  // namespace gpucomm::patterns
