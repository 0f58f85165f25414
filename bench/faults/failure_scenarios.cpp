// Faults that end the job: the driver kills or stops a PE of `loop` from outside; the others
// inject their fault themselves (an exception, an abort, a bad environment, a timeout caught and
// ignored, an error raised inside a collective). Every PE that does not inject the fault must fail promptly with a
// message naming the victim; the driver measures how long the job took to end after the fault.
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "fault_pe.hpp"
#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/gpucomm.hpp"

namespace faultpe {
namespace {

using gpucomm::Runtime;

// Barriers and one atomic per iteration, forever (or `iters`): what the others do while the
// victim fails.
void busy_loop(Runtime& rt, int iters, int victim, const char* fault) {
  auto* w = rt.alloc<uint64_t>(1);
  rt.barrier_all();
  // The store's address (not its token), for the hostile clients of the driver.
  const char* uid = std::getenv("GPUCOMM_UNIQUE_ID");
  std::string store = uid ? std::string(uid) : std::string();
  store = store.rfind("gpucomm1:", 0) == 0 ? store.substr(9, store.rfind(':') - 9) : "?";
  say("READY rank %d pid %d store %s", rt.rank(), static_cast<int>(::getpid()), store.c_str());
  for (int i = 1; iters <= 0 || i <= iters; ++i) {
    rt.atomic_add<uint64_t>(w, 1, (rt.rank() + 1) % rt.size());
    rt.barrier_all();
    if (fault && rt.rank() == victim && i == 10) {
      fault_here(rt.rank(), fault);
      if (std::string(fault) == "exception") throw std::runtime_error("injected failure on this rank");
      rt.abort("injected abort");
      return;
    }
  }
}

// A wait of its own times out on the victim, which catches the error and lets its runtime go out of
// scope normally: the runtime must abort the job, not wait for the others in finalize.
void caught_timeout(Runtime& rt, int victim) {
  auto* w = rt.alloc<uint64_t>(1);
  rt.barrier_all();
  say("READY rank %d pid %d", rt.rank(), static_cast<int>(::getpid()));
  if (rt.rank() != victim) {
    for (;;) rt.barrier_all();
  }
  try {
    rt.wait_until<uint64_t>(w, gpucomm::Cmp::eq, 1);  // nobody signals it
  } catch (const gpucomm::Error& e) {
    fault_here(rt.rank(), "caught-timeout");
    say("CAUGHT rank %d: %s", rt.rank(), e.what());
  }
}

// Every PE runs alltoallv (one element per pair) in a loop; in the 10th the victim expects two
// elements from its successor, which sends one. Only the victim's check sees it: it raises inside
// the collective, after its first round, while the others go on to wait for its data. The error
// leaves the victim's runtime, which aborts the job; the others' waits must leave naming it.
void coll_raise(Runtime& rt, int victim) {
  namespace coll = gpucomm::coll;
  // A small workspace: the fault PE's heap is small (GPUCOMM_HEAP_SIZE=8M in the fault cases).
  setenv("GPUCOMM_COLL_SCRATCH", "4K", 0);
  setenv("GPUCOMM_COLL_LL", "2K", 0);
  setenv("GPUCOMM_COLL_MAX_CTAS", "1", 0);
  coll::Collectives c(rt);
  const int n = rt.size(), me = rt.rank();
  const auto un = static_cast<size_t>(n);
  std::vector<uint64_t> send_counts(un, 1), displs(un), recv_counts(un, 1);
  for (size_t i = 0; i < un; ++i) displs[i] = i;
  std::vector<int32_t> in(un, me), out(un + 1);
  rt.barrier_all();
  say("READY rank %d pid %d", me, static_cast<int>(::getpid()));
  for (int i = 1;; ++i) {
    if (me == victim && i == 10) {
      recv_counts[static_cast<size_t>((victim + 1) % n)] = 2;
      fault_here(me, "alltoallv with recv_counts that disagree with a peer's send_counts");
    }
    c.alltoallv(in.data(), send_counts.data(), displs.data(), out.data(), recv_counts.data(), displs.data(),
                coll::DataType::i32, rt.world());
  }
}

}  // namespace

int run_failure(const std::string& scenario, int victim, int arg) {
  const bool known = scenario == "loop" || scenario == "exception" || scenario == "abort" ||
                     scenario == "bad-env-heap" || scenario == "bad-env-timeout" || scenario == "caught-timeout" ||
                     scenario == "coll-raise";
  if (!known) return -1;
  const int me = env_rank();
  if (me == victim && scenario == "bad-env-heap") {
    fault_here(me, "bad GPUCOMM_HEAP_SIZE");
    setenv("GPUCOMM_HEAP_SIZE", "12Q", 1);  // read after the PE joined the store
  }
  if (me == victim && scenario == "bad-env-timeout") {
    fault_here(me, "bad GPUCOMM_TIMEOUT");
    setenv("GPUCOMM_TIMEOUT", "-3", 1);  // read before the PE can reach the store
  }
  if (me == victim && scenario == "caught-timeout") setenv("GPUCOMM_TIMEOUT", "0.5", 1);
  return with_runtime([&](Runtime& rt) {
    if (scenario == "caught-timeout") {
      caught_timeout(rt, victim);
    } else if (scenario == "coll-raise") {
      coll_raise(rt, victim);
    } else {
      const bool self = scenario == "exception" || scenario == "abort";
      busy_loop(rt, arg, victim, self ? scenario.c_str() : nullptr);
    }
    return rt.rank() == victim ? kFailed : 0;
  });
}

}  // namespace faultpe
