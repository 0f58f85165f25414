#include "fd_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"

namespace gpucomm::heap {
namespace {

constexpr size_t kMaxFds = 64;
constexpr uint32_t kRequestMagic = 0x58444647;  // "GFDX"

struct Request {
  uint32_t magic;
  int32_t rank;  // the requesting PE
  FdSecret secret;
};

// Milliseconds left before `deadline` (at least 0), for poll.
int ms_left(FdClock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - FdClock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// Waits until `fd` is readable before `deadline`; false on timeout.
bool wait_readable(int fd, FdClock::time_point deadline) {
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, ms_left(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

// Reads exactly `n` bytes before `deadline`; false on EOF, error or timeout.
bool read_exact(int fd, void* buf, size_t n, FdClock::time_point deadline) {
  auto* p = static_cast<char*>(buf);
  size_t got = 0;
  while (got < n) {
    if (!wait_readable(fd, deadline)) return false;
    ssize_t r = ::recv(fd, p + got, n - got, MSG_DONTWAIT);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
      return false;
    }
  }
  return true;
}

bool same_secret(const FdSecret& a, const FdSecret& b) {
  uint8_t diff = 0;  // constant time
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

ucred peer_cred(int fd) {
  ucred c{};
  socklen_t len = sizeof c;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0) c.pid = -1;
  return c;
}

// A fresh directory only this user can enter: under $XDG_RUNTIME_DIR when it is a private
// directory of this user (and short enough for a socket path), else under /tmp.
std::string make_private_dir() {
  std::string base = "/tmp";
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && x[0] == '/' && std::strlen(x) < 60) {
    struct stat st{};
    if (::lstat(x, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0) base = x;
  }
  std::string tmpl = base + "/gpucomm-" + std::to_string(::geteuid()) + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) raise_errno("fd exchange: mkdtemp", errno, tmpl);
  return tmpl;  // mkdtemp creates it with mode 0700
}

void send_fds(int sock, const std::vector<int>& fds) {
  uint32_t n = static_cast<uint32_t>(fds.size());
  iovec iov{&n, sizeof n};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (n > 0) {
    msg.msg_control = ctrl;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * n);
  }
  while (::sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) raise_errno("fd exchange: sendmsg", errno);
  }
}

std::vector<int> recv_fds(int sock, int from_rank, FdClock::time_point deadline) {
  uint32_t n = 0;
  iovec iov{&n, sizeof n};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  if (!wait_readable(sock, deadline)) {
    raise(
        Errc::timeout, "fd exchange",
        "rank " + std::to_string(from_rank) + " did not send its descriptors in time (GPUCOMM_TIMEOUT sets the limit)");
  }
  ssize_t r;
  while ((r = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT)) < 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN && wait_readable(sock, deadline)) continue;
    raise_errno("fd exchange: recvmsg", errno, "from rank " + std::to_string(from_rank));
  }
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    fds.resize(count);
    std::memcpy(fds.data(), CMSG_DATA(c), count * sizeof(int));
  }
  if (r != sizeof n || fds.size() != n || (msg.msg_flags & MSG_CTRUNC)) {
    for (int fd : fds) ::close(fd);
    if (r != sizeof n) {
      raise(Errc::peer_failure, "fd exchange",
            "rank " + std::to_string(from_rank) + " closed the connection without sending its descriptors");
    }
    raise(Errc::protocol, "fd exchange",
          "rank " + std::to_string(from_rank) + " sent " + std::to_string(n) + " descriptors, received " +
              std::to_string(fds.size()));
  }
  return fds;
}

}  // namespace

FdSecret random_secret() {
  FdSecret s{};
  size_t got = 0;
  while (got < s.size()) {
    ssize_t r = ::getrandom(s.data() + got, s.size() - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      raise_errno("getrandom", errno);
    }
    got += static_cast<size_t>(r);
  }
  return s;
}

void FdServer::expect(std::map<int, pid_t> peers) {
  peers_ = std::move(peers);
  done_.clear();
  for (const auto& [rank, pid] : peers_) done_[rank] = false;
}

FdServer::FdServer(std::vector<int> fds, const FdSecret& secret) : fds_(std::move(fds)), secret_(secret) {
  GPUCOMM_CHECK_ARG(fds_.size() <= kMaxFds, "exchange_fds", "my_fds", "at most 64 descriptors");
  dir_ = make_private_dir();
  path_ = dir_ + "/fd.sock";
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path_.size() + 1 > sizeof a.sun_path) {
    ::rmdir(dir_.c_str());
    raise(Errc::internal, "fd exchange", "socket path too long: " + path_);
  }
  std::memcpy(a.sun_path, path_.c_str(), path_.size() + 1);
  listen_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_ < 0 || ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_, 128) != 0) {
    int e = errno;
    if (listen_ >= 0) ::close(listen_);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
    raise_errno("fd exchange: bind", e, path_);
  }
}

