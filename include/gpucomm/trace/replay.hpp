#pragma once
// Matching-queue replay: rebuilds every rank's unexpected-message queue (UMQ) and posted-receive
// queue (PRQ) from the point-to-point events of a trace, processed in global time order.
//
// Model (docs/TRACES.md "Replay model"): a message arrives at its receiver at the start time of
// its send call; on arrival it searches the receiver's PRQ front to back for the first receive
// that matches (comm equal, source equal or MPI_ANY_SOURCE, tag equal or MPI_ANY_TAG), takes it
// out if found, else joins the UMQ tail. A receive is posted at the start of its call; it
// searches the UMQ front to back for the first matching message, takes it out if found, else
// joins the PRQ tail. Matching is immediate (the MPI library progresses at once); arrival order
// per sender follows its call order, which gives MPI's non-overtaking order.
#include <cstdint>
#include <vector>

#include "gpucomm/trace/metrics.hpp"
#include "gpucomm/trace/queue_snapshot.hpp"
#include "gpucomm/trace/stats.hpp"

namespace gpucomm::trace {

struct QueueStats {
  // Every search records the queue length when it started and its depth: entries inspected up to
  // and including the match, or the whole queue when nothing matched.
  CountHistogram umq_length, umq_depth, prq_length, prq_depth;
  uint64_t expected = 0, unexpected = 0;  // arrivals that found / did not find a posted receive
  uint64_t max_umq = 0, max_prq = 0;
  uint64_t left_umq = 0, left_prq = 0;  // still queued when the trace ends
  void merge(const QueueStats& o);
  double unexpected_share() const;
};

class MatchingReplay {
 public:
  explicit MatchingReplay(int ranks);
  // A message from `src_world` to `dst_world` (ranks in MPI_COMM_WORLD) arrives.
  void arrive(int dst_world, int src_in_comm, const P2PEvent& send);
  // `e.rank` posts a receive.
  void post(const P2PEvent& e);
  const QueueStats& stats(int rank) const { return ranks_[rank].stats; }
  QueueStats run_stats() const;
  void finish();
  // Each rank's largest UMQ+PRQ state (ranks with empty queues throughout are left out), the
  // `limit` largest first (0: all); times relative to `t0_ns`.
  std::vector<QueueSnapshot> snapshots(size_t limit, int64_t t0_ns) const;

 private:
  struct Rank {
    std::vector<QueueEnvelope> umq, prq;
    QueueStats stats;
    size_t peak = 0;
    int64_t peak_t = 0;
    std::vector<QueueEnvelope> peak_umq, peak_prq;
  };
  void maybe_snapshot(Rank& r, int64_t t);
  std::vector<Rank> ranks_;
};

}  // namespace gpucomm::trace
