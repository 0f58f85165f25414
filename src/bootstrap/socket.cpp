#include "socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "gpucomm/core/error.hpp"

namespace gpucomm::bootstrap {

std::string SockAddr::host() const {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (storage.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, buf, sizeof buf);
  } else if (storage.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

uint16_t SockAddr::port() const {
  if (storage.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (storage.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

std::string SockAddr::to_string() const {
  std::string h = host();
  if (storage.ss_family == AF_INET6) h = "[" + h + "]";
  return h + ":" + std::to_string(port());
}

SockAddr resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port_s = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res);
  if (rc != 0) raise(Errc::system, "resolve", "cannot resolve '" + host + "': " + gai_strerror(rc));
  SockAddr a;
  std::memcpy(&a.storage, res->ai_addr, res->ai_addrlen);
  a.len = res->ai_addrlen;
  freeaddrinfo(res);
  return a;
}

void split_host_port(const std::string& text, const std::string& what, std::string* host, uint16_t* port) {
  auto bad = [&](const char* why) { raise_arg("bootstrap", what, "'" + text + "' " + why + " (expected HOST:PORT)"); };
  size_t colon;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      bad("has an unclosed IPv6 address");
    *host = text.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) bad("has no port");
    *host = text.substr(0, colon);
  }
  std::string p = text.substr(colon + 1);
  if (p.empty() || p.size() > 5 || !std::all_of(p.begin(), p.end(), ::isdigit)) bad("has a bad port");
  unsigned long v = std::stoul(p);
  if (v > 65535) bad("has a port above 65535");
  *port = static_cast<uint16_t>(v);
}

std::string interface_address(const std::string& ifname) {
  if (ifname.empty() || ifname == "lo") return "127.0.0.1";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) raise_errno("getifaddrs", errno);
  std::string v4, v6;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || ifname != a->ifa_name) continue;
    char buf[INET6_ADDRSTRLEN] = {0};
    if (a->ifa_addr->sa_family == AF_INET && v4.empty()) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
      v4 = buf;
    } else if (a->ifa_addr->sa_family == AF_INET6 && v6.empty()) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, buf, sizeof buf);
      v6 = buf;
    }
  }
  freeifaddrs(list);
  if (!v4.empty()) return v4;
  if (!v6.empty()) return v6;
  raise(Errc::invalid_argument, "bootstrap",
        "network interface '" + ifname + "' (GPUCOMM_BOOTSTRAP_IFNAME) has no address or does not exist");
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}
Fd::~Fd() {
  reset();
}
void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Fd listen_tcp(const std::string& host, uint16_t port, int backlog) {
  SockAddr a = resolve(host, port);
  Fd fd(::socket(a.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) raise_errno("socket", errno);
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a.storage), a.len) != 0) {
    int e = errno;
    raise(e == EADDRINUSE ? Errc::invalid_argument : Errc::system, "bootstrap listen",
          "cannot bind " + a.to_string() + ": " + std::strerror(e) +
              (e == EADDRINUSE ? " (the port is busy: pick another or let gpucomm choose)" : ""));
  }
  if (::listen(fd.get(), backlog) != 0) raise_errno("listen", errno, a.to_string());
  return fd;
}

SockAddr local_address(int fd) {
  SockAddr a;
  a.len = sizeof a.storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.len) != 0) raise_errno("getsockname", errno);
  return a;
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void set_nonblocking(int fd, bool on) {
  int fl = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

Fd connect_tcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  SockAddr a = resolve(host, port);
  auto deadline = Clock::now() + timeout;
  auto backoff = std::chrono::milliseconds(10);
  int last_err = 0;
  int attempts = 0;
  while (true) {
    ++attempts;
    Fd fd(::socket(a.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) raise_errno("socket", errno);
    set_nonblocking(fd.get(), true);
    int rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a.storage), a.len);
    if (rc != 0 && errno == EINPROGRESS) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      pollfd p{fd.get(), POLLOUT, 0};
      int pr = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(left.count(), 1000))));
      if (pr > 0) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        rc = -1;
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) {
      set_nonblocking(fd.get(), false);
      set_nodelay(fd.get());
      return fd;
    }
    last_err = errno;
    if (Clock::now() + backoff >= deadline) break;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
  double secs = std::chrono::duration<double>(timeout).count();
  raise(Errc::timeout, "bootstrap connect",
        "could not reach the bootstrap store at " + a.to_string() + " within " + std::to_string(secs).substr(0, 5) +
            " s (" + std::to_string(attempts) + " attempts, last error: " + std::strerror(last_err) +
            "); is rank 0 running and the address right? (GPUCOMM_BOOTSTRAP_TIMEOUT raises the limit)");
}

void send_all(int fd, const void* buf, size_t n, const char* what) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      raise(errno == EPIPE || errno == ECONNRESET ? Errc::peer_failure : Errc::system, what,
            std::string("send failed: ") + std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

bool recv_all(int fd, void* buf, size_t n, Clock::time_point deadline, const char* what, bool allow_eof) {
  char* p = static_cast<char*>(buf);
  size_t got = 0;
  while (got < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) raise(Errc::timeout, what, "no reply within the time limit");
    pollfd pf{fd, POLLIN, 0};
    int pr = ::poll(&pf, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (pr < 0) {
      if (errno == EINTR) continue;
      raise_errno(what, errno, "poll");
    }
    if (pr == 0) continue;
    ssize_t r = ::recv(fd, p + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      raise(errno == ECONNRESET ? Errc::peer_failure : Errc::system, what,
            std::string("receive failed: ") + std::strerror(errno));
    }
    if (r == 0) {
      if (got == 0 && allow_eof) return false;
      raise(Errc::peer_failure, what, "connection closed by the other side");
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace gpucomm::bootstrap
