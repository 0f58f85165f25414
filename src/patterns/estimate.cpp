// The cost model (gpucomm/patterns/cost_model.hpp) and the link-conflict check.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "gpucomm/patterns/schedule.hpp"

namespace gpucomm::patterns {

namespace {

double us_for(double bytes, double gbps) {
  return gbps > 0 ? bytes / (gbps * 1e3) : 0;  // GB/s = 1e3 bytes per microsecond
}

// The time of one step alone on its path, without the start-up its batch shares.
double transfer_us(const Step& s, const Path& p, const CostModel& m) {
  const Box& b = s.dst.box;
  const double bytes = static_cast<double>(b.bytes());
  const bool strided = b.rows > 1 || b.planes > 1;
  switch (s.engine) {
    case Engine::copy_engine:
      return m.copy_engine_us + (strided ? static_cast<double>(b.rows * b.planes) * m.copy_engine_row_ns / 1e3 : 0) +
             us_for(bytes, p.gbps);
    case Engine::fused:
      return us_for(bytes, p.gbps * (strided ? m.strided_kernel_efficiency : 1.0));
    case Engine::sm_copy:
      return m.kernel_us + us_for(bytes, p.gbps * (strided ? m.strided_kernel_efficiency : 1.0));
    case Engine::host_copy:
      return m.host_copy_us + us_for(bytes, p.gbps);
    case Engine::automatic:
      break;
  }
  return us_for(bytes, p.gbps);
}

}  // namespace

double estimate_us(const Schedule& sc, const Fabric& f) {
  const CostModel& m = f.model();
  double total = 0;
  bool any_gpu = false;
  for (int r = 0; r < f.num_pes(); ++r) any_gpu = any_gpu || f.is_gpu(r);
  for (uint32_t ph = 0; ph < sc.phases; ++ph) {
    // Streams: (owner, link); a host-memory PE's CPU runs its steps one after the other.
    std::map<std::pair<int, uint32_t>, double> stream_us;
    std::map<std::pair<int, uint32_t>, int> fused_items;
    std::map<ResourceId, double> load;
    std::map<ResourceId, std::set<std::tuple<int, bool, int, bool>>> users;
    for (const Step& s : sc.steps) {
      if (s.phase != ph) continue;
      const Path p = f.path(s.from, s.to, s.owner);
      const bool host_pe = !f.is_gpu(s.owner);
      const std::pair<int, uint32_t> key{s.owner, host_pe ? 0U : s.link};
      stream_us[key] += transfer_us(s, p, m);
      if (s.engine == Engine::fused) ++fused_items[key];
      for (ResourceId r : p.resources) {
        load[r] += static_cast<double>(s.dst.box.bytes());
        users[r].insert({s.from.pe, s.from.device, s.to.pe, s.to.device});
      }
    }
    for (const auto& [key, n] : fused_items) stream_us[key] += m.kernel_us + (n - 1) * m.fused_item_us;
    double phase = 0;
    for (const auto& [key, t] : stream_us) phase = std::max(phase, t);
    for (const auto& [r, bytes] : load) {
      const double eff = users[r].size() > 1 ? f.contention(r) : 1.0;
      phase = std::max(phase, us_for(bytes, f.gbps(r) * eff));
    }
    total += phase;
  }
  // Boundaries: joins inside a GPU PE, signals between PEs.
  std::set<uint32_t> signalled;
  for (const SyncEdge& e : sc.edges) signalled.insert(e.to_boundary);
  for (uint32_t b = 0; b <= sc.phases; ++b) {
    if (b > 0 && b < sc.phases && any_gpu) total += m.join_us;
    if (signalled.count(b)) total += any_gpu ? m.signal_us : m.host_signal_us;
  }
  return total;
}

std::vector<std::string> link_conflicts(const Schedule& sc, const Fabric& f) {
  std::vector<std::string> out;
  for (uint32_t ph = 0; ph < sc.phases; ++ph) {
    std::map<ResourceId, std::pair<Endpoint, Endpoint>> first_user;
    std::set<std::tuple<int, bool, int, bool>> links;
    for (const Step& s : sc.steps) {
      if (s.phase != ph || !links.insert({s.from.pe, s.from.device, s.to.pe, s.to.device}).second) continue;
      for (ResourceId r : f.path(s.from, s.to, s.owner).resources) {
        if (!f.is_link(r)) continue;
        auto [it, fresh] = first_user.emplace(r, std::pair{s.from, s.to});
        if (fresh) continue;
        auto name = [](Endpoint e) { return std::string(e.device ? "gpu" : "host") + "@" + std::to_string(e.pe); };
        out.push_back("phase " + std::to_string(ph) + ": links " + name(it->second.first) + "->" +
                      name(it->second.second) + " and " + name(s.from) + "->" + name(s.to) + " share " +
                      f.resource_name(r));
      }
    }
  }
  return out;
}

}  // namespace gpucomm::patterns
