// Aliev-Panfilov on host-memory PEs (include/gpucomm/apps/aliev_panfilov.hpp): the same planes
// update in every model; the models differ in how E_prev's ghost planes are filled each step.
//   patterns  the pattern layer's halo plan of E_prev (z periodic, one ghost plane, PEs stacked
//             along z), compiled once per E buffer and launched every step (CPU copies);
//   cpu       the boundary planes staged into a private buffer and all-gathered through the
//             bootstrap store (TCP, a CPU messaging path without shared memory).
// Every step starts after an untimed barrier: the neighbours finished writing the planes this step
// reads, and nobody still reads the buffer this step writes (it was read in the step before).
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "gpucomm/apps/aliev_panfilov.hpp"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/patterns/patterns.hpp"

namespace gpucomm::apps {
namespace {

using Clock = std::chrono::steady_clock;

struct HostPart {
  Runtime& rt;
  uint64_t n, w, plane, points;
  double* e;  // symmetric [2][points]
  std::vector<double> r;
  HostPart(Runtime& runtime, uint64_t size)
      : rt(runtime),
        n(size),
        w(size + 2),
        plane(w * w),
        points(w * w * w),
        e(static_cast<double*>(runtime.calloc(2 * points, sizeof(double)))) {
    std::vector<double> e0;
    ap_initial_part(rt.rank(), n, e0, r);
    std::memcpy(e, e0.data(), points * sizeof(double));
  }
  ~HostPart() { rt.free(e); }
  HostPart(const HostPart&) = delete;
  HostPart& operator=(const HostPart&) = delete;
  double* prev(uint64_t step) const { return e + ((step - 1) & 1) * points; }  // read in step `step`
};

RunResult timed_loop(HostPart& p, Model model, const RunConfig& cfg, const std::function<void(uint64_t)>& ghosts) {
  Runtime& rt = p.rt;
  const int steps = cfg.warmup + cfg.iters;
  const ApReference& ref = ap_reference(rt.size(), p.n, steps);
  RunResult res;
  res.model = model;
  res.size = cfg.size;
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    rt.barrier_all();
    const auto t0 = Clock::now();
    ghosts(step);
    ap_planes(p.prev(step), p.prev(step + 1), p.r.data(), p.n, 1, p.n);
    const auto t1 = Clock::now();
    if (it >= cfg.warmup) res.iter_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  const double* last = p.prev(static_cast<uint64_t>(steps) + 1);
  res.wrong_cells = ap_wrong_cells(ref, rt.rank(), last, p.r.data(), cfg.corrupt_rank);
  res.value = ap_e_sum(last, p.n);
  rt.barrier_all();
  return res;
}

}  // namespace

RunResult aliev_panfilov_host(Runtime& rt, Model model, const RunConfig& cfg) {
  if (model != Model::patterns && model != Model::cpu) {
    raise_unavailable("aliev_panfilov", model, false);
  }
  HostPart p(rt, cfg.size);
  if (model == Model::patterns) {
    namespace gp = patterns;
    gp::HaloOptions o;
    o.ghost = size_t{1};
    o.periodic = gp::PerAxis<bool>(false, false, true);
    o.grid = {1, 1, rt.size()};
    o.corners = false;
    gp::Plan plans[2] = {gp::halo(rt, gp::Field::of(p.e, {p.w, p.w, p.w}), o).compile(rt),
                         gp::halo(rt, gp::Field::of(p.e + p.points, {p.w, p.w, p.w}), o).compile(rt)};
    RunResult r = timed_loop(p, model, cfg, [&](uint64_t step) { plans[(step - 1) & 1].launch(nullptr); });
    return r;
  }
  // cpu: planes 1 and n of E_prev through the bootstrap store; ghost 0 from the PE below (periodic),
  // ghost n + 1 from the PE above.
  std::string staging(2 * p.plane * sizeof(double), '\0');
  const int me = rt.rank(), pes = rt.size();
  const auto below = static_cast<size_t>((me + pes - 1) % pes), above = static_cast<size_t>((me + 1) % pes);
  const size_t bytes = p.plane * sizeof(double);
  return timed_loop(p, model, cfg, [&](uint64_t step) {
    double* e = p.prev(step);
    std::memcpy(staging.data(), e + p.plane, bytes);
    std::memcpy(staging.data() + bytes, e + p.n * p.plane, bytes);
    const auto all = rt.bootstrap().allgather(staging);
    for (const auto& v : all) {
      if (v.size() != staging.size())
        raise(Errc::protocol, "aliev_panfilov cpu", "a PE sent " + std::to_string(v.size()) + " bytes of planes");
    }
    std::memcpy(e, all[below].data() + bytes, bytes);
    std::memcpy(e + (p.n + 1) * p.plane, all[above].data(), bytes);
  });
}

}  // namespace gpucomm::apps