FdServer::~FdServer() {
  ::close(listen_);
  ::unlink(path_.c_str());
  ::rmdir(dir_.c_str());
  if (stats_.rejected > 1) {
    GPUCOMM_LOG(info, "fd exchange: rejected " << stats_.rejected << " connections that were not an expected PE");
  }
}

void FdServer::reject(const std::string& why) {
  ++stats_.rejected;
  if (stats_.rejected == 1) {
    GPUCOMM_LOG(warn, "fd exchange: refused a connection: " << why << " (later refusals are counted, not logged)");
  } else {
    GPUCOMM_LOG(debug, "fd exchange: refused a connection: " << why);
  }
}

bool FdServer::serve_one(int conn) {
  const ucred who = peer_cred(conn);
  if (who.uid != ::geteuid()) {
    reject("user " + std::to_string(who.uid) + " is not this job's user");
    return false;
  }
  const bool known_pid = std::any_of(peers_.begin(), peers_.end(), [&](const auto& p) { return p.second == who.pid; });
  if (!known_pid) {
    reject("process " + std::to_string(who.pid) + " is not a PE of this job");
    return false;
  }
  Request req{};
  if (!read_exact(conn, &req, sizeof req, FdClock::now() + kRequestDeadline)) {
    reject("process " + std::to_string(who.pid) + " sent no complete request in time");
    return false;
  }
  auto peer = peers_.find(req.rank);
  if (req.magic != kRequestMagic || !same_secret(req.secret, secret_) || peer == peers_.end() ||
      peer->second != who.pid) {
    reject("process " + std::to_string(who.pid) + " sent a request without this exchange's secret or rank");
    return false;
  }
  if (done_[req.rank]) {
    reject("rank " + std::to_string(req.rank) + " asked twice");
    return false;
  }
  send_fds(conn, fds_);
  done_[req.rank] = true;
  ++stats_.served;
  return true;
}

void FdServer::serve(FdClock::time_point deadline, const std::function<std::string()>& job_failed) {
  while (stats_.served < peers_.size()) {
    if (FdClock::now() >= deadline) {
      std::string missing;
      for (const auto& [rank, done] : done_)
        if (!done) missing += (missing.empty() ? "" : ",") + std::to_string(rank);
      raise(Errc::timeout, "fd exchange",
            "served " + std::to_string(stats_.served) + " of " + std::to_string(peers_.size()) +
                " local peers; rank(s) " + missing + " never asked (GPUCOMM_TIMEOUT sets the limit)");
    }
    pollfd p{listen_, POLLIN, 0};
    if (::poll(&p, 1, std::min(ms_left(deadline), 200)) <= 0) {
      if (job_failed) {
        if (std::string why = job_failed(); !why.empty()) raise(Errc::peer_failure, "fd exchange", why);
      }
      continue;
    }
    int c = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    try {
      serve_one(c);
    } catch (...) {
      ::close(c);
      throw;
    }
    ::close(c);
  }
}

std::vector<int> fetch_fds(const std::string& path, pid_t server_pid, int server_rank, int my_rank,
                           const FdSecret& secret, FdClock::time_point deadline) {
  const std::string peer = "rank " + std::to_string(server_rank);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  GPUCOMM_CHECK_ARG(!path.empty() && path.size() < sizeof a.sun_path, "fd exchange", "path",
                    "'" + path + "' is not a socket path");
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) raise_errno("fd exchange: socket", errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{s};
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) raise_errno("fd exchange: connect", errno, peer);
  // The socket is the peer's: this user's, bound by the process the peer published.
  const ucred server = peer_cred(s);
  if (server.uid != ::geteuid() || server.pid != server_pid) {
    raise(Errc::protocol, "fd exchange",
          path + " is served by process " + std::to_string(server.pid) + " of user " + std::to_string(server.uid) +
              ", not by " + peer + " (process " + std::to_string(server_pid) + ")");
  }
  Request req{kRequestMagic, my_rank, secret};
  if (::send(s, &req, sizeof req, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof req))
    raise_errno("fd exchange: send", errno, "to " + peer);
  return recv_fds(s, server_rank, deadline);
}

}  // namespace gpucomm::heap
