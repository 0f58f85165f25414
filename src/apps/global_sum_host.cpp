// Global Sum on host-memory PEs, one function per communication model. Every model runs the same
// local reduce (global_sum_local) and the same timing loop; only the exchange of one value per PE
// differs. The mailbox models all-gather the local sums into a per-PE mailbox and sum it in rank
// order, as Klenk, Oden and Fröning's GGAS version does ("all GPUs send their input data to all
// other GPUs, which then perform the reduction on their own local memory").
#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>

#include "gpucomm/apps/global_sum.hpp"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/messenger.hpp"

namespace gpucomm::apps {
namespace {

using Clock = std::chrono::steady_clock;
// One step's exchange: takes this PE's local sum and the step number (1, 2, ...), returns the
// global sum.
using Exchange = std::function<double(double local, uint64_t step)>;

// The timing loop of every host model: a barrier (not timed) aligns the PEs, then the local reduce
// and the exchange are timed together. Every step's result is checked against the reference.
RunResult timed_loop(Runtime& rt, Model model, const RunConfig& cfg, const Exchange& exchange) {
  const std::vector<double> x = global_sum_inputs(rt.rank(), cfg.size);
  const auto reference = static_cast<double>(global_sum_reference(rt.size(), cfg.size));
  RunResult r;
  r.model = model;
  r.size = cfg.size;
  const int steps = cfg.warmup + cfg.iters;
  for (int it = 0; it < steps; ++it) {
    rt.barrier_all();
    const auto t0 = Clock::now();
    double local = global_sum_local(x.data(), cfg.size);
    if (rt.rank() == cfg.corrupt_rank) local += 1;
    const double g = exchange(local, static_cast<uint64_t>(it) + 1);
    const auto t1 = Clock::now();
    if (g != reference) ++r.wrong;
    if (it >= cfg.warmup) r.iter_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    r.value = g;
  }
  rt.barrier_all();
  return r;
}

// The symmetric mailbox of the all-gather models: two generations (step parity) of one slot and
// one flag per PE. A PE writes generation s % 2 in step s; it cannot overwrite a slot that a peer
// still reads, since it starts step s + 2 only after that peer's value of step s + 1 arrived, which
// the peer sent after it had read step s.
struct Mailbox {
  Runtime& rt;
  double* slots;    // [2][size]
  uint64_t* flags;  // [2][size]: the step whose value is in the slot
  explicit Mailbox(Runtime& r)
      : rt(r),
        slots(static_cast<double*>(r.calloc(2 * static_cast<size_t>(r.size()), sizeof(double)))),
        flags(static_cast<uint64_t*>(r.calloc(2 * static_cast<size_t>(r.size()), sizeof(uint64_t)))) {}
  ~Mailbox() {
    rt.free(flags);
    rt.free(slots);
  }
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;
  size_t index(uint64_t step, int pe) const {
    return static_cast<size_t>(step & 1) * static_cast<size_t>(rt.size()) + static_cast<size_t>(pe);
  }
  // Waits for every PE's value of `step` (the library's timed wait), then sums them in rank order.
  double gather_sum(uint64_t step) {
    double s = 0;
    for (int p = 0; p < rt.size(); ++p) {
      rt.wait_until(flags + index(step, p), Cmp::ge, step);
      s += slots[index(step, p)];
    }
    return s;
  }
};

RunResult run_loadstore(Runtime& rt, const RunConfig& cfg) {
  Mailbox box(rt);
  const int me = rt.rank(), n = rt.size();
  std::vector<double*> slot_of(static_cast<size_t>(n));
  std::vector<uint64_t*> flag_of(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    slot_of[static_cast<size_t>(p)] = static_cast<double*>(rt.ptr(box.slots, p));
    flag_of[static_cast<size_t>(p)] = static_cast<uint64_t*>(rt.ptr(box.flags, p));
    if (!slot_of[static_cast<size_t>(p)] || !flag_of[static_cast<size_t>(p)]) {
      raise(Errc::unsupported, "global_sum loadstore",
            "PE " + std::to_string(p) + " is not mapped here (load/store needs every PE on this node)");
    }
  }
  return timed_loop(rt, Model::loadstore, cfg, [&](double local, uint64_t step) {
    const size_t mine = box.index(step, me);
    for (int p = 0; p < n; ++p) slot_of[static_cast<size_t>(p)][mine] = local;  // plain stores into peers
    for (int p = 0; p < n; ++p)  // release: whoever sees the flag sees the value
      mem::host_store(flag_of[static_cast<size_t>(p)] + mine, step, std::memory_order_release);
    return box.gather_sum(step);
  });
}

RunResult run_putget(Runtime& rt, const RunConfig& cfg) {
  Mailbox box(rt);
  const int me = rt.rank(), n = rt.size();
  return timed_loop(rt, Model::putget, cfg, [&](double local, uint64_t step) {
    const size_t mine = box.index(step, me);
    for (int p = 0; p < n; ++p)
      rt.put_signal(box.slots + mine, &local, sizeof local, box.flags + mine, step, SignalOp::set, p);
    return box.gather_sum(step);
  });
}

RunResult run_sendrecv(Runtime& rt, const RunConfig& cfg) {
  msg::Messenger messenger(rt);
  msg::Comm comm = messenger.world();
  const int me = rt.rank(), n = rt.size();
  constexpr int kTag = 7;
  std::vector<double> in(static_cast<size_t>(n));
  std::vector<msg::Request> reqs;
  auto r = timed_loop(rt, Model::sendrecv, cfg, [&](double local, uint64_t) {
    reqs.clear();
    for (int p = 0; p < n; ++p)
      if (p != me) reqs.push_back(comm.irecv(&in[static_cast<size_t>(p)], sizeof(double), p, kTag));
    for (int p = 0; p < n; ++p)
      if (p != me) reqs.push_back(comm.isend(&local, sizeof local, p, kTag));
    messenger.waitall(reqs);
    in[static_cast<size_t>(me)] = local;
    double s = 0;
    for (double v : in) s += v;
    return s;
  });
  return r;
}

RunResult run_collective(Runtime& rt, const RunConfig& cfg) {
  coll::Collectives coll(rt);
  return timed_loop(rt, Model::collective, cfg, [&](double local, uint64_t) {
    double g = 0;
    coll.allreduce(&local, &g, 1, coll::DataType::f64, coll::RedOp::sum, rt.world());
    return g;
  });
}

RunResult run_cpu(Runtime& rt, const RunConfig& cfg) {
  std::string staging(sizeof(double), '\0');  // the host staging buffer of a CPU-controlled program
  return timed_loop(rt, Model::cpu, cfg, [&](double local, uint64_t) {
    std::memcpy(staging.data(), &local, sizeof local);
    const auto all = rt.bootstrap().allgather(staging);
    double s = 0;
    for (const auto& v : all) {
      if (v.size() != sizeof(double))
        raise(Errc::protocol, "global_sum cpu", "a PE sent " + std::to_string(v.size()) + " bytes, not 8");
      double d = 0;
      std::memcpy(&d, v.data(), sizeof d);
      s += d;
    }
    return s;
  });
}

}  // namespace

RunResult global_sum_host(Runtime& rt, Model model, const RunConfig& cfg) {
  switch (model) {
    case Model::loadstore:
      return run_loadstore(rt, cfg);
    case Model::putget:
      return run_putget(rt, cfg);
    case Model::sendrecv:
      return run_sendrecv(rt, cfg);
    case Model::collective:
      return run_collective(rt, cfg);
    case Model::cpu:
      return run_cpu(rt, cfg);
    default:
      break;
  }
  raise_unavailable("global_sum", model, false);
}

}  // namespace gpucomm::apps
