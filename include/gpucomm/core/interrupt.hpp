#pragma once
// Interrupting blocking waits. A front end that must react to signals while gpucomm blocks (the
// Python module: Ctrl-C raises KeyboardInterrupt) installs a check on the waiting thread for the
// duration of a call; every blocking wait of that thread calls it every few milliseconds and
// leaves with Errc::aborted ("interrupted") when it returns true. Without a check installed (C++
// programs) waits are not interrupted.
namespace gpucomm {

// Returns true when the wait should stop; `ctx` is the pointer given with it.
using InterruptCheck = bool (*)(void* ctx);

// Installs `check` on this thread while the scope lives (scopes nest; the innermost wins).
class InterruptScope {
 public:
  InterruptScope(InterruptCheck check, void* ctx) noexcept;
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  InterruptCheck prev_check_;
  void* prev_ctx_;
};

// Calls this thread's check, at most once per 20 ms; false when none is installed.
bool interrupt_requested() noexcept;
// Raises Errc::aborted naming `what` when interrupt_requested().
void check_interrupt(const char* what);

}  // namespace gpucomm
