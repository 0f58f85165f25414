#pragma once
// The host-side wait loop used by every blocking host operation: spin briefly, then yield,
// then sleep, while watching the job's liveness and the timeout. The error names who waited
// for what (the describe() callback is only called when a wait fails).
#include <sched.h>

#include <chrono>
#include <string>
#include <thread>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/interrupt.hpp"
#include "gpucomm/core/liveness.hpp"

namespace gpucomm::detail {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Raises `code` for a wait of this PE that failed by itself, after noting it with the job's
// liveness (so that the PE aborts instead of finalizing).
template <class Describe>
[[noreturn]] void fail_wait(Errc code, const JobLiveness* b, Describe&& describe, const std::string& why) {
  std::string what = describe();
  if (b) b->note_local_failure(what + ": " + why);
  raise(code, what, why);
}

// `b` may be null (no job to watch: unit tests of the queues, agents without a runtime). A
// front end's interrupt check (gpucomm/core/interrupt.hpp) ends the wait with Errc::aborted.
template <class Ready, class Describe>
void host_wait(Ready&& ready, const JobLiveness* b, int64_t timeout_ms, Describe&& describe) {
  if (ready()) return;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t spins = 1;; ++spins) {
    if (ready()) return;
    if (spins < 512) {
      cpu_relax();
    } else if (spins < 8192) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    if ((spins & 63) == 0) {
      // The condition may have come true while this thread slept, just before the job failed (a
      // peer that did its part and then died): what was waited for wins over the failure.
      if (b && b->failed()) {
        if (ready()) return;
        raise(Errc::peer_failure, describe(), "the job failed: " + b->failure());
      }
      if (interrupt_requested()) {
        if (ready()) return;
        fail_wait(Errc::aborted, b, describe, "interrupted by a signal while waiting");
      }
      if (timeout_ms > 0) {
        auto waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
        if (waited >= timeout_ms) {
          if (ready()) return;
          fail_wait(Errc::timeout, b, describe,
                    "timed out after " + std::to_string(waited / 1000.0).substr(0, 6) +
                        " s (GPUCOMM_TIMEOUT sets the limit)");
        }
      }
    }
  }
}

template <class Ready, class Describe>
void host_wait(Ready&& ready, const JobLiveness& b, int64_t timeout_ms, Describe&& describe) {
  host_wait(static_cast<Ready&&>(ready), &b, timeout_ms, static_cast<Describe&&>(describe));
}

}  // namespace gpucomm::detail
