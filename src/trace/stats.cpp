#include "gpucomm/trace/stats.hpp"

#include <cmath>

namespace gpucomm::trace {

void CountHistogram::add(int64_t value, uint64_t times) {
  if (times == 0) return;
  counts_[value] += times;
  n_ += times;
  total_ += double(value) * double(times);
}

void CountHistogram::merge(const CountHistogram& o) {
  for (auto& [v, c] : o.counts_) add(v, c);
}

int64_t CountHistogram::at(uint64_t rank) const {
  uint64_t seen = 0;
  for (auto& [v, c] : counts_) {
    seen += c;
    if (rank < seen) return v;
  }
  return counts_.empty() ? 0 : counts_.rbegin()->first;
}

double CountHistogram::quantile(double q) const {
  if (n_ == 0) return 0;
  double pos = q * double(n_ - 1);
  uint64_t lo = static_cast<uint64_t>(std::floor(pos));
  double frac = pos - double(lo);
  double a = double(at(lo));
  if (frac == 0) return a;
  double b = double(at(lo + 1));
  return a + (b - a) * frac;
}

Summary CountHistogram::summary() const {
  Summary s;
  s.n = n_;
  if (n_ == 0) return s;
  s.min = double(counts_.begin()->first);
  s.max = double(counts_.rbegin()->first);
  s.q1 = quantile(0.25);
  s.median = quantile(0.5);
  s.q3 = quantile(0.75);
  s.total = total_;
  s.mean = total_ / double(n_);
  return s;
}

std::vector<CountHistogram::Bin> CountHistogram::log2_bins() const {
  std::map<int, uint64_t> by_exp;  // -1 for values < 1
  for (auto& [v, c] : counts_) {
    int e = -1;
    if (v >= 1) {
      e = 0;
      while (e < 62 && (int64_t(1) << (e + 1)) <= v) ++e;
    }
    by_exp[e] += c;
  }
  // Every bin from the smallest to the largest value's, empty ones included: a gap in the sizes
  // shows as bins of count 0, not as neighbouring bars.
  std::vector<Bin> out;
  if (by_exp.empty()) return out;
  for (int e = by_exp.begin()->first; e <= by_exp.rbegin()->first; ++e) {
    auto it = by_exp.find(e);
    uint64_t c = it == by_exp.end() ? 0 : it->second;
    if (e < 0) {
      out.push_back({0, 1, c});
    } else {
      out.push_back({int64_t(1) << e, int64_t(1) << (e + 1), c});
    }
  }
  return out;
}

void WindowPeak::add(int64_t t) {
  in_window_.push_back(t);
  while (!in_window_.empty() && in_window_.front() <= t - width_) in_window_.pop_front();
  if (in_window_.size() > peak_) peak_ = in_window_.size();
}

void TimeSeries::add(int64_t t, uint64_t n) {
  if (!started_) {
    started_ = true;
    origin_ = t;
  }
  if (t < origin_) t = origin_;  // events arrive in time order; guard against clock jitter
  uint64_t idx = static_cast<uint64_t>((t - origin_) / bin_ns_);
  while (idx >= max_bins_) {
    std::vector<uint64_t> merged((bins_.size() + 1) / 2, 0);
    for (size_t k = 0; k < bins_.size(); ++k) merged[k / 2] += bins_[k];
    bins_.swap(merged);
    bin_ns_ *= 2;
    idx = static_cast<uint64_t>((t - origin_) / bin_ns_);
  }
  if (idx >= bins_.size()) bins_.resize(idx + 1, 0);
  bins_[idx] += n;
}

}  // namespace gpucomm::trace
