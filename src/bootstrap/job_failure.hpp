#pragma once
// The job's first failure as this PE knows it, from whichever source saw it first: the store's
// abort notice, the lost connection to the store, the launcher's lifeline, or this PE's own abort.
// Recording is thread-safe and happens once; then, on the recording thread, the job-state word
// of the GPU handle is set and the listeners run (report to the launcher, forward to the store).
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace gpucomm::bootstrap {

// Where a failure was learned.
enum class FailureSource { store, local, launcher };

class JobFailure {
 public:
  // The job-state word's value when no PE failed first (the launcher is gone); otherwise the
  // word holds the first failed PE's rank + 1 (gpucomm/base/handle.hpp).
  static constexpr uint32_t kNoPe = 0xffffffffu;
  using Listener = std::function<void(int rank, const std::string& why, FailureSource from)>;

  // Records the failure unless one is recorded already; returns whether this was the first.
  // `rank` is the PE that failed first (-1: none, the launcher is gone); `why` a sentence that
  // names it.
  bool record(int rank, const std::string& why, FailureSource from);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  std::string why() const;
  int rank() const;
  // The host-mapped word device waits poll (null: none). Set at once if the job already failed.
  // The owner unregisters it (nullptr) before freeing it.
  void set_word(uint32_t* word);
  void add_listener(Listener l);

  // A wait of this PE failed by itself (timeout, interrupt): kept for the abort it leads to.
  void note_local(const std::string& what);
  std::string local() const;
  // Every PE passed a barrier after that failure (the program caught it): in step again.
  void forgive_local();

 private:
  void store_word() const;  // with mu_ held

  mutable std::mutex mu_;
  std::atomic<bool> failed_{false};
  int rank_ = -1;
  std::string why_;
  std::string local_;
  uint32_t* word_ = nullptr;
  std::vector<Listener> listeners_;
};

}  // namespace gpucomm::bootstrap
