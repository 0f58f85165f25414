// N-Body on host-memory PEs, one function per communication model. Every model runs the same
// compute (nbody_accumulate per ring stage, nbody_integrate per step) and the same timing loop;
// the models differ in how a block travels to the next PE.
//
// The ring buffer is symmetric: two generations (step parity) of P slots, slot k (k = 1..P) for
// the block that arrives in pass k, and one flag per slot that holds the step number. In step s,
// stage k, a PE sends the block it holds (stage 0: its own bodies) into slot k + 1 of generation
// s mod 2 of the next PE. A PE cannot overwrite a block its neighbour still reads: that slot was
// last read in step s - 2, and when the sender starts step s it has received its own block back
// in pass P of step s - 1, so every PE of the ring (each of which forwarded that block in step
// s - 1) had finished step s - 2. Flags hold the step number, so nothing is reset.
#include <chrono>
#include <cstring>
#include <functional>
#include <string>

#include "gpucomm/apps/nbody.hpp"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/messenger.hpp"

namespace gpucomm::apps {
namespace {

using Clock = std::chrono::steady_clock;

// This PE's bodies and the ring buffer in the symmetric heap.
struct Ring {
  Runtime& rt;
  int pes, next, prev;
  uint64_t nb;
  double* own;      // [nb * kNbodyStride]: this PE's bodies
  double* slots;    // [2][pes][nb * kNbodyStride]
  uint64_t* flags;  // [2][pes]: the step whose block slot (parity, k) holds
  std::vector<double> vel, acc;
  Ring(Runtime& r, uint64_t n)
      : rt(r),
        pes(r.size()),
        next((r.rank() + 1) % r.size()),
        prev((r.rank() + r.size() - 1) % r.size()),
        nb(nbody_per_pe(n, r.size())),
        own(static_cast<double*>(r.calloc(nb * kNbodyStride, sizeof(double)))),
        slots(static_cast<double*>(r.calloc(2 * static_cast<uint64_t>(pes) * nb * kNbodyStride, sizeof(double)))),
        flags(static_cast<uint64_t*>(r.calloc(2 * static_cast<uint64_t>(pes), sizeof(uint64_t)))),
        vel(nb * 3, 0.0),
        acc(nb * 3, 0.0) {
    const auto init = nbody_initial_part(r.rank(), nb);
    std::memcpy(own, init.data(), init.size() * sizeof(double));
  }
  ~Ring() {
    rt.free(flags);
    rt.free(slots);
    rt.free(own);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  size_t block_bytes() const { return nb * kNbodyStride * sizeof(double); }
  size_t index(uint64_t step, int k) const {  // slot k (1..pes) of step's generation
    return (step & 1) * static_cast<size_t>(pes) + static_cast<size_t>(k - 1);
  }
  double* slot(uint64_t step, int k) const { return slots + index(step, k) * nb * kNbodyStride; }
  uint64_t* flag(uint64_t step, int k) const { return flags + index(step, k); }
  // The block held in stage k of `step`.
  double* held(uint64_t step, int k) const { return k == 0 ? own : slot(step, k); }
};

// One stage's communication: starts sending the held block (pass k + 1) and returns a function
// that waits until pass k + 1 arrived. The stage computes in between.
using Pass = std::function<std::function<void()>(uint64_t step, int k)>;

// The timing loop of every host model: a barrier (not timed) aligns the PEs, then the P stages and
// the integration of one step are timed together. Every step's checksum and the final positions
// are checked against the reference.
RunResult timed_loop(Ring& g, Model model, const RunConfig& cfg, const Pass& pass) {
  Runtime& rt = g.rt;
  const int steps = cfg.warmup + cfg.iters;
  const NbodyReference& ref = nbody_reference(rt.size(), cfg.size, steps);
  RunResult r;
  r.model = model;
  r.size = cfg.size;
  rt.barrier_all();  // every PE's bodies are initialized
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    rt.barrier_all();
    const auto t0 = Clock::now();
    for (int k = 0; k < g.pes; ++k) {
      const auto wait = pass(step, k);
      nbody_accumulate(g.own, g.nb, g.held(step, k), g.nb, g.acc.data());
      wait();
    }
    nbody_integrate(g.own, g.vel.data(), g.acc.data(), g.nb);
    const auto t1 = Clock::now();
    r.wrong += nbody_check_step(ref, rt.rank(), it, nbody_checksum(g.own, g.nb), cfg.corrupt_rank);
    if (it >= cfg.warmup) r.iter_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  r.wrong_cells = nbody_wrong_bodies(ref, rt.rank(), g.own, cfg.corrupt_rank);
  r.value = nbody_value(rt, nbody_checksum(g.own, g.nb), cfg.corrupt_rank);
  nbody_dump(cfg, model, rt.rank(), g.own, g.nb);
  rt.barrier_all();
  return r;
}

RunResult run_loadstore(Runtime& rt, const RunConfig& cfg) {
  Ring g(rt, cfg.size);
  if (!rt.ptr(g.slots, g.next) || !rt.ptr(g.flags, g.next)) {
    raise(Errc::unsupported, "nbody loadstore",
          "PE " + std::to_string(g.next) + " is not mapped here (load/store needs the next PE on this node)");
  }
  return timed_loop(g, Model::loadstore, cfg, [&](uint64_t step, int k) -> std::function<void()> {
    // Plain stores into the next PE's slot, then a release store of its flag.
    std::memcpy(static_cast<double*>(rt.ptr(g.slot(step, k + 1), g.next)), g.held(step, k), g.block_bytes());
    mem::host_store(static_cast<uint64_t*>(rt.ptr(g.flag(step, k + 1), g.next)), step, std::memory_order_release);
    return [&g, &rt, step, k] { rt.wait_until(g.flag(step, k + 1), Cmp::ge, step); };
  });
}

RunResult run_putget(Runtime& rt, const RunConfig& cfg) {
  Ring g(rt, cfg.size);
  return timed_loop(g, Model::putget, cfg, [&](uint64_t step, int k) -> std::function<void()> {
    rt.put_signal(g.slot(step, k + 1), g.held(step, k), g.block_bytes(), g.flag(step, k + 1), step, SignalOp::set,
                  g.next);
    return [&g, &rt, step, k] { rt.wait_until(g.flag(step, k + 1), Cmp::ge, step); };
  });
}

RunResult run_sendrecv(Runtime& rt, const RunConfig& cfg) {
  msg::Messenger messenger(rt);
  msg::Comm comm = messenger.world();
  Ring g(rt, cfg.size);
  constexpr int kTag = 21;
  std::vector<msg::Request> reqs;
  return timed_loop(g, Model::sendrecv, cfg, [&](uint64_t step, int k) -> std::function<void()> {
    reqs.clear();
    reqs.push_back(comm.irecv(g.slot(step, k + 1), g.block_bytes(), g.prev, kTag));
    reqs.push_back(comm.isend(g.held(step, k), g.block_bytes(), g.next, kTag));
    return [&] { messenger.waitall(reqs); };
  });
}

// The CPU-controlled baseline: the ring's passes collapse into one all-gather per step of every
// PE's own block through the bootstrap store (TCP, a CPU messaging path without shared memory),
// in stage 0; stage k reads the block of PE (r - k) mod P from it, in the same order as the ring.
RunResult run_cpu(Runtime& rt, const RunConfig& cfg) {
  Ring g(rt, cfg.size);
  std::vector<std::string> all;
  return timed_loop(g, Model::cpu, cfg, [&](uint64_t step, int k) -> std::function<void()> {
    if (k == 0) {
      all = rt.bootstrap().allgather(std::string(reinterpret_cast<const char*>(g.own), g.block_bytes()));
      for (const auto& v : all) {
        if (v.size() != g.block_bytes())
          raise(Errc::protocol, "nbody cpu", "a PE sent " + std::to_string(v.size()) + " bytes of bodies");
      }
    }
    // The block of the next stage into its slot, where timed_loop reads it.
    if (k + 1 < g.pes) {
      const int src = (rt.rank() + g.pes - (k + 1)) % g.pes;
      std::memcpy(g.slot(step, k + 1), all[static_cast<size_t>(src)].data(), g.block_bytes());
    }
    return [] {};
  });
}

}  // namespace

RunResult nbody_host(Runtime& rt, Model model, const RunConfig& cfg) {
  switch (model) {
    case Model::loadstore:
      return run_loadstore(rt, cfg);
    case Model::putget:
      return run_putget(rt, cfg);
    case Model::sendrecv:
      return run_sendrecv(rt, cfg);
    case Model::cpu:
      return run_cpu(rt, cfg);
    default:
      break;
  }
  raise_unavailable("nbody", model, false);
}

}  // namespace gpucomm::apps
