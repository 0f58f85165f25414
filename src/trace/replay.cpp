#include "gpucomm/trace/replay.hpp"

#include <algorithm>

namespace gpucomm::trace {

void QueueStats::merge(const QueueStats& o) {
  umq_length.merge(o.umq_length);
  umq_depth.merge(o.umq_depth);
  prq_length.merge(o.prq_length);
  prq_depth.merge(o.prq_depth);
  expected += o.expected;
  unexpected += o.unexpected;
  max_umq = std::max(max_umq, o.max_umq);
  max_prq = std::max(max_prq, o.max_prq);
  left_umq += o.left_umq;
  left_prq += o.left_prq;
}

double QueueStats::unexpected_share() const {
  uint64_t n = expected + unexpected;
  return n ? double(unexpected) / double(n) : 0.0;
}

MatchingReplay::MatchingReplay(int ranks) : ranks_(static_cast<size_t>(ranks)) {}

void MatchingReplay::maybe_snapshot(Rank& r, int64_t t) {
  size_t total = r.umq.size() + r.prq.size();
  if (total <= r.peak) return;
  // Past 4096 entries, copy only on 1/64 growth so that a long monotone build-up stays linear.
  if (r.peak >= 4096 && total < r.peak + r.peak / 64) return;
  r.peak = total;
  r.peak_t = t;
  r.peak_umq = r.umq;
  r.peak_prq = r.prq;
}

void MatchingReplay::arrive(int dst, int src_in_comm, const P2PEvent& s) {
  Rank& r = ranks_[static_cast<size_t>(dst)];
  QueueEnvelope msg{s.comm, src_in_comm, s.tag, s.bytes};
  const size_t len = r.prq.size();
  size_t k = 0;
  for (; k < len; ++k)
    if (envelope_matches(r.prq[k], msg)) break;
  r.stats.prq_length.add(static_cast<int64_t>(len));
  if (k < len) {
    r.stats.prq_depth.add(static_cast<int64_t>(k + 1));
    r.prq.erase(r.prq.begin() + static_cast<std::ptrdiff_t>(k));
    ++r.stats.expected;
  } else {
    r.stats.prq_depth.add(static_cast<int64_t>(len));
    r.umq.push_back(msg);
    ++r.stats.unexpected;
    r.stats.max_umq = std::max<uint64_t>(r.stats.max_umq, r.umq.size());
    maybe_snapshot(r, s.t_ns);
  }
}

void MatchingReplay::post(const P2PEvent& e) {
  Rank& r = ranks_[static_cast<size_t>(e.rank)];
  QueueEnvelope recv{e.comm, e.peer == kAnySource ? kSnapshotAny : e.peer, e.tag == kAnyTag ? kSnapshotAny : e.tag,
                     e.bytes};
  const size_t len = r.umq.size();
  size_t k = 0;
  for (; k < len; ++k)
    if (envelope_matches(recv, r.umq[k])) break;
  r.stats.umq_length.add(static_cast<int64_t>(len));
  if (k < len) {
    r.stats.umq_depth.add(static_cast<int64_t>(k + 1));
    r.umq.erase(r.umq.begin() + static_cast<std::ptrdiff_t>(k));
  } else {
    r.stats.umq_depth.add(static_cast<int64_t>(len));
    r.prq.push_back(recv);
    r.stats.max_prq = std::max<uint64_t>(r.stats.max_prq, r.prq.size());
    maybe_snapshot(r, e.t_ns);
  }
}

void MatchingReplay::finish() {
  for (auto& r : ranks_) {
    r.stats.left_umq = r.umq.size();
    r.stats.left_prq = r.prq.size();
  }
}

QueueStats MatchingReplay::run_stats() const {
  QueueStats s;
  for (auto& r : ranks_) s.merge(r.stats);
  return s;
}

std::vector<QueueSnapshot> MatchingReplay::snapshots(size_t limit, int64_t t0) const {
  std::vector<QueueSnapshot> out;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const Rank& r = ranks_[i];
    if (r.peak == 0) continue;
    QueueSnapshot s;
    s.rank = static_cast<int32_t>(i);
    s.reason = SnapshotReason::rank_peak;
    s.time_s = double(r.peak_t - t0) * 1e-9;
    s.umq = r.peak_umq;
    s.prq = r.peak_prq;
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const QueueSnapshot& a, const QueueSnapshot& b) {
    return a.umq.size() + a.prq.size() > b.umq.size() + b.prq.size();
  });
  if (limit > 0 && out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace gpucomm::trace
