#pragma once
// One PE's connection to the bootstrap store. A reader thread receives replies and the
// store's abort notices; requests wait for their reply with a deadline. Once the job has
// failed (a peer died, the store vanished, a PE aborted: recorded in the JobFailure the client
// shares with the rest of the bootstrap), every request leaves with the reason.
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpucomm/bootstrap/unique_id.hpp"
#include "job_failure.hpp"
#include "socket.hpp"
#include "wire.hpp"

namespace gpucomm::bootstrap {

class StoreClient {
 public:
  StoreClient(const UniqueId& id, int rank, int world_size, std::chrono::milliseconds connect_timeout,
              JobFailure& failure);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key, int64_t timeout_ms);
  // Contributes `data` as member `index` of `count` to gather `group`; returns all parts.
  std::vector<std::string> gather(const std::string& group, int count, int index, const std::string& data,
                                  int64_t timeout_ms, const std::string& what);
  // Orderly goodbye: the store will not treat the coming disconnect as a failure.
  void say_bye(int64_t timeout_ms);
  // Tells the store that the job failed (`rank` failed first, -1: none; `why` names it): the
  // store tells every PE at once. Best effort, no reply awaited.
  void send_abort(int rank, const std::string& why);

  bool failed() const { return failure_.failed(); }
  // True once a request of this PE timed out: the job's collectives are out of step, so
  // finalize aborts instead of waiting in a barrier.
  bool timed_out() const { return timed_out_.load(); }
  std::string failure() const { return failure_.why(); }
  std::string endpoint() const { return endpoint_; }

 private:
  wire::Frame request(wire::Op op, uint32_t aux, const std::string& key, const std::string& payload, int64_t timeout_ms,
                      const std::string& what);
  void reader();

  std::string endpoint_;
  int rank_;
  Fd fd_;
  std::mutex send_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, wire::Frame> replies_;
  uint64_t next_seq_ = 1;
  JobFailure& failure_;
  std::atomic<bool> closing_{false};
  std::atomic<bool> timed_out_{false};
  std::thread reader_;
};

}  // namespace gpucomm::bootstrap
