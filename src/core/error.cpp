#include "gpucomm/core/error.hpp"

#include <atomic>
#include <cstring>
#include <sstream>

namespace gpucomm {
namespace {
std::atomic<int> g_rank{-1};
std::atomic<int> g_size{0};
constinit thread_local bool t_any_error = false;
constinit thread_local Errc t_last_error = Errc::internal;

std::string compose(Errc code, const std::string& call, const std::string& detail, int rank) {
  std::ostringstream os;
  os << "gpucomm";
  if (rank >= 0) os << " rank " << rank;
  os << ": " << call << ": " << detail << " [" << errc_name(code) << "]";
  return os.str();
}
}  // namespace

const char* errc_name(Errc c) noexcept {
  switch (c) {
    case Errc::invalid_argument:
      return "invalid argument";
    case Errc::timeout:
      return "timeout";
    case Errc::peer_failure:
      return "peer failure";
    case Errc::protocol:
      return "protocol error";
    case Errc::system:
      return "system error";
    case Errc::cuda:
      return "CUDA error";
    case Errc::unsupported:
      return "unsupported";
    case Errc::out_of_memory:
      return "out of memory";
    case Errc::internal:
      return "internal error";
    case Errc::aborted:
      return "aborted";
  }
  return "unknown";
}

Error::Error(Errc code, std::string call, std::string detail, int rank)
    : std::runtime_error(compose(code, call, detail, rank)),
      code_(code),
      call_(std::move(call)),
      detail_(std::move(detail)),
      rank_(rank) {
  t_any_error = true;
  t_last_error = code;
}

bool last_error_on_this_thread(Errc* code) noexcept {
  if (t_any_error) *code = t_last_error;
  return t_any_error;
}

void raise(Errc code, const std::string& call, const std::string& detail) {
  throw Error(code, call, detail, process_rank());
}

void raise_errno(const std::string& call, int err, const std::string& detail) {
  std::string d = detail.empty() ? std::string(std::strerror(err)) : detail + ": " + std::strerror(err);
  raise(Errc::system, call, d);
}

void raise_arg(const std::string& call, const std::string& arg, const std::string& why) {
  raise(Errc::invalid_argument, call, "argument '" + arg + "': " + why);
}

void set_process_rank(int rank, int size) noexcept {
  g_rank.store(rank);
  g_size.store(size);
}
int process_rank() noexcept {
  return g_rank.load();
}
int process_size() noexcept {
  return g_size.load();
}

}  // namespace gpucomm
