#include "job_failure.hpp"

namespace gpucomm::bootstrap {

bool JobFailure::record(int rank, const std::string& why, FailureSource from) {
  std::vector<Listener> listeners;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (failed_.load(std::memory_order_relaxed)) return false;
    rank_ = rank;
    why_ = why.empty() ? std::string("the job failed") : why;
    store_word();
    failed_.store(true, std::memory_order_release);
    listeners = listeners_;
  }
  for (auto& l : listeners) l(rank, why, from);
  return true;
}

std::string JobFailure::why() const {
  std::lock_guard<std::mutex> g(mu_);
  return why_;
}

int JobFailure::rank() const {
  std::lock_guard<std::mutex> g(mu_);
  return rank_;
}

void JobFailure::store_word() const {
  if (!word_ || why_.empty()) return;  // why_ is set exactly when the job failed
  const uint32_t v = rank_ >= 0 ? static_cast<uint32_t>(rank_) + 1 : kNoPe;
  // Device waits poll the word (relaxed, system scope) and only need to see it eventually; no
  // data is published with it.
  std::atomic_ref<uint32_t>(*word_).store(v, std::memory_order_relaxed);
}

void JobFailure::set_word(uint32_t* word) {
  std::lock_guard<std::mutex> g(mu_);
  word_ = word;
  store_word();
}

void JobFailure::add_listener(Listener l) {
  std::lock_guard<std::mutex> g(mu_);
  listeners_.push_back(std::move(l));
}

void JobFailure::note_local(const std::string& what) {
  std::lock_guard<std::mutex> g(mu_);
  if (local_.empty()) local_ = what;
}

std::string JobFailure::local() const {
  std::lock_guard<std::mutex> g(mu_);
  return local_;
}

void JobFailure::forgive_local() {
  std::lock_guard<std::mutex> g(mu_);
  local_.clear();
}

}  // namespace gpucomm::bootstrap
