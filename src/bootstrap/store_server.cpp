#include "store_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "bootstrap_protocol.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"

namespace gpucomm::bootstrap {

using wire::Op;

StoreServer::StoreServer(Fd listen_fd, int world_size, const std::array<uint8_t, 16>& token)
    : listen_(std::move(listen_fd)),
      world_size_(world_size),
      token_(token),
      rank_seen_(static_cast<size_t>(world_size), false),
      rank_bye_(static_cast<size_t>(world_size), false) {
  endpoint_ = local_address(listen_.get()).to_string();
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) raise_errno("pipe2", errno);
  wake_rd_.reset(p[0]);
  wake_wr_.reset(p[1]);
  set_nonblocking(listen_.get(), true);
  thread_ = std::thread([this] { loop(); });
}

StoreServer::~StoreServer() {
  stop_.store(true);
  char c = 1;
  [[maybe_unused]] ssize_t w = ::write(wake_wr_.get(), &c, 1);
  if (thread_.joinable()) thread_.join();
}

bool StoreServer::wait_failed(int64_t timeout_ms) const {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!failed_.load(std::memory_order_acquire)) {
    if (stop_.load() || std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void StoreServer::shutdown(int64_t timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // The loop exits by itself once every rank said goodbye; ranks that never connected (a
  // failed start) are not waited for.
  while (std::chrono::steady_clock::now() < deadline) {
    if (stop_.load() || pending_.load() == 0 || failed_.load(std::memory_order_acquire)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop_.store(true);
  char c = 1;
  [[maybe_unused]] ssize_t w = ::write(wake_wr_.get(), &c, 1);
  if (thread_.joinable()) thread_.join();
}

bool StoreServer::all_done() const {
  for (int r = 0; r < world_size_; ++r)
    if (!rank_bye_[static_cast<size_t>(r)]) return false;
  return true;
}

void StoreServer::loop() {
  std::vector<pollfd> pfds;
  std::vector<int> ids;
  while (!stop_.load()) {
    pfds.clear();
    ids.clear();
    const auto now = Clock::now();
    const bool accepting = now >= accept_paused_until_;
    pfds.push_back({wake_rd_.get(), POLLIN, 0});
    pfds.push_back({accepting ? listen_.get() : -1, POLLIN, 0});
    for (auto& [id, c] : conns_) {
      pfds.push_back({c.fd.get(), POLLIN, 0});
      ids.push_back(id);
    }
    // Wake for the next hello deadline or the end of an accept pause.
    auto next = now + std::chrono::seconds(1);
    if (!accepting) next = std::min(next, accept_paused_until_);
    for (auto& [id, c] : conns_)
      if (c.rank < 0) next = std::min(next, c.hello_deadline);
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
    int pr = ::poll(pfds.data(), pfds.size(), static_cast<int>(std::clamp<int64_t>(wait_ms + 1, 1, 1000)));
    if (pr < 0) {
      if (errno == EINTR) continue;
      GPUCOMM_LOG(error, "bootstrap store: poll failed: " << std::strerror(errno));
      break;
    }
    if (pfds[0].revents) {
      char buf[64];
      while (::read(wake_rd_.get(), buf, sizeof buf) > 0) {
      }
    }
    if (pfds[1].revents & POLLIN) accept_all();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!pfds[i + 2].revents) continue;
      if (!conns_.count(ids[i])) continue;
      read_conn(ids[i]);
    }
    drop_late_hellos();
    int pending = 0;
    for (int r = 0; r < world_size_; ++r)
      pending += rank_seen_[static_cast<size_t>(r)] && !rank_bye_[static_cast<size_t>(r)];
    pending_.store(pending);
    if (all_done()) {
      stop_.store(true);
      break;
    }
  }
  if (stats_.rejected > 1) {
    GPUCOMM_LOG(info, "bootstrap store: rejected " << stats_.rejected << " foreign or malformed connections, closed "
                                                   << stats_.evicted << " idle ones, ran out of descriptors "
                                                   << stats_.fd_exhausted << " time(s)");
  }
}

size_t StoreServer::unauthenticated() const {
  size_t n = 0;
  for (const auto& [id, c] : conns_) n += c.rank < 0;
  return n;
}

void StoreServer::evict_oldest_unauthenticated() {
  for (auto& [id, c] : conns_) {
    if (c.rank < 0) {  // ids grow with time: the first is the oldest
      ++stats_.evicted;
      conns_.erase(id);
      return;
    }
  }
}

void StoreServer::accept_all() {
  while (true) {
    int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: free one (an idle foreign connection) and stop accepting briefly,
        // instead of spinning on accept with a log line per failure.
        ++stats_.fd_exhausted;
        if (stats_.fd_exhausted == 1) {
          GPUCOMM_LOG(warn, "bootstrap store: accept failed: "
                                << std::strerror(errno)
                                << "; closing idle connections and pausing accepts briefly (logged once)");
        }
        for (int i = 0; i < kEvictOnExhaustion; ++i) evict_oldest_unauthenticated();
        accept_paused_until_ = Clock::now() + kAcceptPause;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        GPUCOMM_LOG(warn, "bootstrap store: accept failed: " << std::strerror(errno));
      }
      return;
    }
    ++stats_.accepted;
    // A bounded number of connections may wait for their hello: a flood of idle ones pushes out
    // the oldest, never a PE's (a PE sends its hello at once).
    if (unauthenticated() >= kMaxUnauthenticated) evict_oldest_unauthenticated();
    set_nodelay(fd);
    Conn& c = conns_[next_id_++];
    c.fd.reset(fd);
    c.hello_deadline = Clock::now() + kHelloDeadline;
  }
}

