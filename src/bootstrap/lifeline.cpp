#include "lifeline.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <thread>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/log.hpp"

namespace gpucomm::bootstrap {
namespace {

bool parse_int(std::string_view text, long* out) {
  const char* first = text.data();
  const char* last = first + text.size();
  auto [end, ec] = std::from_chars(first, last, *out);
  return ec == std::errc() && end == last && !text.empty();
}

// The lifeline socket named by GPUCOMM_LIFELINE=FD:PID, or -1 (with a warning when the variable
// is set but does not name a socket connected to process PID).
int lifeline_fd() {
  auto v = env::get("GPUCOMM_LIFELINE");
  if (!v || v->empty()) return -1;
  const size_t colon = v->find(':');
  long fd = -1, pid = -1;
  if (colon == std::string::npos || !parse_int(std::string_view(*v).substr(0, colon), &fd) ||
      !parse_int(std::string_view(*v).substr(colon + 1), &pid) || fd <= 2 || pid <= 0) {
    GPUCOMM_LOG(warn, "GPUCOMM_LIFELINE='" << *v << "' is not FD:PID; no lifeline to the launcher");
    return -1;
  }
  int type = 0;
  socklen_t len = sizeof type;
  ucred cred{};
  socklen_t clen = sizeof cred;
  sockaddr_storage addr{};
  socklen_t alen = sizeof addr;
  const int f = static_cast<int>(fd);
  const bool ok = ::getsockopt(f, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM &&
                  ::getsockname(f, reinterpret_cast<sockaddr*>(&addr), &alen) == 0 && addr.ss_family == AF_UNIX &&
                  ::getsockopt(f, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 && cred.pid == pid;
  if (!ok) {
    GPUCOMM_LOG(debug, "GPUCOMM_LIFELINE=" << *v << " does not name a socket of launcher " << pid
                                           << " (inherited by a program the PE started?); ignored");
    return -1;
  }
  ::fcntl(f, F_SETFD, FD_CLOEXEC);  // programs this PE starts are not PEs of the job
  return f;
}

}  // namespace

Lifeline* Lifeline::get() {
  // Made once and never destroyed: its watcher thread lives as long as the process.
  static Lifeline* instance = [] {
    const int fd = lifeline_fd();
    if (fd < 0) return static_cast<Lifeline*>(nullptr);
    auto* l = new Lifeline(fd);
    std::thread([l] { l->watch(); }).detach();
    return l;
  }();
  return instance;
}

Lifeline::Lifeline(int fd) : fd_(fd) {}

void Lifeline::attach(JobFailure* f) {
  int rank = -1;
  std::string why;
  {
    std::lock_guard<std::mutex> g(mu_);
    attached_ = f;
    if (!gone_) return;
    rank = gone_rank_;
    why = gone_why_;
  }
  f->record(rank, why, FailureSource::launcher);
}

void Lifeline::detach(const JobFailure* f) {
  std::lock_guard<std::mutex> g(mu_);
  if (attached_ == f) attached_ = nullptr;
}

void Lifeline::deliver(int rank, const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);  // held while recording, so detach() waits for it
  if (attached_) attached_->record(rank, why, FailureSource::launcher);
}

void Lifeline::report(int rank, const std::string& why) {
  std::string line = "failed " + std::to_string(rank) + " ";
  for (char c : why) line += (c == '\n' || c == '\r') ? ' ' : c;
  line += '\n';
  // A few hundred bytes into an idle socket: it fits the buffer; if not, the report is dropped.
  [[maybe_unused]] ssize_t w = ::send(fd_, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

void Lifeline::watch() {
  std::string buf;
  char chunk[512];
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const ssize_t r = ::recv(fd_, chunk, sizeof chunk, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) break;
    buf.append(chunk, static_cast<size_t>(r));
    for (size_t nl; (nl = buf.find('\n')) != std::string::npos; buf.erase(0, nl + 1)) {
      const std::string line = buf.substr(0, nl);
      // "abort RANK TEXT": the launcher relays a failure.
      const size_t sp = line.find(' ', 6);
      long rank = -1;
      if (line.rfind("abort ", 0) == 0 && sp != std::string::npos &&
          parse_int(std::string_view(line).substr(6, sp - 6), &rank)) {
        deliver(static_cast<int>(rank), line.substr(sp + 1));
      }
    }
    if (buf.size() > 65536) buf.clear();  // no line that long comes from the launcher
  }
  std::lock_guard<std::mutex> g(mu_);
  gone_ = true;
  gone_why_ = "the launcher (gpucomm run) is gone: its lifeline to this PE closed";
  if (attached_) attached_->record(gone_rank_, gone_why_, FailureSource::launcher);
}

}  // namespace gpucomm::bootstrap
