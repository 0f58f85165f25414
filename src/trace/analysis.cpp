#include "gpucomm/trace/analysis.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <queue>
#include <tuple>

#include "gpucomm/trace/functions.hpp"

namespace gpucomm::trace {
namespace {

struct RankStream {
  std::unique_ptr<RecordSource> src;
  Record rec;
  int64_t t = 0, stop = 0;  // start/stop on the common clock
  uint64_t seq = 0;
  bool live = false;

  // Reads the next record; calls without wall-clock times keep the previous call's time.
  bool advance() {
    live = src->next(rec);
    if (!live) return false;
    if (rec.has_wall) {
      t = std::max(t, rec.wall_start_ns);
      stop = std::max(t, rec.wall_stop_ns);
    } else {
      stop = t;
    }
    ++seq;
    return true;
  }
};

}  // namespace

Analysis analyze(const TraceSet& trace, const AnalysisOptions& opt) {
  const auto wall0 = std::chrono::steady_clock::now();
  Analysis a;
  a.info = trace.info();
  a.warnings = a.info.warnings;
  const int n = trace.ranks();
  const uint64_t total_bytes = a.info.total_bytes();

  std::vector<RankStream> streams(static_cast<size_t>(n));
  std::vector<RankAccumulator> acc;
  acc.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    streams[r].src = trace.open_rank(r);
    acc.emplace_back(r, streams[r].src->datatype_sizes());
  }
  MatchingReplay replay(n);
  a.pairs.assign(static_cast<size_t>(n), std::vector<PairTotals>(static_cast<size_t>(n)));

  using Key = std::tuple<int64_t, int, uint64_t>;  // time, rank, sequence
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap;
  for (int r = 0; r < n; ++r)
    if (streams[r].advance()) heap.emplace(streams[r].t, r, streams[r].seq);

  std::vector<P2PEvent> events;
  uint64_t next_progress = 1 << 20;
  bool first = true;
  while (!heap.empty()) {
    auto [t, r, seq] = heap.top();
    heap.pop();
    RankStream& s = streams[r];
    if (first) {
      a.t0_ns = t;
      first = false;
    }
    a.t1_ns = std::max(a.t1_ns, s.stop);
    ++a.records;
    events.clear();
    acc[r].consume(s.rec, s.t, s.stop, events);
    if (function_class(s.rec.func) == FuncClass::collective) {
      a.run_coll_rate.add(t);
      a.coll_series.add(t);
    }
    for (const P2PEvent& e : events) {
      const bool world = e.comm == kCommWorld, self = e.comm == kCommSelf;
      if (e.kind == P2PEvent::send) {
        a.run_p2p_rate.add(e.t_ns);
        a.p2p_series.add(e.t_ns);
        if (!world && !self) {
          ++a.unreplayed_p2p;
          continue;
        }
        int dst = self ? e.rank : e.peer;
        if (dst < 0 || dst >= n) {
          ++a.invalid_peer;
          continue;
        }
        replay.arrive(dst, self ? 0 : e.rank, e);
      } else {
        if (!world && !self) {
          ++a.unreplayed_p2p;
          continue;
        }
        replay.post(e);
      }
    }
    if (s.advance()) heap.emplace(s.t, r, s.seq);
    if (opt.progress && a.records % 4096 == 0) {
      uint64_t done = 0;
      for (auto& st : streams) done += st.src->bytes_consumed();
      if (done >= next_progress) {
        opt.progress(done, total_bytes);
        next_progress = done + (1 << 20);
      }
    }
  }
  replay.finish();
  if (opt.progress) opt.progress(total_bytes, total_bytes);

  for (int r = 0; r < n; ++r) {
    acc[r].finish();
    const RankMetrics& m = acc[r].metrics();
    // Footer cross-check: the per-function call counts the tracer wrote at the end of the file.
    const auto& footer = streams[r].src->footer_counts();
    for (size_t f = 0; f < footer.size() && f < fid::kAllFunctions; ++f) {
      if (footer[f] != m.calls_by_function[f]) {
        a.warnings.push_back(streams[r].src->path() + ": footer counts " + std::to_string(footer[f]) + " calls of " +
                             std::string(function_name(static_cast<uint16_t>(f))) + ", the body holds " +
                             std::to_string(m.calls_by_function[f]));
      }
    }
    for (auto& [dst, c] : m.sends_to) {
      if (dst >= 0 && dst < n) {
        a.pairs[r][dst].sends += c;
        auto it = m.send_bytes_to.find(dst);
        if (it != m.send_bytes_to.end()) a.pairs[r][dst].send_bytes += it->second;
      }
    }
    for (auto& [src, c] : m.recvs_from) {
      if (src >= 0 && src < n) {
        a.pairs[src][r].recvs += c;
        auto it = m.recv_bytes_from.find(src);
        if (it != m.recv_bytes_from.end()) a.pairs[src][r].recv_bytes += it->second;
      }
    }
    a.queues.push_back(replay.stats(r));
    a.ranks.push_back(m);
  }
  a.run_queues = replay.run_stats();
  a.snapshots = replay.snapshots(opt.snapshot_limit, a.t0_ns);
  if (a.unreplayed_p2p) {
    a.warnings.push_back(std::to_string(a.unreplayed_p2p) +
                         " point-to-point calls use communicators other than MPI_COMM_WORLD/MPI_COMM_SELF and are left "
                         "out of the queue replay");
  }
  if (a.invalid_peer)
    a.warnings.push_back(std::to_string(a.invalid_peer) + " sends name a destination outside the run");
  a.read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return a;
}

}  // namespace gpucomm::trace
