#pragma once
// Polling helpers shared by the transport, its tests and its benchmark (header-only).
//   Backoff: idle backoff of a polling loop: spin, then yield, then sleep briefly, so that on
//     machines with fewer cores than busy processes the peers (whose progress this PE waits
//     for) get the CPU.
//   progressing_barrier: a blocking collective (a bootstrap barrier) on this thread while a
//     helper thread keeps calling progress(): over transports that emulate RMA with active
//     messages a PE's peers need its progress to complete their own operations. The caller
//     must not touch what progress() touches until it returns (the helper is joined first).
//     `may_sleep` as for Backoff.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <thread>

namespace gpucomm::transport::ucx {

class Backoff {
 public:
  // may_sleep: the loop's `events` count everything the worker did (ucp_worker_progress), so a
  // long idle stretch really is idle. Remote::progress() counts only this PE's own completed
  // operations, which stay 0 on a PE that only serves as a target: loops over it must not sleep.
  explicit Backoff(bool may_sleep) : may_sleep_(may_sleep) {}
  void reset() { idle_ = 0; }
  void idle() {
    ++idle_;
    if (idle_ < 64) return;
    if (idle_ < 1024 || !may_sleep_) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  // Counts a poll that found `events` things to do.
  void after(size_t events) {
    if (events) {
      reset();
    } else {
      idle();
    }
  }

 private:
  uint32_t idle_ = 0;
  bool may_sleep_;
};

template <class Progress, class Blocking>
void progressing_barrier(Progress&& progress, Blocking&& blocking, bool may_sleep) {
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::thread helper([&] {
    try {
      Backoff backoff(may_sleep);
      while (!stop.load(std::memory_order_acquire)) backoff.after(progress());
    } catch (...) {
      error = std::current_exception();
    }
  });
  try {
    blocking();
  } catch (...) {
    stop.store(true, std::memory_order_release);
    helper.join();
    throw;
  }
  stop.store(true, std::memory_order_release);
  helper.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace gpucomm::transport::ucx
