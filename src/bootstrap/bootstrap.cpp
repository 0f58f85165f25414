#include "gpucomm/bootstrap/bootstrap.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "listen_registry.hpp"
#include "rendezvous.hpp"
#include "store_client.hpp"
#include "store_server.hpp"

namespace gpucomm::bootstrap {

struct Bootstrap::Impl {
  std::unique_ptr<StoreServer> server;
  std::unique_ptr<StoreClient> client;
};

namespace {

std::chrono::milliseconds connect_timeout() {
  return std::chrono::milliseconds(static_cast<int64_t>(env::get_double("GPUCOMM_BOOTSTRAP_TIMEOUT", 30.0) * 1000));
}

// The listening socket rank 0 serves on: opened ahead (UniqueId::create or inherited from
// `gpucomm run`) or bound now.
Fd open_store_socket(const UniqueId& id) {
  if (Fd fd = ListenRegistry::instance().take(id.endpoint())) return fd;
  if (auto inherited = env::get("GPUCOMM_BOOTSTRAP_LISTEN_FD"); inherited && !inherited->empty()) {
    int fd = -1;
    const char* first = inherited->data();
    const char* last = first + inherited->size();
    if (auto [end, ec] = std::from_chars(first, last, fd); ec != std::errc() || end != last)
      raise_arg("bootstrap", "GPUCOMM_BOOTSTRAP_LISTEN_FD", "'" + *inherited + "' is not a file descriptor number");
    int type = 0, listening = 0;
    socklen_t len = sizeof type;
    bool ok = fd > 2 && ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
    len = sizeof listening;
    ok = ok && ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening;
    if (ok && local_address(fd).port() == id.port) {
      unsetenv("GPUCOMM_BOOTSTRAP_LISTEN_FD");  // children of this PE must not reuse it
      return Fd(fd);
    }
    GPUCOMM_LOG(warn, "GPUCOMM_BOOTSTRAP_LISTEN_FD=" << *inherited << " is not the listening socket of "
                                                     << id.endpoint() << "; binding the address instead");
  }
  return listen_tcp(id.host, id.port);
}

}  // namespace

Bootstrap::Bootstrap(const UniqueId& id, int rank, int size)
    : impl_(std::make_unique<Impl>()), rank_(rank), size_(size) {
  GPUCOMM_CHECK_ARG(size >= 1, "Bootstrap", "size", "must be at least 1, got " + std::to_string(size));
  GPUCOMM_CHECK_ARG(rank >= 0 && rank < size, "Bootstrap", "rank",
                    std::to_string(rank) + " is outside 0.." + std::to_string(size - 1));
  if (rank == 0) impl_->server = std::make_unique<StoreServer>(open_store_socket(id), size, id.token);
  impl_->client = std::make_unique<StoreClient>(id, rank, size, connect_timeout());
  how_ = "tcp store at " + id.endpoint() + " served by rank 0";
  GPUCOMM_LOG(debug, "bootstrap connected: " << how_);
}

std::unique_ptr<Bootstrap> Bootstrap::from_environment(const LaunchInfo& info) {
  std::string how;
  UniqueId id = rendezvous(info, &how);
  auto b = std::make_unique<Bootstrap>(id, info.rank, info.size);
  b->how_ = how + ", " + b->how_;
  finish_rendezvous(info, *b);
  return b;
}

Bootstrap::~Bootstrap() {
  try {
    finalize();
  } catch (const std::exception& e) {
    GPUCOMM_LOG(warn, "bootstrap finalize: " << e.what());
  }
}

std::string Bootstrap::describe() const {
  return how_;
}

void Bootstrap::set(const std::string& key, const std::string& value) {
  impl_->client->set("u/" + key, value);
}

std::string Bootstrap::get(const std::string& key) {
  return impl_->client->get("u/" + key, env::wait_timeout_ms());
}

std::vector<std::string> Bootstrap::gather(const std::string& group, int count, int index, const std::string& mine) {
  GPUCOMM_CHECK_ARG(count >= 1 && count <= size_, "Bootstrap::gather", "count", std::to_string(count));
  GPUCOMM_CHECK_ARG(index >= 0 && index < count, "Bootstrap::gather", "index", std::to_string(index));
  return impl_->client->gather(
      "g/" + group, count, index, mine, env::wait_timeout_ms(),
      "bootstrap gather '" + group + "' (member " + std::to_string(index) + " of " + std::to_string(count) + ")");
}

std::vector<std::string> Bootstrap::allgather(const std::string& mine) {
  std::string group = "world/allgather/" + std::to_string(collective_seq_++);
  return impl_->client->gather(group, size_, rank_, mine, env::wait_timeout_ms(),
                               "bootstrap allgather #" + std::to_string(collective_seq_ - 1));
}

Bootstrap::Disagreement Bootstrap::agree(const std::string& mine) {
  auto all = allgather(mine);
  for (int r = 0; r < size_; ++r)
    if (all[static_cast<size_t>(r)] != mine) return {r, std::move(all[static_cast<size_t>(r)])};
  return {};
}

void Bootstrap::barrier() {
  std::string group = "world/barrier/" + std::to_string(collective_seq_++);
  impl_->client->gather(group, size_, rank_, "", env::wait_timeout_ms(),
                        "bootstrap barrier #" + std::to_string(collective_seq_ - 1));
}

bool Bootstrap::failed() const {
  return impl_->client->failed();
}
std::string Bootstrap::failure() const {
  return impl_->client->failure();
}

void Bootstrap::finalize() {
  if (finalized_) return;
  finalized_ = true;
  if (!failed() && !impl_->client->timed_out()) barrier();
  impl_->client->say_bye(10000);
  if (impl_->server) impl_->server->shutdown(env::wait_timeout_ms() > 0 ? env::wait_timeout_ms() : 60000);
  impl_->client.reset();
  impl_->server.reset();
}

}  // namespace gpucomm::bootstrap