void StoreServer::drop_late_hellos() {
  const auto now = Clock::now();
  std::vector<int> late;
  for (const auto& [id, c] : conns_)
    if (c.rank < 0 && now >= c.hello_deadline) late.push_back(id);
  for (int id : late) {
    ++stats_.timed_out;
    reject(id, 0, "sent no hello within " + std::to_string(kHelloDeadline.count()) + " s");
  }
}

void StoreServer::reject(int id, uint64_t seq, const std::string& why) {
  ++stats_.rejected;
  if (stats_.rejected == 1) {
    GPUCOMM_LOG(warn,
                "bootstrap store: rejecting a connection: " << why << " (later rejections are counted, not logged)");
  } else {
    GPUCOMM_LOG(debug, "bootstrap store: rejecting a connection: " << why);
  }
  reply_error(id, seq, static_cast<int>(Errc::protocol), why);
  drop(id, "was rejected");
}

bool StoreServer::read_conn(int id) {
  Conn& c = conns_[id];
  char buf[65536];
  std::string gone;  // why the connection ended, once it did
  while (true) {
    // Before its hello, a connection may send exactly one hello frame and nothing is buffered
    // beyond it: a foreign client cannot make the store hold more than that.
    size_t room = sizeof buf;
    if (c.rank < 0) {
      if (c.in.size() >= kHelloBytes) break;
      room = kHelloBytes - c.in.size();
    }
    ssize_t r = ::recv(c.fd.get(), buf, room, 0);
    if (r > 0) {
      c.in.append(buf, static_cast<size_t>(r));
      continue;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (r < 0 && errno == EINTR) continue;
    gone = r == 0 ? "closed its connection" : std::string("connection error: ") + std::strerror(errno);
    break;
  }
  // What arrived before an EOF counts (a PE's abort notice, then its exit).
  while (conns_.count(id)) {
    Conn& cc = conns_[id];
    if (cc.in.size() < sizeof(wire::Header)) break;
    wire::Frame f;
    std::memcpy(&f.h, cc.in.data(), sizeof f.h);
    try {
      wire::validate(f.h, "bootstrap store");
      if (cc.rank < 0 && (f.op() != Op::hello || f.h.key_len != 0 || f.h.payload_len != kHelloBytes - sizeof f.h))
        raise(Errc::protocol, "bootstrap store", "the first message is not a hello of the exact size");
    } catch (const Error& e) {
      reject(id, f.h.seq, e.detail());
      return false;
    }
    size_t total = sizeof f.h + f.h.key_len + f.h.payload_len;
    if (cc.in.size() < total) break;
    f.key.assign(cc.in.data() + sizeof f.h, f.h.key_len);
    f.payload.assign(cc.in.data() + sizeof f.h + f.h.key_len, f.h.payload_len);
    cc.in.erase(0, total);
    handle(id, f);
  }
  if (!gone.empty()) drop(id, gone);
  return conns_.count(id) != 0;
}

void StoreServer::reply(int id, Op op, uint64_t seq, uint32_t aux, const std::string& key, const std::string& payload) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  std::string buf = wire::encode(op, 0, aux, seq, key, payload);
  // Replies are small or bounded by what the client asked for; a blocking write keeps it simple.
  set_nonblocking(it->second.fd.get(), false);
  try {
    send_all(it->second.fd.get(), buf.data(), buf.size(), "bootstrap store reply");
  } catch (const Error& e) {
    // The peer is gone; the read side will notice and drop it.
    GPUCOMM_LOG(debug, "bootstrap store: reply to connection " << id << " not sent: " << e.what());
  }
  set_nonblocking(it->second.fd.get(), true);
}

void StoreServer::reply_error(int id, uint64_t seq, int errc, const std::string& why) {
  reply(id, Op::error, seq, static_cast<uint32_t>(errc), "", why);
}

void StoreServer::drop(int id, const std::string& why) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  int rank = it->second.rank;
  bool orderly = it->second.said_bye;
  conns_.erase(it);
  if (rank >= 0 && !orderly)
    fail_job(rank, "rank " + std::to_string(rank) + " " + why + " without finalizing (the process died or was killed)");
}

