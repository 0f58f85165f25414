#pragma once
// The bootstrap store, served by rank 0 on a thread of its own: a key-value store with
// blocking gets, and gathers (all-gather and barrier) over any group of PEs. It watches every
// PE's connection: a PE that disconnects without saying goodbye, or that aborts, fails the job,
// and every other PE is told at once (abort frame), so no PE waits forever on a dead one.
// Foreign clients are bounded: before its hello a connection may send one hello frame of the
// exact size within kHelloDeadline, at most kMaxUnauthenticated such connections wait at once
// (a new one pushes out the oldest), running out of descriptors pauses accepting, and
// rejections are counted with one log line.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "socket.hpp"
#include "wire.hpp"

namespace gpucomm::bootstrap {

class StoreServer {
 public:
  static constexpr size_t kHelloBytes = sizeof(wire::Header) + 16;  // header + token
  static constexpr auto kHelloDeadline = std::chrono::seconds(3);
  static constexpr size_t kMaxUnauthenticated = 64;
  static constexpr auto kAcceptPause = std::chrono::milliseconds(10);
  static constexpr int kEvictOnExhaustion = 8;  // idle connections closed when descriptors run out
  struct Stats {                                // read by the store thread; tests read them after shutdown
    uint64_t accepted = 0;
    uint64_t rejected = 0;   // foreign, malformed, wrong token, late hello
    uint64_t timed_out = 0;  // of those: no hello in time
    uint64_t evicted = 0;    // idle unauthenticated connections pushed out
    uint64_t fd_exhausted = 0;
  };
  StoreServer(Fd listen_fd, int world_size, const std::array<uint8_t, 16>& token);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  std::string endpoint() const { return endpoint_; }
  // Waits (up to `timeout_ms`) until every rank said goodbye or the job failed, then stops.
  void shutdown(int64_t timeout_ms);
  // Waits (up to `timeout_ms`) until the store has failed the job and told every PE; false if
  // it did not in time.
  bool wait_failed(int64_t timeout_ms) const;
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Valid once shutdown() returned (the store thread writes them).
  const Stats& stats() const { return stats_; }

 private:
  struct Conn {
    Fd fd;
    int rank = -1;  // -1 until its hello was accepted
    bool said_bye = false;
    std::string in;
    Clock::time_point hello_deadline{};
  };
  struct Waiter {
    int conn;
    uint64_t seq;
  };
  struct Gather {
    uint32_t count = 0;
    std::vector<std::string> parts;  // by member index
    std::vector<bool> have;          // which indexes arrived
    std::vector<Waiter> waiters;
    size_t arrived = 0;
  };

  void loop();
  void accept_all();
  size_t unauthenticated() const;
  void evict_oldest_unauthenticated();
  void drop_late_hellos();
  void reject(int id, uint64_t seq, const std::string& why);
  bool read_conn(int id);  // false: connection gone
  void handle(int id, wire::Frame& f);
  void drop(int id, const std::string& why);
  void fail_job(int rank, const std::string& reason);  // `rank` failed first (-1: none)
  void send_abort(int id);
  void reply(int id, wire::Op op, uint64_t seq, uint32_t aux, const std::string& key, const std::string& payload);
  void reply_error(int id, uint64_t seq, int errc, const std::string& why);
  bool all_done() const;

  Fd listen_;
  std::string endpoint_;
  int world_size_;
  std::array<uint8_t, 16> token_;
  Fd wake_rd_, wake_wr_;
  std::atomic<bool> stop_{false};
  std::atomic<int> pending_{0};  // ranks that connected and have not said goodbye nor gone
  std::atomic<bool> failed_{false};
  std::thread thread_;

  int next_id_ = 0;
  std::map<int, Conn> conns_;
  std::vector<bool> rank_seen_;
  std::vector<bool> rank_bye_;
  std::map<std::string, std::string> kv_;
  std::map<std::string, std::vector<Waiter>> get_waiters_;
  std::map<std::string, Gather> gathers_;
  std::string failure_;
  int failed_rank_ = -1;
  Clock::time_point accept_paused_until_{};
  Stats stats_;
};

}  // namespace gpucomm::bootstrap
