#include "store_client.hpp"

#include <sys/socket.h>

#include <cstring>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"

namespace gpucomm::bootstrap {

using wire::Op;

StoreClient::StoreClient(const UniqueId& id, int rank, int world_size, std::chrono::milliseconds connect_timeout)
    : endpoint_(id.endpoint()), rank_(rank) {
  fd_ = connect_tcp(id.host, id.port, connect_timeout);
  std::string token(reinterpret_cast<const char*>(id.token.data()), id.token.size());
  wire::write_frame(fd_.get(), Op::hello, rank, static_cast<uint32_t>(world_size), 0, "", token, "bootstrap hello");
  wire::Frame f;
  auto deadline = Clock::now() + connect_timeout;
  wire::read_frame(fd_.get(), &f, deadline, "bootstrap hello", false);
  if (f.op() == Op::error) {
    raise(Errc::protocol, "bootstrap hello",
          "the store at " + endpoint_ + " refused rank " + std::to_string(rank) + ": " + f.payload);
  }
  if (f.op() != Op::hello_ok) {
    raise(Errc::protocol, "bootstrap hello",
          std::string("unexpected reply '") + wire::op_name(f.op()) + "' from " + endpoint_);
  }
  reader_ = std::thread([this] { reader(); });
}

StoreClient::~StoreClient() {
  closing_.store(true);
  ::shutdown(fd_.get(), SHUT_RDWR);
  if (reader_.joinable()) reader_.join();
}

std::string StoreClient::failure() const {
  std::lock_guard<std::mutex> g(mu_);
  return failure_;
}

void StoreClient::set_failure(const std::string& why) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (failure_.empty()) failure_ = why;
    failed_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

void StoreClient::reader() {
  while (true) {
    wire::Frame f;
    try {
      auto forever = Clock::now() + std::chrono::hours(24 * 365);
      if (!wire::read_frame(fd_.get(), &f, forever, "bootstrap store", true)) {
        if (!closing_.load())
          set_failure("lost the connection to the bootstrap store at " + endpoint_ + " (rank 0 exited or died)");
        return;
      }
    } catch (const Error& e) {
      if (!closing_.load())
        set_failure("lost the connection to the bootstrap store at " + endpoint_ + ": " + e.detail());
      return;
    }
    if (f.op() == Op::abort) {
      GPUCOMM_LOG(error, "job aborted: " << f.payload);
      set_failure(f.payload);
      continue;
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      replies_[f.h.seq] = std::move(f);
    }
    cv_.notify_all();
  }
}

wire::Frame StoreClient::request(Op op, uint32_t aux, const std::string& key, const std::string& payload,
                                 int64_t timeout_ms, const std::string& what) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> g(send_mu_);
    {
      std::lock_guard<std::mutex> g2(mu_);
      seq = next_seq_++;
    }
    if (failed() && op != Op::bye && op != Op::query) raise(Errc::peer_failure, what, failure());
    wire::write_frame(fd_.get(), op, rank_, aux, seq, key, payload, what.c_str());
  }
  std::unique_lock<std::mutex> lk(mu_);
  auto ready = [&] { return replies_.count(seq) || (failed_.load() && op != Op::query); };
  if (timeout_ms > 0) {
    if (!cv_.wait_for(lk, std::chrono::milliseconds(timeout_ms), ready)) {
      lk.unlock();
      timed_out_.store(true);
      std::string detail = "timed out after " + std::to_string(timeout_ms / 1000.0).substr(0, 6) + " s";
      if (op == Op::gather) {
        try {
          wire::Frame q = request(Op::query, 0, key, "", 5000, what + " (diagnostic query)");
          detail += "; " + q.payload;
        } catch (const Error& e) {
          // The diagnostic only enriches the timeout raised below; that error is the one to report.
          GPUCOMM_LOG(debug, what << ": diagnostic query after the timeout failed: " << e.what());
        }
      }
      raise(Errc::timeout, what, detail + " (GPUCOMM_TIMEOUT sets the limit)");
    }
  } else {
    cv_.wait(lk, ready);
  }
  auto it = replies_.find(seq);
  if (it == replies_.end()) raise(Errc::peer_failure, what, failure_);
  wire::Frame f = std::move(it->second);
  replies_.erase(it);
  if (f.op() == Op::error) {
    Errc code = f.h.aux <= static_cast<uint32_t>(Errc::internal) ? static_cast<Errc>(f.h.aux) : Errc::protocol;
    raise(code, what, f.payload);
  }
  return f;
}

void StoreClient::set(const std::string& key, const std::string& value) {
  request(Op::set, 0, key, value, 60000, "bootstrap set '" + key + "'");
}

std::string StoreClient::get(const std::string& key, int64_t timeout_ms) {
  return request(Op::get, 0, key, "", timeout_ms, "bootstrap get '" + key + "'").payload;
}

std::vector<std::string> StoreClient::gather(const std::string& group, int count, int index, const std::string& data,
                                             int64_t timeout_ms, const std::string& what) {
  std::string payload(4, '\0');
  uint32_t idx = static_cast<uint32_t>(index);
  std::memcpy(payload.data(), &idx, 4);
  payload += data;
  wire::Frame f = request(Op::gather, static_cast<uint32_t>(count), group, payload, timeout_ms, what);
  std::vector<std::string> parts;
  size_t off = 0;
  for (int i = 0; i < count; ++i) {
    uint64_t len = 0;
    if (off + 8 > f.payload.size()) raise(Errc::protocol, what, "truncated gather result");
    std::memcpy(&len, f.payload.data() + off, 8);
    off += 8;
    if (off + len > f.payload.size()) raise(Errc::protocol, what, "truncated gather result");
    parts.emplace_back(f.payload.data() + off, len);
    off += len;
  }
  return parts;
}

void StoreClient::say_bye(int64_t timeout_ms) {
  if (failed()) return;
  closing_.store(true);  // the store may close right after acknowledging
  try {
    request(Op::bye, 0, "", "", timeout_ms, "bootstrap goodbye");
  } catch (const Error& e) {
    GPUCOMM_LOG(debug, "goodbye not acknowledged: " << e.what());
  }
}

}  // namespace gpucomm::bootstrap
