#pragma once
// One error model for the host side: every failure is a gpucomm::Error carrying a code, the
// call that failed, the rank that saw it, and the underlying system or CUDA error if any.
#include <stdexcept>
#include <string>

namespace gpucomm {

enum class Errc {
  invalid_argument,  // a caller passed a bad value; the message names the argument
  timeout,           // a blocking wait ran past its limit; the message says who waited for what
  peer_failure,      // another PE died or disconnected
  protocol,          // a malformed, foreign or unauthenticated message
  system,            // an OS call failed (errno attached)
  cuda,              // a CUDA runtime or driver call failed
  unsupported,       // the operation is not available here (no GPU, no MPI, ...)
  out_of_memory,     // an allocation (heap, queue) is exhausted
  internal,          // a broken invariant inside gpucomm
  aborted,           // this PE's runtime was aborted (Runtime::abort, an interrupt): nothing works any more
  last = aborted,
};

const char* errc_name(Errc c) noexcept;

class Error : public std::runtime_error {
 public:
  Error(Errc code, std::string call, std::string detail, int rank = -1);
  Errc code() const noexcept { return code_; }
  const std::string& call() const noexcept { return call_; }
  const std::string& detail() const noexcept { return detail_; }
  int rank() const noexcept { return rank_; }

 private:
  Errc code_;
  std::string call_;
  std::string detail_;
  int rank_;
};

// Throws gpucomm::Error; `call` names the API entry or system call, `detail` says what is wrong.
[[noreturn]] void raise(Errc code, const std::string& call, const std::string& detail);
// Throws Errc::system with strerror(err).
[[noreturn]] void raise_errno(const std::string& call, int err, const std::string& detail = {});
// Throws Errc::invalid_argument naming the argument.
[[noreturn]] void raise_arg(const std::string& call, const std::string& arg, const std::string& why);

// The code of the last gpucomm::Error created on this thread, if any: while an exception unwinds
// (where it cannot be caught), the runtime tells from it whether a peer's failure caused it.
bool last_error_on_this_thread(Errc* code) noexcept;

// The rank used in error and log prefixes of this process (-1 until the runtime knows it).
void set_process_rank(int rank, int size) noexcept;
int process_rank() noexcept;
int process_size() noexcept;

}  // namespace gpucomm

#define GPUCOMM_CHECK_ARG(cond, call, arg, why)              \
  do {                                                       \
    if (!(cond)) ::gpucomm::raise_arg((call), (arg), (why)); \
  } while (0)
