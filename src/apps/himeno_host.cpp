// Himeno on host-memory PEs (include/gpucomm/apps/himeno.hpp): the same planes update in every
// model; the models differ in how p's ghost planes are filled and how gosa is all-reduced.
//   patterns  before the update, the pattern layer's halo plan of p (i not periodic, one ghost
//             plane, PEs stacked along i), compiled once per p buffer and launched every
//             iteration (CPU copies); after it, the library's allreduce (sum) of gosa;
//   cpu       after the update, the new boundary planes (the ones the next iteration reads) and
//             the PE's gosa are staged into a private buffer and all-gathered through the
//             bootstrap store (TCP, a CPU messaging path without shared memory); each PE copies
//             its neighbours' planes into its ghost planes and sums the gosas in rank order. The
//             ghost planes start as the neighbours' initial planes (p starts as a function of the
//             global plane), so the first iteration needs no exchange before it.
// Every iteration starts after an untimed barrier: the neighbours finished writing the planes this
// iteration reads, and nobody still reads the buffer it writes (it was read in the one before).
#include <chrono>
#include <cstring>
#include <functional>
#include <string>

#include "gpucomm/apps/himeno.hpp"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/patterns/patterns.hpp"

namespace gpucomm::apps {
namespace {

using Clock = std::chrono::steady_clock;

struct HostPart {
  Runtime& rt;
  uint64_t n, w, plane, points;
  float* p;                 // symmetric [2][points]: p and wrk2 by iteration parity
  std::vector<float> coef;  // a[4], b[3], c[3], bnd, wrk1: kHimenoFields x points
  HostPart(Runtime& runtime, uint64_t size)
      : rt(runtime),
        n(size),
        w(size + 2),
        plane(w * w),
        points(w * w * w),
        p(static_cast<float*>(runtime.calloc(2 * points, sizeof(float)))),
        coef(himeno_initial_coef(size)) {
    const std::vector<float> p0 = himeno_initial_part(rt.rank(), rt.size(), n);
    std::memcpy(p, p0.data(), points * sizeof(float));
    std::memcpy(p + points, p0.data(), points * sizeof(float));
  }
  ~HostPart() { rt.free(p); }
  HostPart(const HostPart&) = delete;
  HostPart& operator=(const HostPart&) = delete;
  float* prev(uint64_t step) const { return p + ((step - 1) & 1) * points; }  // read in iteration `step`
};

// Before the update: fills the ghost planes of p.prev(step) (or nothing). After it: all-reduces
// this PE's gosa of iteration `step` (the update wrote p.prev(step + 1)).
using Ghosts = std::function<void(uint64_t step)>;
using Reduce = std::function<double(double local, uint64_t step)>;

RunResult timed_loop(HostPart& p, Model model, const RunConfig& cfg, const Ghosts& ghosts, const Reduce& reduce) {
  Runtime& rt = p.rt;
  const int steps = cfg.warmup + cfg.iters;
  const HimenoReference& ref = himeno_reference(rt.size(), p.n, steps);
  RunResult res;
  res.model = model;
  res.size = cfg.size;
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    rt.barrier_all();
    const auto t0 = Clock::now();
    if (ghosts) ghosts(step);
    double local = himeno_planes(p.prev(step), p.prev(step + 1), p.coef.data(), p.points, p.n, 1, p.n);
    if (rt.rank() == cfg.corrupt_rank) local += 1;
    const double gosa = reduce(local, step);
    const auto t1 = Clock::now();
    if (!himeno_gosa_ok(gosa, ref.gosa[static_cast<size_t>(it)])) ++res.wrong;
    if (it >= cfg.warmup) res.iter_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    res.value = gosa;
  }
  const float* last = p.prev(static_cast<uint64_t>(steps) + 1);
  res.wrong_cells = himeno_wrong_cells(ref, rt.rank(), last, cfg.corrupt_rank);
  himeno_dump(cfg, model, rt.rank(), last);
  res.metrics = himeno_metrics(rt.size(), p.n, res.iter_us);
  rt.barrier_all();
  return res;
}

}  // namespace

RunResult himeno_host(Runtime& rt, Model model, const RunConfig& cfg) {
  if (model != Model::patterns && model != Model::cpu) raise_unavailable("himeno", model, false);
  HostPart p(rt, cfg.size);
  if (model == Model::patterns) {
    namespace gp = patterns;
    gp::HaloOptions o;
    o.ghost = size_t{1};
    o.periodic = false;
    o.grid = {1, 1, rt.size()};
    o.corners = false;
    gp::Plan plans[2] = {gp::halo(rt, gp::Field::of(p.p, {p.w, p.w, p.w}), o).compile(rt),
                         gp::halo(rt, gp::Field::of(p.p + p.points, {p.w, p.w, p.w}), o).compile(rt)};
    coll::Collectives coll(rt);
    return timed_loop(
        p, model, cfg, [&](uint64_t step) { plans[(step - 1) & 1].launch(nullptr); },
        [&](double local, uint64_t) {
          double g = 0;
          coll.allreduce(&local, &g, 1, coll::DataType::f64, coll::RedOp::sum, rt.world());
          return g;
        });
  }
  // cpu: planes 1 and n of the new p and this PE's gosa through the bootstrap store; ghost 0 from
  // the PE below (none for PE 0: the boundary), ghost n + 1 from the PE above (none for the last).
  const size_t bytes = p.plane * sizeof(float);
  std::string staging(2 * bytes + sizeof(double), '\0');
  const int me = rt.rank(), pes = rt.size();
  return timed_loop(p, model, cfg, Ghosts(), [&](double local, uint64_t step) {
    float* next = p.prev(step + 1);
    std::memcpy(staging.data(), next + p.plane, bytes);
    std::memcpy(staging.data() + bytes, next + p.n * p.plane, bytes);
    std::memcpy(staging.data() + 2 * bytes, &local, sizeof local);
    const auto all = rt.bootstrap().allgather(staging);
    double gosa = 0;
    for (const auto& v : all) {
      if (v.size() != staging.size())
        raise(Errc::protocol, "himeno cpu", "a PE sent " + std::to_string(v.size()) + " bytes of planes and gosa");
      double g = 0;
      std::memcpy(&g, v.data() + 2 * bytes, sizeof g);
      gosa += g;
    }
    if (me > 0) std::memcpy(next, all[static_cast<size_t>(me) - 1].data() + bytes, bytes);
    if (me + 1 < pes) std::memcpy(next + (p.n + 1) * p.plane, all[static_cast<size_t>(me) + 1].data(), bytes);
    return gosa;
  });
}

}  // namespace gpucomm::apps
