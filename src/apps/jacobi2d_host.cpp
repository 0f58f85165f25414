// Jacobi 2-D on host-memory PEs, one function per communication model. Every model runs the same
// compute (jacobi_rows over the PE's n rows) and the same timing loop; the models differ in the
// halo exchange and, in the CPU-controlled model, in the residual's allreduce.
//
// The grid is symmetric, two buffers (iteration parity): iteration s reads buffer (s - 1) % 2 and
// writes buffer s % 2. In iteration s a PE stores its rows 1 and n of the buffer it reads into the
// halo rows n + 1 of the PE above and 0 of the PE below, in that same buffer, and sets their flags
// to s. A PE cannot overwrite a halo row its neighbour still reads: the neighbour read that buffer
// in iteration s - 2, and the residual's allreduce of iteration s - 1 returned only after every PE
// had finished iteration s - 1.
#include <chrono>
#include <cstring>
#include <functional>
#include <string>

#include "gpucomm/apps/jacobi2d.hpp"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/messenger.hpp"

namespace gpucomm::apps {
namespace {

using Clock = std::chrono::steady_clock;

// This PE's part of the grid in the symmetric heap and its two halo flags.
struct Grid {
  Runtime& rt;
  uint64_t n, w;
  int up, down;     // the neighbouring PEs, -1 at the top and bottom of the grid
  double* u;        // [2][w * w]
  uint64_t* flags;  // [0]: row 0 (from the PE above) holds iteration flags[0]; [1]: row n + 1 (from below)
  Grid(Runtime& r, uint64_t size)
      : rt(r),
        n(size),
        w(jacobi_width(size)),
        up(r.rank() > 0 ? r.rank() - 1 : -1),
        down(r.rank() + 1 < r.size() ? r.rank() + 1 : -1),
        u(static_cast<double*>(r.calloc(2 * w * w, sizeof(double)))),
        flags(static_cast<uint64_t*>(r.calloc(2, sizeof(uint64_t)))) {
    const auto init = jacobi_initial_part(r.rank(), r.size(), n);
    std::memcpy(u, init.data(), w * w * sizeof(double));
    std::memcpy(u + w * w, init.data(), w * w * sizeof(double));
  }
  ~Grid() {
    rt.free(flags);
    rt.free(u);
  }
  Grid(const Grid&) = delete;
  Grid& operator=(const Grid&) = delete;
  double* buf(uint64_t step) const { return u + ((step - 1) & 1) * w * w; }  // read in iteration `step`
  double* row(double* b, uint64_t i) const { return b + i * w + 1; }         // interior points of row i
  size_t row_bytes() const { return n * sizeof(double); }
  // Waits (the library's timed wait) until both halo rows of iteration `step` arrived.
  void wait_halos(uint64_t step) const {
    if (up >= 0) rt.wait_until(flags + 0, Cmp::ge, step);
    if (down >= 0) rt.wait_until(flags + 1, Cmp::ge, step);
  }
};

// One iteration's halo exchange (fills rows 0 and n + 1 of g.buf(step)), and the residual's
// allreduce (the largest |new - old| of every PE).
using Halo = std::function<void(uint64_t step)>;
using Residual = std::function<double(double local, uint64_t step)>;

// The timing loop of every host model: a barrier (not timed) aligns the PEs, then the halo
// exchange, the update and the residual's allreduce are timed together. Every iteration's
// residual and the final grid are checked against the reference.
RunResult timed_loop(Grid& g, Model model, const RunConfig& cfg, const Halo& halo, const Residual& residual) {
  Runtime& rt = g.rt;
  const int steps = cfg.warmup + cfg.iters;
  const JacobiReference& ref = jacobi_reference(rt.size(), cfg.size, steps);
  RunResult r;
  r.model = model;
  r.size = cfg.size;
  rt.barrier_all();  // every PE's grid is initialized
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    rt.barrier_all();
    const auto t0 = Clock::now();
    halo(step);
    double local = jacobi_rows(g.buf(step), g.buf(step + 1), g.w, 1, g.n);
    if (rt.rank() == cfg.corrupt_rank) local += 1;
    const double res = residual(local, step);
    const auto t1 = Clock::now();
    if (res != ref.residual[static_cast<size_t>(it)]) ++r.wrong;
    if (it >= cfg.warmup) r.iter_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    r.value = res;
  }
  r.wrong_cells = jacobi_wrong_cells(ref, rt.rank(), g.buf(static_cast<uint64_t>(steps) + 1), cfg.corrupt_rank);
  jacobi_dump(cfg, model, rt.rank(), g.buf(static_cast<uint64_t>(steps) + 1));
  rt.barrier_all();
  return r;
}

RunResult run_loadstore(Runtime& rt, const RunConfig& cfg, const Residual& residual) {
  Grid g(rt, cfg.size);
  for (int p : {g.up, g.down}) {
    if (p >= 0 && (!rt.ptr(g.u, p) || !rt.ptr(g.flags, p))) {
      raise(Errc::unsupported, "jacobi2d loadstore",
            "PE " + std::to_string(p) + " is not mapped here (load/store needs the neighbours on this node)");
    }
  }
  return timed_loop(
      g, Model::loadstore, cfg,
      [&](uint64_t step) {
        double* b = g.buf(step);
        if (g.up >= 0) {  // plain stores into the neighbour's rows, then a release store of its flag
          std::memcpy(static_cast<double*>(rt.ptr(g.row(b, g.n + 1), g.up)), g.row(b, 1), g.row_bytes());
          mem::host_store(static_cast<uint64_t*>(rt.ptr(g.flags + 1, g.up)), step, std::memory_order_release);
        }
        if (g.down >= 0) {
          std::memcpy(static_cast<double*>(rt.ptr(g.row(b, 0), g.down)), g.row(b, g.n), g.row_bytes());
          mem::host_store(static_cast<uint64_t*>(rt.ptr(g.flags + 0, g.down)), step, std::memory_order_release);
        }
        g.wait_halos(step);
      },
      residual);
}

RunResult run_putget(Runtime& rt, const RunConfig& cfg, const Residual& residual) {
  Grid g(rt, cfg.size);
  return timed_loop(
      g, Model::putget, cfg,
      [&](uint64_t step) {
        double* b = g.buf(step);
        if (g.up >= 0)
          rt.put_signal(g.row(b, g.n + 1), g.row(b, 1), g.row_bytes(), g.flags + 1, step, SignalOp::set, g.up);
        if (g.down >= 0)
          rt.put_signal(g.row(b, 0), g.row(b, g.n), g.row_bytes(), g.flags + 0, step, SignalOp::set, g.down);
        g.wait_halos(step);
      },
      residual);
}

RunResult run_sendrecv(Runtime& rt, const RunConfig& cfg, const Residual& residual) {
  msg::Messenger messenger(rt);
  msg::Comm comm = messenger.world();
  Grid g(rt, cfg.size);
  constexpr int kToUp = 11, kToDown = 12;  // tags: the direction the row travels
  std::vector<msg::Request> reqs;
  return timed_loop(
      g, Model::sendrecv, cfg,
      [&](uint64_t step) {
        double* b = g.buf(step);
        reqs.clear();
        if (g.up >= 0) reqs.push_back(comm.irecv(g.row(b, 0), g.row_bytes(), g.up, kToDown));
        if (g.down >= 0) reqs.push_back(comm.irecv(g.row(b, g.n + 1), g.row_bytes(), g.down, kToUp));
        if (g.up >= 0) reqs.push_back(comm.isend(g.row(b, 1), g.row_bytes(), g.up, kToUp));
        if (g.down >= 0) reqs.push_back(comm.isend(g.row(b, g.n), g.row_bytes(), g.down, kToDown));
        messenger.waitall(reqs);
      },
      residual);
}

// The CPU-controlled baseline: rows 1 and n are staged into a private buffer and all-gathered
// through the bootstrap store (TCP, a CPU messaging path without shared memory); each PE copies its
// neighbours' rows into its halo rows.
RunResult run_cpu(Runtime& rt, const RunConfig& cfg, const Residual& residual) {
  Grid g(rt, cfg.size);
  std::string staging(2 * g.row_bytes(), '\0');
  return timed_loop(
      g, Model::cpu, cfg,
      [&](uint64_t step) {
        double* b = g.buf(step);
        std::memcpy(staging.data(), g.row(b, 1), g.row_bytes());
        std::memcpy(staging.data() + g.row_bytes(), g.row(b, g.n), g.row_bytes());
        const auto all = rt.bootstrap().allgather(staging);
        for (const auto& v : all) {
          if (v.size() != staging.size())
            raise(Errc::protocol, "jacobi2d cpu", "a PE sent " + std::to_string(v.size()) + " bytes of halo rows");
        }
        if (g.up >= 0) std::memcpy(g.row(b, 0), all[static_cast<size_t>(g.up)].data() + g.row_bytes(), g.row_bytes());
        if (g.down >= 0) std::memcpy(g.row(b, g.n + 1), all[static_cast<size_t>(g.down)].data(), g.row_bytes());
      },
      residual);
}

}  // namespace

