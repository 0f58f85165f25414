// The collective descriptor exchange of a node's PEs (how heaps share memfds and exported
// memory handles), on the authenticated server and client of fd_server.hpp. Every PE listens in
// a private directory, publishes (through the store, whose token authenticates every PE) its
// pid, its socket's path and its server's secret, then fetches each local peer's descriptors
// while serving its own.
#include "gpucomm/heap/fd_exchange.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <thread>

#include "fd_server.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::heap {
namespace {

struct Listing {
  int32_t pid;
  FdSecret secret;
  char path[108];
};

}  // namespace

std::vector<std::vector<int>> exchange_fds(bootstrap::Bootstrap& b, const std::vector<int>& local_ranks,
                                           const std::vector<int>& my_fds, const std::string& tag) {
  const int me = b.rank();
  GPUCOMM_CHECK_ARG(my_fds.size() <= 64, "exchange_fds", "my_fds", "at most 64 descriptors");
  GPUCOMM_CHECK_ARG(std::find(local_ranks.begin(), local_ranks.end(), me) != local_ranks.end(), "exchange_fds",
                    "local_ranks", "must contain this PE");
  for (int r : local_ranks)
    GPUCOMM_CHECK_ARG(r >= 0 && r < b.size(), "exchange_fds", "local_ranks", std::to_string(r) + " is not a rank");
  const bool alone = local_ranks.size() == 1;

  const FdSecret secret = random_secret();
  std::unique_ptr<FdServer> server;
  Listing mine{};
  mine.pid = static_cast<int32_t>(::getpid());
  mine.secret = secret;
  if (!alone) {
    server = std::make_unique<FdServer>(my_fds, secret);
    std::strncpy(mine.path, server->path().c_str(), sizeof mine.path - 1);
  }
  // Collective over the world: PEs of other nodes publish too (and fetch nothing from here).
  const auto all = b.allgather(std::string(reinterpret_cast<const char*>(&mine), sizeof mine));
  std::vector<Listing> listings(all.size());
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].size() != sizeof(Listing))
      raise(Errc::protocol, "fd exchange", "malformed listing of rank " + std::to_string(r));
    std::memcpy(&listings[r], all[r].data(), sizeof(Listing));
    listings[r].path[sizeof listings[r].path - 1] = '\0';
  }

  std::vector<std::vector<int>> out(local_ranks.size());
  for (size_t i = 0; i < local_ranks.size(); ++i) {
    if (local_ranks[i] == me)
      for (int fd : my_fds) out[i].push_back(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  }
  if (alone) return out;

  std::map<int, pid_t> peers;
  for (int r : local_ranks)
    if (r != me) peers[r] = listings[static_cast<size_t>(r)].pid;
  server->expect(peers);

  const int64_t timeout_ms = env::wait_timeout_ms() > 0 ? env::wait_timeout_ms() : 600000;
  const auto deadline = FdClock::now() + std::chrono::milliseconds(timeout_ms);
  std::exception_ptr server_error;
  std::thread serving([&] {
    try {
      server->serve(deadline, [&] { return b.failed() ? b.failure() : std::string(); });
    } catch (...) {
      server_error = std::current_exception();
    }
  });
  std::exception_ptr client_error;
  try {
    for (size_t i = 0; i < local_ranks.size(); ++i) {
      const int peer = local_ranks[i];
      if (peer == me) continue;
      const Listing& l = listings[static_cast<size_t>(peer)];
      out[i] = fetch_fds(l.path, l.pid, peer, me, l.secret, deadline);
    }
  } catch (...) {
    client_error = std::current_exception();
  }
  serving.join();
  server.reset();  // removes the socket and its directory
  if (client_error || server_error) {
    for (auto& v : out)
      for (int fd : v) ::close(fd);
    std::rethrow_exception(client_error ? client_error : server_error);
  }
  (void)tag;  // names the exchange in the heaps' own messages
  return out;
}

}  // namespace gpucomm::heap
