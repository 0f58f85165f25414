#pragma once
// The two ends of one PE's descriptor exchange (heap::exchange_fds is built on them).
//
// Server: a Unix socket in a fresh private directory (mkdtemp: mode 0700, so no other user can
// even reach the socket), under $XDG_RUNTIME_DIR when that is a private directory of this user,
// else /tmp. It hands its descriptors (SCM_RIGHTS) to each expected peer once, and only to a
// client that (1) runs as this user and is the process the peer said it was (SO_PEERCRED: uid and
// pid, the pid published through the token-protected store), (2) sends a request of the exact
// size within kRequestDeadline, (3) carries this server's secret (random per exchange, published
// through the store, not in the socket name) and the rank whose pid it has. Anything else is closed
// and counted, never counted as served; the first rejection is logged, later ones only counted.
//
// Client: connects to a peer's socket, checks the server is that peer's process (SO_PEERCRED),
// sends the request and receives the descriptors before a deadline.
#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gpucomm::heap {

using FdSecret = std::array<uint8_t, 32>;
using FdClock = std::chrono::steady_clock;

FdSecret random_secret();

class FdServer {
 public:
  static constexpr auto kRequestDeadline = std::chrono::seconds(2);
  struct Stats {
    uint64_t served = 0;
    uint64_t rejected = 0;  // foreign user or process, malformed or late request, wrong secret, rank or repeat
  };
  // Listens (path() is valid at once) and will hand `fds` (not owned) to the peers expected.
  FdServer(std::vector<int> fds, const FdSecret& secret);
  ~FdServer();  // removes the socket and its directory
  FdServer(const FdServer&) = delete;
  FdServer& operator=(const FdServer&) = delete;

  const std::string& path() const { return path_; }
  // The peers to serve: rank -> pid of its process (as published through the store).
  void expect(std::map<int, pid_t> peers);
  // Serves until every peer got the descriptors; raises Errc::timeout at `deadline` (naming who
  // is missing) and Errc::peer_failure when `job_failed` returns a reason.
  void serve(FdClock::time_point deadline, const std::function<std::string()>& job_failed);
  const Stats& stats() const { return stats_; }

 private:
  bool serve_one(int conn);  // true: an authentic request, answered
  void reject(const std::string& why);

  std::vector<int> fds_;
  std::map<int, pid_t> peers_;
  std::map<int, bool> done_;
  FdSecret secret_;
  std::string dir_, path_;
  int listen_ = -1;
  Stats stats_;
};

// Fetches the descriptors of the server at `path`, which must be process `server_pid` of this
// user, presenting `secret` as PE `my_rank`. Every receive has `deadline`.
std::vector<int> fetch_fds(const std::string& path, pid_t server_pid, int server_rank, int my_rank,
                           const FdSecret& secret, FdClock::time_point deadline);

}  // namespace gpucomm::heap
