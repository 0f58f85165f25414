#pragma once
// The bootstrap store, served by rank 0 on a thread of its own: a key-value store with
// blocking gets, and gathers (all-gather and barrier) over any group of PEs. It watches every
// PE's connection: a PE that disconnects without saying goodbye fails the job, and every other
// PE is told at once (abort frame), so no PE waits forever on a dead one.
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
  StoreServer(Fd listen_fd, int world_size, const std::array<uint8_t, 16>& token);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  std::string endpoint() const { return endpoint_; }
  // Waits (up to `timeout_ms`) until every rank said goodbye or the job failed, then stops.
  void shutdown(int64_t timeout_ms);

 private:
  struct Conn {
    Fd fd;
    int rank = -1;
    bool said_bye = false;
    std::string in;
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
  bool read_conn(int id);  // false: connection gone
  void handle(int id, wire::Frame& f);
  void drop(int id, const std::string& why);
  void fail_job(const std::string& reason);
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
  std::thread thread_;

  int next_id_ = 0;
  std::map<int, Conn> conns_;
  std::vector<bool> rank_seen_;
  std::vector<bool> rank_bye_;
  std::map<std::string, std::string> kv_;
  std::map<std::string, std::vector<Waiter>> get_waiters_;
  std::map<std::string, Gather> gathers_;
  std::string failure_;
};

}  // namespace gpucomm::bootstrap
