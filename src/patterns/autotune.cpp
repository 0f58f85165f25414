#include "autotune.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>

#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"

namespace gpucomm::patterns::detail {

namespace {

std::mutex g_mu;
std::map<std::string, std::string>& memory_cache() {
  static auto* m = new std::map<std::string, std::string>;
  return *m;
}

std::string file_lookup(const std::string& key) {
  const auto path = env::get("GPUCOMM_PATTERN_TUNE_FILE");
  if (!path || path->empty()) return {};
  std::ifstream in(*path);
  std::string line, found;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string k, v;
    if (ls >> k >> v && k == key) found = v;  // the last entry wins
  }
  return found;
}

void file_store(const std::string& key, const std::string& value) {
  const auto path = env::get("GPUCOMM_PATTERN_TUNE_FILE");
  if (!path || path->empty()) return;
  std::ofstream out(*path, std::ios::app);
  out << key << ' ' << value << '\n';
  if (!out) GPUCOMM_LOG(warn, "autotune: cannot append to GPUCOMM_PATTERN_TUNE_FILE=" << *path);
}

// Microseconds per launch of the current executor (the slowest PE's on several PEs).
double time_launches(Plan::Impl& x, int iterations) {
  Runtime& rt = *x.rt;
  x.executor->launch(rt.pe_kind() == PeKind::gpu ? rt.stream() : nullptr);
  x.executor->synchronize();
  if (x.collective) rt.barrier_all();
  double us = 0;
  if (rt.pe_kind() == PeKind::gpu) {
    cudaStream_t s = reinterpret_cast<cudaStream_t>(rt.stream());
    cudaEvent_t a = nullptr, b = nullptr;
    check_cuda(cudaEventCreate(&a), "cudaEventCreate", "autotune");
    check_cuda(cudaEventCreate(&b), "cudaEventCreate", "autotune");
    check_cuda(cudaEventRecord(a, s), "cudaEventRecord", "autotune");
    for (int i = 0; i < iterations; ++i) x.executor->launch(reinterpret_cast<Stream>(s));
    check_cuda(cudaEventRecord(b, s), "cudaEventRecord", "autotune");
    x.executor->synchronize();
    check_cuda(cudaEventSynchronize(b), "cudaEventSynchronize", "autotune");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime", "autotune");
    (void)cudaEventDestroy(a);
    (void)cudaEventDestroy(b);
    us = 1e3 * ms / iterations;
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) x.executor->launch(nullptr);
    us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iterations;
  }
  if (!x.collective) return us;
  double worst = 0;
  for (const auto& t : rt.bootstrap().allgather(std::to_string(us))) worst = std::max(worst, std::stod(t));
  return worst;
}

// Every PE continues from the highest launch count of any PE: a PE without signals in one
// candidate does not count its launches, and the next candidate's waits must not be met by the
// epochs of earlier candidates.
void align_epochs(Plan::Impl& x) {
  if (!x.collective) return;
  uint64_t e = x.host_epoch;
  if (x.device_epoch) {
    check_cuda(cudaMemcpy(&e, x.device_epoch, sizeof e, cudaMemcpyDeviceToHost), "cudaMemcpy", "autotune: epoch");
  }
  uint64_t top = e;
  for (const auto& t : x.rt->bootstrap().allgather(std::to_string(e))) top = std::max<uint64_t>(top, std::stoull(t));
  x.host_epoch = top;
  if (x.device_epoch) {
    check_cuda(cudaMemcpy(x.device_epoch, &top, sizeof top, cudaMemcpyHostToDevice), "cudaMemcpy", "autotune: epoch");
  }
}

}  // namespace

std::string pattern_signature(const GlobalPattern& g) {
  std::ostringstream s;
  s << static_cast<int>(g.kind) << ':' << g.transfers.size();
  for (const auto& t : g.transfers) {
    s << '|' << t.owner << ',' << static_cast<int>(t.engine);
    for (const GlobalRegion* r : {&t.dst, &t.src}) {
      s << ',' << static_cast<int>(r->place) << ',' << r->pe << ',' << r->box.width << ',' << r->box.rows << ','
        << r->box.planes << ',' << r->box.row_pitch() << ',' << r->box.slice_pitch();
    }
    for (uint32_t a : t.after) s << ',' << a;
  }
  char h[32];
  std::snprintf(h, sizeof h, "%016zx", std::hash<std::string>{}(s.str()));
  return h;
}

Schedule autotune(Plan::Impl& x, const Fabric& f, const std::vector<const Schedule*>& candidates) {
  Runtime& rt = *x.rt;
  const CompileOptions& o = x.options;
  const std::string key = pattern_signature(x.pattern) + "-" + f.signature() + "-" +
                          std::to_string(static_cast<int>(o.engine)) + std::to_string(o.entry_sync) +
                          std::to_string(o.exit_sync) + std::to_string(o.chunks);
  std::string hit;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = memory_cache().find(key);
    hit = it != memory_cache().end() ? it->second : file_lookup(key);
  }
  if (x.collective) hit = rt.bootstrap().allgather(hit)[0];  // rank 0's cache decides
  for (const Schedule* c : candidates) {
    if (!hit.empty() && hit == strategy_name(c->strategy)) {
      x.choice = "autotune (cached)";
      return *c;
    }
  }
  const int iterations = std::max(1, o.autotune_iterations);
  size_t best = 0;
  double best_us = 0;
  std::string report;
  for (size_t i = 0; i < candidates.size(); ++i) {
    x.executor.reset();  // waits for the previous candidate
    align_epochs(x);
    x.schedule = *candidates[i];
    x.make_executor();
    const double us = time_launches(x, iterations);
    report += std::string(i ? ", " : "") + strategy_name(candidates[i]->strategy) + " " + std::to_string(us) + " us";
    if (i == 0 || us < best_us) {
      best = i;
      best_us = us;
    }
  }
  x.executor.reset();
  align_epochs(x);
  const std::string winner = strategy_name(candidates[best]->strategy);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    memory_cache()[key] = winner;
  }
  if (rt.rank() == 0) file_store(key, winner);
  x.choice = "autotune (" + report + ")";
  GPUCOMM_LOG(info, "pattern '" << x.pattern.name << "': autotune picked " << winner << " (" << report << ")");
  return *candidates[best];
}

}  // namespace gpucomm::patterns::detail
