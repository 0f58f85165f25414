#pragma once
// Blocking calls from Python: run without the interpreter's lock (other Python threads go on) and
// with an interrupt check, so that Ctrl-C (a signal handler that raises) ends a wait at once: the
// wait leaves with Errc::aborted and the Python exception the handler raised (KeyboardInterrupt)
// propagates instead. The runtime noted the interrupted wait, so closing it then aborts the job.
#include <nanobind/nanobind.h>

#include <utility>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/interrupt.hpp"

namespace gpucomm::python {

// Runs the interpreter's signal handlers (main thread only; a no-op elsewhere). True when one
// raised: its exception is then set.
inline bool python_signal_pending(void*) {
  nanobind::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

template <class Fn>
decltype(auto) blocking(Fn&& fn) {
  try {
    nanobind::gil_scoped_release release;
    InterruptScope interrupts(&python_signal_pending, nullptr);
    return std::forward<Fn>(fn)();
  } catch (const Error&) {
    // The lock is held again here. An interrupt left the handler's exception set: raise that.
    if (PyErr_Occurred()) throw nanobind::python_error();
    throw;
  }
}

// The same as a scope, for blocks that wrap a call inline: releases the lock and installs the
// interrupt check while it lives. An interrupt's Python exception (set by the handler) is kept by
// the error translator (bind_errors.cpp) instead of the Errc::aborted that ended the wait.
class Unlocked {
 public:
  Unlocked() = default;
  Unlocked(const Unlocked&) = delete;
  Unlocked& operator=(const Unlocked&) = delete;

 private:
  nanobind::gil_scoped_release release_;
  InterruptScope interrupts_{&python_signal_pending, nullptr};
};

}  // namespace gpucomm::python
