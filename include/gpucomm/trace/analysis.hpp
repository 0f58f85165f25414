#pragma once
// One pass over a whole trace: reads every rank file as a stream, merges the ranks' calls by
// start time, computes the per-rank metrics and replays the matching queues.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "gpucomm/trace/metrics.hpp"
#include "gpucomm/trace/queue_snapshot.hpp"
#include "gpucomm/trace/replay.hpp"
#include "gpucomm/trace/trace_set.hpp"

namespace gpucomm::trace {

struct AnalysisOptions {
  size_t snapshot_limit = 8;  // queue snapshots kept (largest first); 0 keeps one per rank
  // Called now and then with (bytes read, bytes in all rank files).
  std::function<void(uint64_t, uint64_t)> progress;
};

struct PairTotals {
  uint64_t sends = 0, send_bytes = 0, recvs = 0, recv_bytes = 0;
};

struct Analysis {
  TraceInfo info;
  std::vector<RankMetrics> ranks;
  std::vector<QueueStats> queues;  // per rank
  QueueStats run_queues;
  RateCounter run_p2p_rate, run_coll_rate;
  TimeSeries p2p_series{1000000}, coll_series{1000000};
  std::vector<QueueSnapshot> snapshots;
  std::vector<std::vector<PairTotals>> pairs;  // [src][dst] as seen by sender and receiver
  uint64_t records = 0;
  uint64_t unreplayed_p2p = 0;  // events on communicators the replay cannot map to world ranks
  uint64_t invalid_peer = 0;    // sends to ranks outside the run
  int64_t t0_ns = 0, t1_ns = 0;
  double read_seconds = 0;
  std::vector<std::string> warnings;
};

Analysis analyze(const TraceSet& trace, const AnalysisOptions& options = {});

// The report as JSON (schema in docs/TRACES.md). only_rank >= 0 limits "ranks" to that rank.
void write_json(const Analysis& a, std::ostream& os, int only_rank = -1);

}  // namespace gpucomm::trace
