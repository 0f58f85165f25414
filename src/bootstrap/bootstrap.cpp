#include "gpucomm/bootstrap/bootstrap.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "job_failure.hpp"
#include "lifeline.hpp"
#include "listen_registry.hpp"
#include "rendezvous.hpp"
#include "store_client.hpp"
#include "store_server.hpp"

namespace gpucomm::bootstrap {

struct Bootstrap::Impl {
  JobFailure failure;
  std::unique_ptr<StoreServer> server;
  std::unique_ptr<StoreClient> client;
  // Under gpucomm run (a process-wide object that outlives this one). Atomic: the failure
  // listener reads it on the store client's thread while finalize() clears it.
  std::atomic<Lifeline*> lifeline{nullptr};
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
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);         // nor inherit it
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
  const int64_t wait_ms = env::wait_timeout_ms();
  shutdown_wait_ms_ = wait_ms > 0 ? wait_ms : 60000;
  // The first failure, from wherever it comes, reaches the store (which tells every PE) and the
  // launcher (which then names the right PE); a failure the store reported needs neither.
  impl_->failure.add_listener([this](int first, const std::string& why, FailureSource from) {
    if (from == FailureSource::store) {
      if (Lifeline* l = impl_->lifeline.load(std::memory_order_acquire)) l->report(first, why);
      return;
    }
    if (Lifeline* l = impl_->lifeline.load(std::memory_order_acquire); from == FailureSource::local && l) {
      l->report(first, why);
    }
    if (impl_->client) impl_->client->send_abort(first, why);
  });
  if (rank == 0) impl_->server = std::make_unique<StoreServer>(open_store_socket(id), size, id.token);
  impl_->client = std::make_unique<StoreClient>(id, rank, size, connect_timeout(), impl_->failure);
  how_ = "tcp store at " + id.endpoint() + " served by rank 0";
  GPUCOMM_LOG(debug, "bootstrap connected: " << how_);
}

std::unique_ptr<Bootstrap> Bootstrap::from_environment(const LaunchInfo& info) {
  std::string how;
  UniqueId id = rendezvous(info, &how);
  auto b = std::make_unique<Bootstrap>(id, info.rank, info.size);
  b->how_ = how + ", " + b->how_;
  if (Lifeline* l = Lifeline::get()) {
    b->impl_->lifeline.store(l, std::memory_order_release);
    l->attach(&b->impl_->failure);
    b->how_ += ", lifeline to gpucomm run";
  }
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
  return impl_->failure.failed();
}
std::string Bootstrap::failure() const {
  return impl_->failure.why();
}
int Bootstrap::failed_rank() const {
  return impl_->failure.rank();
}
void Bootstrap::note_local_failure(const std::string& what) const {
  impl_->failure.note_local(what);
}
std::string Bootstrap::local_failure() const {
  return impl_->failure.local();
}
void Bootstrap::forgive_local_failure() {
  impl_->failure.forgive_local();
}
void Bootstrap::set_job_state_word(uint32_t* word) {
  impl_->failure.set_word(word);
}

void Bootstrap::abort(const std::string& reason) {
  if (impl_->failure.failed()) return;  // the job failed already; the others know
  // Printed before the others hear of it, so this PE's report comes first.
  GPUCOMM_LOG(error, "aborting the job: " << reason);
  impl_->failure.record(rank_, "rank " + std::to_string(rank_) + " aborted: " + reason, FailureSource::local);
}

void Bootstrap::finalize() {
  if (finalized_) return;
  finalized_ = true;
  JobFailure& f = impl_->failure;
  if (!f.failed() && f.local().empty() && !impl_->client->timed_out()) {
    try {
      barrier();
    } catch (const Error& e) {
      if (!f.failed()) f.note_local(e.what());
    }
  }
  // A PE out of step (a wait of its own failed) aborts: nobody would join its barrier.
  if (!f.failed() && !f.local().empty()) abort(f.local());
  if (!f.failed()) impl_->client->say_bye(10000);
  if (impl_->server) {
    if (f.failed()) impl_->server->wait_failed(500);  // every PE is told before the store stops
    impl_->server->shutdown(f.failed() ? 0 : shutdown_wait_ms_);
  }
  // No more failures from the lifeline.
  if (Lifeline* l = impl_->lifeline.exchange(nullptr, std::memory_order_acq_rel)) l->detach(&f);
  impl_->client.reset();
  impl_->server.reset();
}

}  // namespace gpucomm::bootstrap
