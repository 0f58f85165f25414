// The Plan object: launch, synchronize, rebind, describe.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>

#include "checks.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "plan_impl.hpp"

namespace gpucomm::patterns {

void Plan::Impl::make_executor() {
  executor.reset();
  context.rt = rt;
  context.rank = rt->rank();
  context.pattern = &pattern;
  context.schedule = &schedule;
  context.options = &options;
  context.sync_block = sync_block;
  context.host_epoch = &host_epoch;
  context.device_epoch = device_epoch;
  executor = rt->pe_kind() == PeKind::gpu ? detail::make_gpu_executor(context) : detail::make_host_executor(context);
}

Plan::Impl::~Impl() {
  try {
    if (executor) executor->synchronize();
  } catch (const Error& e) {  // a destructor does not throw; synchronize() raises it for callers who ask
    GPUCOMM_LOG(warn, "plan '" << pattern.name << "': failure seen while releasing it: " << e.what());
  }
  executor.reset();
  if (device_epoch) (void)cudaFree(device_epoch);
  if (sync_block && collective) {
    try {
      rt->free(sync_block);     // collective
    } catch (const Error& e) {  // the job failed: nothing left to free collectively
      GPUCOMM_LOG(info, "plan '" << pattern.name << "': sync words not freed: " << e.what());
    }
  }
}

Plan::Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;
Plan::~Plan() = default;

namespace {

Plan::Impl& need(const std::unique_ptr<Plan::Impl>& p, const char* call) {
  if (!p) raise_arg(call, "plan", "is empty (compile a pattern first)");
  return *p;
}

}  // namespace

void Plan::launch(Stream stream) {
  need(impl_, "Plan::launch").executor->launch(stream);
}

void Plan::synchronize() {
  need(impl_, "Plan::synchronize").executor->synchronize();
}

const Schedule& Plan::schedule() const {
  return need(impl_, "Plan::schedule").schedule;
}

bool Plan::uses_graph() const {
  return need(impl_, "Plan::uses_graph").executor->uses_graph();
}

bool Plan::autotuned() const {
  return need(impl_, "Plan::autotuned").autotuned;
}

void Plan::rebind(const void* old_ptr, void* new_ptr, size_t new_bytes) {
  Impl& x = need(impl_, "Plan::rebind");
  Runtime& rt = *x.rt;
  heap::SymmetricHeap& h = rt.heap();
  const bool symmetric = h.contains(old_ptr, 0);
  const int me = rt.rank();
  uint64_t old_key = reinterpret_cast<uintptr_t>(old_ptr), new_key = reinterpret_cast<uintptr_t>(new_ptr);
  if (symmetric) {
    GPUCOMM_CHECK_ARG(h.contains(new_ptr, 0), "Plan::rebind", "new_ptr",
                      "a symmetric buffer must move to another address inside the symmetric heap");
    old_key = h.offset_of(old_ptr);
    new_key = h.offset_of(new_ptr);
  }
  GPUCOMM_CHECK_ARG(new_ptr != nullptr, "Plan::rebind", "new_ptr", "is null");
  auto matches = [&](const GlobalRegion& r) {
    return r.address == old_key &&
           (symmetric ? r.place == Place::symmetric : (r.place != Place::symmetric && r.pe == me));
  };
  uint64_t bytes = 0;
  bool found = false;
  for (const auto& t : x.pattern.transfers) {
    for (const GlobalRegion* r : {&t.dst, &t.src}) {
      if (matches(*r)) {
        found = true;
        bytes = std::max(bytes, r->bytes);
      }
    }
  }
  std::string problem;
  const char* problem_arg = "new_ptr";
  if (!found) {
    problem = "is not the start of a buffer of this plan";
    problem_arg = "old_ptr";
  }
  if (found && symmetric && !h.contains(new_ptr, bytes)) problem = "the new buffer does not fit in the symmetric heap";
  if (found && problem.empty() && new_bytes != kUnknownBytes && new_bytes < bytes) {
    problem = "the new buffer has " + std::to_string(new_bytes) + " bytes; the plan reaches " + std::to_string(bytes) +
              " bytes past its start";
  }
  if (x.collective && symmetric) {
    // Collective: every PE moves the same symmetric buffer; a problem anywhere stops all.
    char text[64];
    std::snprintf(text, sizeof text, "%llx>%llx", static_cast<unsigned long long>(old_key),
                  static_cast<unsigned long long>(new_key));
    const auto all = rt.bootstrap().allgather(std::string(text) + "|" + problem);
    for (int r = 0; r < rt.size(); ++r) {
      const std::string& g = all[static_cast<size_t>(r)];
      const size_t bar = g.find('|');
      if (g.substr(0, bar) != text) {
        raise_arg("Plan::rebind", "old_ptr",
                  "rank " + std::to_string(r) + " rebinds another symmetric buffer (" + g.substr(0, bar) +
                      ") than this PE (" + text + "); symmetric buffers move on every PE alike");
      }
      if (bar + 1 < g.size())
        raise_arg("Plan::rebind", "old_ptr", "rank " + std::to_string(r) + ": " + g.substr(bar + 1));
    }
  }
  if (!problem.empty()) raise_arg("Plan::rebind", problem_arg, problem);
  x.executor->synchronize();
  const GlobalPattern before = x.pattern;
  const Schedule before_s = x.schedule;
  for (auto& t : x.pattern.transfers) {
    for (GlobalRegion* r : {&t.dst, &t.src})
      if (matches(*r)) r->address = new_key;
  }
  for (auto& s : x.schedule.steps) {
    for (GlobalRegion* r : {&s.dst, &s.src})
      if (matches(*r)) r->address = new_key;
  }
  auto problems = detail::check_memory(x.pattern, me);
  if (x.collective && symmetric) {
    for (const auto& g : rt.bootstrap().allgather(problems.empty() ? std::string() : problems[0]))
      if (!g.empty() && problems.empty()) problems.push_back(g);
  }
  if (!problems.empty()) {
    x.pattern = before;
    x.schedule = before_s;
    raise_arg("Plan::rebind", "new_ptr", "plan '" + x.pattern.name + "': " + problems[0]);
  }
  x.executor->rebind();
}

std::string Plan::describe() const {
  const Impl& x = need(impl_, "Plan::describe");
  const Schedule& s = x.schedule;
  const int me = x.rt->rank();
  char line[512];
  std::string out;
  std::snprintf(line, sizeof line, "plan '%s' (%s): strategy %s (%s), %u phase(s), estimate %.1f us%s\n",
                x.pattern.name.c_str(), kind_name(x.pattern.kind), strategy_name(s.strategy), x.choice.c_str(),
                s.phases, s.estimate_us, x.executor && x.executor->uses_graph() ? ", CUDA graph" : "");
  out += line;
  auto ep = [](Endpoint e) { return std::string(e.device ? "gpu" : "host") + "@" + std::to_string(e.pe); };
  for (uint32_t i : s.steps_of(me)) {
    const Step& st = s.steps[i];
    const Box& b = st.dst.box;
    const std::string& label = x.pattern.transfers[st.transfer].label;
    std::snprintf(line, sizeof line, "  phase %u link %u %s->%s: transfer #%u%s%s%s: %zu bytes (%zu x %zu x %zu), %s\n",
                  st.phase, st.link, ep(st.from).c_str(), ep(st.to).c_str(), st.transfer, label.empty() ? "" : " ('",
                  label.c_str(), label.empty() ? "" : "')", b.bytes(), b.width, b.rows, b.planes,
                  engine_name(st.engine));
    out += line;
  }
  for (const SyncEdge& e : s.edges) {
    if (e.from != me && e.to != me) continue;
    std::snprintf(line, sizeof line, "  %s: rank %d at boundary %u -> rank %d at boundary %u (slot %u)\n",
                  sync_reason_name(e.reason), e.from, e.from_boundary, e.to, e.to_boundary, e.slot);
    out += line;
  }
  return out;
}

}  // namespace gpucomm::patterns
