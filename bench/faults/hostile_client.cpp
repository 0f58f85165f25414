// gpucomm-hostile-client: a foreign client of a job's local services, for tests/reliability and
// `gpucomm bench faults` (run it as another user with setpriv, or as the job's user):
//   store HOST:PORT [IDLE]  attacks the bootstrap store: junk, a header announcing 1 GiB, a request
//                           before hello, a wrong token, a hello dribbled byte by byte, IDLE idle
//                           connections (default 200); reports what the store let through
//   fdx SECONDS             for SECONDS (whole), finds the fd-exchange sockets of jobs on this host (in
//                           /proc/net/unix and the gpucomm-* folders of /tmp and $XDG_RUNTIME_DIR)
//                           and asks each for descriptors with a made-up request
// Prints one JSON object; exit code 0 when nothing was let through, 1 when something was (a
// hello accepted, a descriptor received), 2 on usage errors.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/wire.hpp"

namespace {

using Clock = std::chrono::steady_clock;

bool parse(const std::string& text, int* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// The store's frames (a foreign client that knows the format, not the token).
using gpucomm::bootstrap::wire::Header;
using gpucomm::bootstrap::wire::kMagic;
using gpucomm::bootstrap::wire::kVersion;
using gpucomm::bootstrap::wire::Op;
constexpr auto kHello = static_cast<uint16_t>(Op::hello), kSet = static_cast<uint16_t>(Op::set),
               kHelloOk = static_cast<uint16_t>(Op::hello_ok);

int tcp_connect(const std::string& host, uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (fd < 0 || ::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until EOF or `ms`; returns the bytes (EOF: the store closed the connection).
std::string drain(int fd, int ms, bool* closed) {
  std::string got;
  *closed = false;
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  char buf[4096];
  while (Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
    if (::poll(&p, 1, left > 0 ? left : 0) <= 0) break;
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) {
      *closed = true;
      break;
    }
    got.append(buf, static_cast<size_t>(r));
  }
  return got;
}

bool accepted_hello(const std::string& reply) {
  Header h{};
  if (reply.size() < sizeof h) return false;
  std::memcpy(&h, reply.data(), sizeof h);
  return h.magic == kMagic && h.op == kHelloOk;
}

std::string header(uint16_t op, uint64_t payload_len, uint32_t aux = 2, int32_t rank = 1) {
  Header h{kMagic, kVersion, op, rank, aux, 1, 0, 0, payload_len};
  return std::string(reinterpret_cast<const char*>(&h), sizeof h);
}

struct StoreReport {
  int tried = 0, closed = 0, let_through = 0, idle = 0, idle_closed = 0;
};

// One attack: send `bytes` (in pieces of `step` bytes, `gap_ms` apart), then see whether the
// store closed the connection within `wait_ms` and whether it said hello_ok.
void attack(StoreReport& r, const std::string& host, uint16_t port, const std::string& bytes, size_t step = 0,
            int gap_ms = 0, int wait_ms = 5000) {
  ++r.tried;
  int fd = tcp_connect(host, port);
  if (fd < 0) {
    ++r.closed;  // refused outright
    return;
  }
  if (step == 0) step = bytes.size();
  for (size_t off = 0; off < bytes.size(); off += step) {
    if (::send(fd, bytes.data() + off, std::min(step, bytes.size() - off), MSG_NOSIGNAL) < 0) break;
    if (gap_ms) std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  }
  bool closed = false;
  std::string reply = drain(fd, wait_ms, &closed);
  r.closed += closed;
  r.let_through += accepted_hello(reply);
  ::close(fd);
}

int store_mode(const std::string& addr, int idle) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos) return 2;
  const std::string host = addr.substr(0, colon);
  int port_number = 0;
  if (!parse(addr.substr(colon + 1), &port_number) || port_number <= 0 || port_number > 65535) return 2;
  const auto port = static_cast<uint16_t>(port_number);
  StoreReport r;
  attack(r, host, port, "GET / HTTP/1.1\r\nHost: gpucomm\r\n\r\n" + std::string(64, 'x'));
  attack(r, host, port, header(kHello, uint64_t(1) << 30) + std::string(1 << 16, 'A'));  // "1 GiB follows"
  attack(r, host, port, header(kSet, 16) + std::string(16, 't'));                        // no hello first
  attack(r, host, port, header(kHello, 16) + std::string(16, '\x5a'));                   // wrong token
  attack(r, host, port, header(kHello, 16, 2, 99) + std::string(16, '\x11'));            // rank out of range
  attack(r, host, port, header(kHello, 16).substr(0, 20), 1, 400, 8000);                 // dribbled, then silent
  // Idle connections: the store holds a bounded number and closes the rest.
  std::vector<int> fds;
  for (int i = 0; i < idle; ++i) {
    int fd = tcp_connect(host, port);
    if (fd >= 0) fds.push_back(fd);
  }
  r.idle = static_cast<int>(fds.size());
  std::this_thread::sleep_for(std::chrono::seconds(5));
  for (int fd : fds) {
    bool closed = false;
    drain(fd, 10, &closed);
    r.idle_closed += closed;
    ::close(fd);
  }
  std::printf(
      "{\"mode\": \"store\", \"tried\": %d, \"closed\": %d, \"let_through\": %d, \"idle\": %d, "
      "\"idle_closed_within_5s\": %d}\n",
      r.tried + r.idle, r.closed, r.let_through, r.idle, r.idle_closed);
  return r.let_through == 0 ? 0 : 1;
}

// Paths of Unix sockets that look like gpucomm's (abstract names start with '@').
std::set<std::string> candidate_sockets(int* dirs_unreadable) {
  std::set<std::string> out;
  std::ifstream unix_table("/proc/net/unix");
  std::string line;
  while (std::getline(unix_table, line)) {
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    const std::string path = line.substr(sp + 1);
    if (path.find("gpucomm") != std::string::npos) out.insert(path);
  }
  std::vector<std::string> bases = {"/tmp"};
  if (const char* x = std::getenv("XDG_RUNTIME_DIR")) bases.emplace_back(x);
  for (const auto& base : bases) {
    DIR* d = ::opendir(base.c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      if (std::strncmp(e->d_name, "gpucomm-", 8) != 0) continue;
      const std::string sub = base + "/" + e->d_name;
      DIR* s = ::opendir(sub.c_str());
      if (!s) {
        ++*dirs_unreadable;            // another user's (mode 0700), or gone already
        out.insert(sub + "/fd.sock");  // try it anyway
        continue;
      }
      while (dirent* f = ::readdir(s))
        if (f->d_name[0] != '.') out.insert(sub + "/" + f->d_name);
      ::closedir(s);
    }
    ::closedir(d);
  }
  return out;
}

// Connects to `path` and asks for descriptors with a made-up request; returns how many came.
int try_fdx(const std::string& path, bool* connected) {
  *connected = false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  socklen_t len = 0;
  if (path[0] == '@') {  // abstract
    std::memcpy(a.sun_path + 1, path.c_str() + 1, std::min(path.size() - 1, sizeof a.sun_path - 2));
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  } else {
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    len = sizeof a;
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    ::close(fd);
    return 0;
  }
  *connected = true;
  char req[128];
  for (size_t i = 0; i < sizeof req; ++i) req[i] = static_cast<char>(i * 37 + 11);
  ::send(fd, req, sizeof req, MSG_NOSIGNAL);
  int received = 0;
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 300) > 0) {
    uint32_t n = 0;
    iovec iov{&n, sizeof n};
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * 64)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl;
    msg.msg_controllen = sizeof ctrl;
    if (::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC) > 0) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int got = -1;
          std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
          ::close(got);
          ++received;
        }
      }
    }
  }
  ::close(fd);
  return received;
}

int fdx_mode(int seconds) {
  int attempts = 0, connected = 0, fds = 0, unreadable = 0;
  std::set<std::string> seen;
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < end) {
    for (const auto& path : candidate_sockets(&unreadable)) {
      seen.insert(path);
      bool c = false;
      ++attempts;
      fds += try_fdx(path, &c);
      connected += c;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf(
      "{\"mode\": \"fdx\", \"uid\": %d, \"sockets_seen\": %zu, \"tried\": %d, \"connected\": %d, "
      "\"fds_received\": %d, \"dirs_unreadable\": %d}\n",
      static_cast<int>(::geteuid()), seen.size(), attempts, connected, fds, unreadable);
  return fds == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int number = 0;
  if (mode == "store" && argc >= 3 && (argc == 3 || parse(argv[3], &number)))
    return store_mode(argv[2], argc > 3 ? number : 200);
  if (mode == "fdx" && argc >= 3 && parse(argv[2], &number)) return fdx_mode(number);
  std::fprintf(stderr, "usage: gpucomm-hostile-client store HOST:PORT [IDLE] | fdx SECONDS\n");
  return 2;
}
