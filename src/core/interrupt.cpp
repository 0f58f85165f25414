#include "gpucomm/core/interrupt.hpp"

#include <chrono>
#include <cstdint>

#include "gpucomm/core/error.hpp"

namespace gpucomm {
namespace {
struct Slot {
  InterruptCheck check;
  void* ctx;
  int64_t next_ns;  // steady clock: when the check may run again
};
constinit thread_local Slot t_slot{nullptr, nullptr, 0};
constexpr int64_t kPeriodNs = 20'000'000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

InterruptScope::InterruptScope(InterruptCheck check, void* ctx) noexcept
    : prev_check_(t_slot.check), prev_ctx_(t_slot.ctx) {
  t_slot.check = check;
  t_slot.ctx = ctx;
  t_slot.next_ns = 0;
}

InterruptScope::~InterruptScope() {
  t_slot.check = prev_check_;
  t_slot.ctx = prev_ctx_;
}

bool interrupt_requested() noexcept {
  if (!t_slot.check) return false;
  const int64_t now = now_ns();
  if (now < t_slot.next_ns) return false;
  t_slot.next_ns = now + kPeriodNs;
  return t_slot.check(t_slot.ctx);
}

void check_interrupt(const char* what) {
  if (interrupt_requested()) raise(Errc::aborted, what, "interrupted by a signal while waiting");
}

}  // namespace gpucomm