void StoreServer::fail_job(int rank, const std::string& reason) {
  if (!failure_.empty()) return;
  failure_ = reason;
  failed_rank_ = rank;
  GPUCOMM_LOG(error, "bootstrap store: job failed: " << reason);
  // The abort notice first, so that a PE has recorded the failure when its waiting request fails.
  std::vector<int> ids;
  for (auto& [id, c] : conns_)
    if (c.rank >= 0 && !c.said_bye) ids.push_back(id);
  for (int id : ids) send_abort(id);
  for (auto& [key, ws] : get_waiters_)
    for (auto& w : ws) reply_error(w.conn, w.seq, static_cast<int>(Errc::peer_failure), reason);
  get_waiters_.clear();
  for (auto& [key, g] : gathers_)
    for (auto& w : g.waiters) reply_error(w.conn, w.seq, static_cast<int>(Errc::peer_failure), reason);
  gathers_.clear();
  // The store keeps serving until rank 0 shuts it down (at once, now that the job failed): PEs
  // that connect late learn of the failure in the reply to their hello.
  failed_.store(true, std::memory_order_release);
}

void StoreServer::send_abort(int id) {
  reply(id, Op::abort, 0, failed_rank_ >= 0 ? static_cast<uint32_t>(failed_rank_) + 1 : 0, "", failure_);
}

void StoreServer::handle(int id, wire::Frame& f) {
  Conn& c = conns_[id];
  const uint64_t seq = f.h.seq;
  if (c.rank < 0) {
    std::string why = check_hello(f, token_, world_size_);
    if (why.empty() && rank_seen_[static_cast<size_t>(f.h.rank)])
      why = "rank " + std::to_string(f.h.rank) + " connected twice (two processes with the same rank?)";
    if (!why.empty()) {
      reject(id, seq, why);
      return;
    }
    c.rank = f.h.rank;
    rank_seen_[static_cast<size_t>(c.rank)] = true;
    reply(id, Op::hello_ok, seq, 0, "", "");
    if (!failure_.empty()) send_abort(id);
    return;
  }
  if (f.op() == Op::abort) {
    // A PE failed the job: by itself (its own rank in aux) or relaying what it learned first.
    fail_job(f.h.aux > 0 ? static_cast<int>(f.h.aux) - 1 : -1,
             f.payload.empty() ? "rank " + std::to_string(c.rank) + " aborted" : f.payload);
    return;
  }
  if (!failure_.empty() && f.op() != Op::bye && f.op() != Op::query) {
    reply_error(id, seq, static_cast<int>(Errc::peer_failure), failure_);
    return;
  }
  switch (f.op()) {
    case Op::set: {
      kv_[f.key] = f.payload;
      reply(id, Op::ok, seq, 0, "", "");
      auto it = get_waiters_.find(f.key);
      if (it != get_waiters_.end()) {
        for (auto& w : it->second) reply(w.conn, Op::value, w.seq, 0, f.key, f.payload);
        get_waiters_.erase(it);
      }
      break;
    }
    case Op::get: {
      auto it = kv_.find(f.key);
      if (it != kv_.end()) {
        reply(id, Op::value, seq, 0, f.key, it->second);
      } else {
        get_waiters_[f.key].push_back({id, seq});
      }
      break;
    }
    case Op::gather: {
      uint32_t count = f.h.aux, index = 0;
      if (f.payload.size() < 4 || count == 0 || count > static_cast<uint32_t>(world_size_)) {
        reply_error(id, seq, static_cast<int>(Errc::protocol), "malformed gather");
        break;
      }
      std::memcpy(&index, f.payload.data(), 4);
      Gather& g = gathers_[f.key];
      if (g.count == 0) {
        g.count = count;
        g.parts.resize(count);
        g.have.resize(count);
      }
      if (g.count != count || index >= count || g.have[index]) {
        reply_error(id, seq, static_cast<int>(Errc::protocol),
                    "gather '" + f.key + "': inconsistent member count or duplicate index " + std::to_string(index));
        break;
      }
      g.parts[index] = f.payload.substr(4);
      g.have[index] = true;
      g.waiters.push_back({id, seq});
      if (++g.arrived == g.count) {  // every index arrived exactly once (checked above)
        std::string out;
        for (const std::string& part : g.parts) {
          uint64_t len = part.size();
          out.append(reinterpret_cast<const char*>(&len), 8);
          out.append(part);
        }
        for (auto& w : g.waiters) reply(w.conn, Op::gather_result, w.seq, g.count, f.key, out);
        gathers_.erase(f.key);
      }
      break;
    }
    case Op::query: {
      auto it = gathers_.find(f.key);
      std::string text;
      if (it == gathers_.end()) {
        text = failure_.empty() ? "no such gather in progress" : failure_;
      } else {
        std::string missing;
        for (uint32_t i = 0; i < it->second.count; ++i)
          if (!it->second.have[i]) missing += (missing.empty() ? "" : ",") + std::to_string(i);
        text = std::to_string(it->second.arrived) + " of " + std::to_string(it->second.count) +
               " arrived; missing member index(es): " + missing;
      }
      reply(id, Op::query_result, seq, 0, f.key, text);
      break;
    }
    case Op::bye:
      c.said_bye = true;
      rank_bye_[static_cast<size_t>(c.rank)] = true;
      reply(id, Op::ok, seq, 0, "", "");
      break;
    default:
      reply_error(id, seq, static_cast<int>(Errc::protocol), std::string("unexpected ") + wire::op_name(f.op()));
  }
}

}  // namespace gpucomm::bootstrap
