#pragma once
// Streaming statistics whose memory depends on the number of distinct values or on a window,
// never on the number of events.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace gpucomm::trace {

// Five-number summary plus mean and total. Quantiles interpolate linearly between order
// statistics (numpy's default); the median of an even count is the mean of the two middle values
// (Python's statistics.median).
struct Summary {
  uint64_t n = 0;
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0, mean = 0, total = 0;
};

// Exact distribution of integer values, stored as value -> count.
class CountHistogram {
 public:
  void add(int64_t value, uint64_t times = 1);
  void merge(const CountHistogram& other);
  uint64_t count() const { return n_; }
  double total() const { return total_; }
  double quantile(double q) const;  // q in [0, 1]; 0 when empty
  Summary summary() const;
  const std::map<int64_t, uint64_t>& values() const { return counts_; }
  // Counts per power-of-two bin [2^k, 2^(k+1)) (bin of 0 is [0, 1)), as (low, high, count), every
  // bin from the smallest value's to the largest's (empty ones with count 0).
  struct Bin {
    int64_t lo, hi;
    uint64_t count;
  };
  std::vector<Bin> log2_bins() const;

 private:
  int64_t at(uint64_t rank) const;  // value of the rank-th smallest (0-based)
  std::map<int64_t, uint64_t> counts_;
  uint64_t n_ = 0;
  double total_ = 0;
};

// Largest number of events inside any window [t, t + width) as events arrive in time order.
class WindowPeak {
 public:
  explicit WindowPeak(int64_t width_ns = 1000) : width_(width_ns) {}
  void add(int64_t t_ns);
  uint64_t peak() const { return peak_; }
  int64_t width_ns() const { return width_; }

 private:
  int64_t width_;
  std::deque<int64_t> in_window_;
  uint64_t peak_ = 0;
};

// Event counts over time in equal bins; when the bins exceed a limit, pairs merge and the bin
// width doubles, so memory stays bounded for any duration.
class TimeSeries {
 public:
  explicit TimeSeries(int64_t initial_bin_ns = 1000000, size_t max_bins = 4096)
      : bin_ns_(initial_bin_ns), max_bins_(max_bins) {}
  void add(int64_t t_ns, uint64_t n = 1);
  int64_t origin_ns() const { return origin_; }
  int64_t bin_ns() const { return bin_ns_; }
  const std::vector<uint64_t>& bins() const { return bins_; }

 private:
  int64_t bin_ns_;
  size_t max_bins_;
  bool started_ = false;
  int64_t origin_ = 0;
  std::vector<uint64_t> bins_;
};

}  // namespace gpucomm::trace