RunResult jacobi2d_host(Runtime& rt, Model model, const RunConfig& cfg) {
  // The residual: the library's allreduce (max) in the one-sided and two-sided models; through the
  // bootstrap store, like the halo rows, in the CPU-controlled baseline.
  coll::Collectives coll(rt);
  const Residual allreduce = [&](double local, uint64_t) {
    double g = 0;
    coll.allreduce(&local, &g, 1, coll::DataType::f64, coll::RedOp::max, rt.world());
    return g;
  };
  const Residual cpu_allreduce = [&](double local, uint64_t) {
    std::string staging(sizeof local, '\0');
    std::memcpy(staging.data(), &local, sizeof local);
    double g = 0;
    for (const auto& v : rt.bootstrap().allgather(staging)) {
      if (v.size() != sizeof(double))
        raise(Errc::protocol, "jacobi2d cpu", "a PE sent " + std::to_string(v.size()) + " bytes, not 8");
      double d = 0;
      std::memcpy(&d, v.data(), sizeof d);
      g = d > g ? d : g;
    }
    return g;
  };
  switch (model) {
    case Model::loadstore:
      return run_loadstore(rt, cfg, allreduce);
    case Model::putget:
      return run_putget(rt, cfg, allreduce);
    case Model::sendrecv:
      return run_sendrecv(rt, cfg, allreduce);
    case Model::cpu:
      return run_cpu(rt, cfg, cpu_allreduce);
    default:
      break;
  }
  raise_unavailable("jacobi2d", model, false);
}

}  // namespace gpucomm::apps
