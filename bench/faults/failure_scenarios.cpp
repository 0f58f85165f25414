// Faults that end the job: the driver kills or stops a PE of `loop` from outside; the others
// inject their fault themselves (an exception, an abort, a bad environment, a timeout caught and
// ignored). Every PE that does not inject the fault must fail promptly with a message naming the
// victim; the driver measures how long the job took to end after the fault.
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "fault_pe.hpp"
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

}  // namespace

int run_failure(const std::string& scenario, int victim, int arg) {
  const bool known = scenario == "loop" || scenario == "exception" || scenario == "abort" ||
                     scenario == "bad-env-heap" || scenario == "bad-env-timeout" || scenario == "caught-timeout";
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
    } else {
      const bool self = scenario == "exception" || scenario == "abort";
      busy_loop(rt, arg, victim, self ? scenario.c_str() : nullptr);
    }
    return rt.rank() == victim ? kFailed : 0;
  });
}

}  // namespace faultpe
