#include "store_client.hpp"

#include <sys/socket.h>

#include <cstring>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/interrupt.hpp"
#include "gpucomm/core/log.hpp"

namespace gpucomm::bootstrap {

using wire::Op;

StoreClient::StoreClient(const UniqueId& id, int rank, int world_size, std::chrono::milliseconds connect_timeout,
                         JobFailure& failure)
    : endpoint_(id.endpoint()), rank_(rank), failure_(failure) {
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

void StoreClient::reader() {
  while (true) {
    wire::Frame f;
    try {
      auto forever = Clock::now() + std::chrono::hours(24 * 365);
      if (!wire::read_frame(fd_.get(), &f, forever, "bootstrap store", true)) {
        if (!closing_.load()) {
          failure_.record(0, "lost the connection to the bootstrap store at " + endpoint_ + " (rank 0 exited or died)",
                          FailureSource::store);
        }
        cv_.notify_all();
        return;
      }
    } catch (const Error& e) {
      if (!closing_.load()) {
        failure_.record(0, "lost the connection to the bootstrap store at " + endpoint_ + ": " + e.detail(),
                        FailureSource::store);
      }
      cv_.notify_all();
      return;
    }
    if (f.op() == Op::abort) {
      // aux: the rank that failed first, plus one (0: no PE, e.g. the launcher is gone).
      const int first = f.h.aux > 0 ? static_cast<int>(f.h.aux) - 1 : -1;
      if (failure_.record(first, f.payload, FailureSource::store)) GPUCOMM_LOG(error, "job failed: " << f.payload);
      cv_.notify_all();
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
  // Wait in slices: the job may fail through another channel (the launcher's lifeline, a local
  // abort) and a front end may interrupt the wait (gpucomm/core/interrupt.hpp).
  const auto start = Clock::now();
  std::unique_lock<std::mutex> lk(mu_);
  while (!replies_.count(seq) && !(failed() && op != Op::query)) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (timeout_ms > 0 && waited >= timeout_ms) {
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
      failure_.note_local(std::string(what).append(": ").append(detail));
      raise(Errc::timeout, what, detail + " (GPUCOMM_TIMEOUT sets the limit)");
    }
    lk.unlock();  // the check may take the Python interpreter's lock: never while holding mu_
    if (interrupt_requested()) {
      failure_.note_local(what + ": interrupted by a signal");
      raise(Errc::aborted, what, "interrupted by a signal while waiting");
    }
    lk.lock();
    if (replies_.count(seq)) break;
    cv_.wait_for(lk, std::chrono::milliseconds(20));
  }
  auto it = replies_.find(seq);
  if (it == replies_.end()) {
    lk.unlock();
    raise(Errc::peer_failure, what, failure_.why());
  }
  wire::Frame f = std::move(it->second);
  replies_.erase(it);
  if (f.op() == Op::error) {
    Errc code = f.h.aux <= static_cast<uint32_t>(Errc::last) ? static_cast<Errc>(f.h.aux) : Errc::protocol;
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

void StoreClient::send_abort(int rank, const std::string& why) {
  try {
    std::lock_guard<std::mutex> g(send_mu_);
    wire::write_frame(fd_.get(), Op::abort, rank_, rank >= 0 ? static_cast<uint32_t>(rank) + 1 : 0, 0, "", why,
                      "bootstrap abort");
  } catch (const Error& e) {
    // The store is gone already: the others learn of the failure from that.
    GPUCOMM_LOG(debug, "abort not sent to the store: " << e.what());
  }
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
