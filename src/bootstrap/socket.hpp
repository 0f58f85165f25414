#pragma once
// Small POSIX socket helpers for the bootstrap: address parsing, listening, connecting with
// retry and backoff, and exact reads and writes with deadlines.
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gpucomm::bootstrap {

using Clock = std::chrono::steady_clock;

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;
  std::string host() const;
  uint16_t port() const;
  std::string to_string() const;  // HOST:PORT, IPv6 in brackets
};

// Resolves HOST:PORT (numeric or a name) into an address.
SockAddr resolve(const std::string& host, uint16_t port);
// Splits HOST:PORT ([v6]:PORT accepted); raises invalid_argument naming `what`.
void split_host_port(const std::string& text, const std::string& what, std::string* host, uint16_t* port);
// Address of a network interface by name (IPv4 preferred); empty name means loopback.
std::string interface_address(const std::string& ifname);

// RAII file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Binds and listens; port 0 picks a free port. Raises a clear error on a busy port.
Fd listen_tcp(const std::string& host, uint16_t port, int backlog = 512);
SockAddr local_address(int fd);
// Connects, retrying with exponential backoff until `timeout`; the error names the address.
Fd connect_tcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);

void set_nodelay(int fd);
void set_nonblocking(int fd, bool on);

// Writes all bytes (retrying on EINTR/short writes); raises on error.
void send_all(int fd, const void* buf, size_t n, const char* what);
// Reads exactly n bytes before `deadline`. Returns false on orderly EOF before the first byte
// (when allow_eof), raises on EOF mid-message, error, or timeout.
bool recv_all(int fd, void* buf, size_t n, Clock::time_point deadline, const char* what, bool allow_eof = false);

}  // namespace gpucomm::bootstrap
