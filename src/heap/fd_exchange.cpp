#include "gpucomm/heap/fd_exchange.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::heap {
namespace {

constexpr size_t kMaxFds = 64;

struct Request {
  char tag[96];
  int32_t rank;
};

sockaddr_un abstract_address(const std::string& tag, int rank, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string name = "gpucomm-" + tag + "-" + std::to_string(rank);
  if (name.size() + 1 > sizeof a.sun_path) raise(Errc::internal, "fd exchange", "socket name too long");
  std::memcpy(a.sun_path + 1, name.data(), name.size());  // leading NUL: abstract namespace
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
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

std::vector<int> recv_fds(int sock, int from_rank) {
  uint32_t n = 0;
  iovec iov{&n, sizeof n};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  ssize_t r;
  while ((r = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0) {
    if (errno != EINTR) raise_errno("fd exchange: recvmsg", errno, "from rank " + std::to_string(from_rank));
  }
  if (r != sizeof n)
    raise(Errc::peer_failure, "fd exchange", "rank " + std::to_string(from_rank) + " closed the connection");
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    fds.resize(count);
    std::memcpy(fds.data(), CMSG_DATA(c), count * sizeof(int));
  }
  if (fds.size() != n || (msg.msg_flags & MSG_CTRUNC)) {
    raise(Errc::protocol, "fd exchange",
          "rank " + std::to_string(from_rank) + " sent " + std::to_string(n) + " descriptors, received " +
              std::to_string(fds.size()));
  }
  return fds;
}

}  // namespace

std::vector<std::vector<int>> exchange_fds(bootstrap::Bootstrap& b, const std::vector<int>& local_ranks,
                                           const std::vector<int>& my_fds, const std::string& tag) {
  const int me = b.rank();
  GPUCOMM_CHECK_ARG(my_fds.size() <= kMaxFds, "exchange_fds", "my_fds", "at most 64 descriptors");
  GPUCOMM_CHECK_ARG(tag.size() < sizeof(Request::tag), "exchange_fds", "tag", "too long");
  GPUCOMM_CHECK_ARG(std::find(local_ranks.begin(), local_ranks.end(), me) != local_ranks.end(), "exchange_fds",
                    "local_ranks", "must contain this PE");
  const size_t peers = local_ranks.size() - 1;

  int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) raise_errno("fd exchange: socket", errno);
  socklen_t alen;
  sockaddr_un addr = abstract_address(tag, me, &alen);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), alen) != 0 || ::listen(lfd, 128) != 0) {
    int e = errno;
    ::close(lfd);
    raise_errno("fd exchange: bind", e, "abstract socket for rank " + std::to_string(me));
  }
  b.barrier();  // every PE listens

  const int64_t timeout_ms = env::wait_timeout_ms() > 0 ? env::wait_timeout_ms() : 600000;
  std::string server_error;
  std::thread server([&] {
    try {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
      for (size_t served = 0; served < peers;) {
        auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
          raise(Errc::timeout, "fd exchange",
                "rank " + std::to_string(me) + " served " + std::to_string(served) + " of " + std::to_string(peers) +
                    " local peers");
        }
        pollfd p{lfd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 200))) <= 0) {
          if (b.failed()) raise(Errc::peer_failure, "fd exchange", b.failure());
          continue;
        }
        int c = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        Request req{};
        ssize_t r = ::recv(c, &req, sizeof req, MSG_WAITALL);
        bool ok = r == sizeof req && std::strncmp(req.tag, tag.c_str(), sizeof req.tag) == 0 &&
                  std::find(local_ranks.begin(), local_ranks.end(), req.rank) != local_ranks.end();
        if (ok) {
          send_fds(c, my_fds);
          ++served;
        }
        ::close(c);
      }
    } catch (const std::exception& e) {
      server_error = e.what();
    }
  });

  std::vector<std::vector<int>> out(local_ranks.size());
  std::string client_error;
  try {
    for (size_t i = 0; i < local_ranks.size(); ++i) {
      int peer = local_ranks[i];
      if (peer == me) {
        for (int fd : my_fds) out[i].push_back(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
        continue;
      }
      int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      socklen_t plen;
      sockaddr_un paddr = abstract_address(tag, peer, &plen);
      if (::connect(s, reinterpret_cast<sockaddr*>(&paddr), plen) != 0) {
        int e = errno;
        ::close(s);
        raise_errno("fd exchange: connect", e, "to rank " + std::to_string(peer));
      }
      Request req{};
      std::strncpy(req.tag, tag.c_str(), sizeof req.tag - 1);
      req.rank = me;
      if (::send(s, &req, sizeof req, MSG_NOSIGNAL) != sizeof req) {
        ::close(s);
        raise_errno("fd exchange: send", errno, "to rank " + std::to_string(peer));
      }
      try {
        out[i] = recv_fds(s, peer);
      } catch (...) {
        ::close(s);
        throw;
      }
      ::close(s);
    }
  } catch (const std::exception& e) {
    client_error = e.what();
  }
  server.join();
  ::close(lfd);
  if (!client_error.empty() || !server_error.empty()) {
    for (auto& v : out)
      for (int fd : v) ::close(fd);
    raise(Errc::system, "fd exchange", client_error.empty() ? server_error : client_error);
  }
  b.barrier();
  return out;
}

}  // namespace gpucomm::heap
