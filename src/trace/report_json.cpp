// The analysis report as JSON. Field meanings: docs/TRACES.md.
#include <ostream>

#include "gpucomm/core/json.hpp"
#include "gpucomm/trace/analysis.hpp"
#include "gpucomm/trace/functions.hpp"

namespace gpucomm::trace {
namespace {

void summary(JsonWriter& w, std::string_view key, const CountHistogram& h) {
  Summary s = h.summary();
  w.key(key).begin_object();
  w.field("n", s.n).field("min", s.min).field("q1", s.q1).field("median", s.median).field("q3", s.q3);
  w.field("max", s.max).field("mean", s.mean).field("total", s.total);
  w.end_object();
}

void log2_bins(JsonWriter& w, std::string_view key, const CountHistogram& h) {
  w.key(key).begin_array();
  for (auto& b : h.log2_bins()) w.begin_array().value(b.lo).value(b.hi).value(b.count).end_array();
  w.end_array();
}

void values(JsonWriter& w, std::string_view key, const CountHistogram& h) {
  w.key(key).begin_array();
  for (auto& [v, c] : h.values()) w.begin_array().value(v).value(c).end_array();
  w.end_array();
}

void string_counts(JsonWriter& w, std::string_view key, const std::map<std::string, uint64_t>& m) {
  w.key(key).begin_object();
  for (auto& [k, v] : m) w.field(k, v);
  w.end_object();
}

void int_list(JsonWriter& w, std::string_view key, const std::set<int32_t>& s) {
  w.key(key).begin_array();
  for (int32_t v : s) w.value(v);
  w.end_array();
}

double share(uint64_t part, uint64_t whole) {
  return whole ? double(part) / double(whole) : 0.0;
}

void rates(JsonWriter& w, std::string_view key, const RateCounter& rc, double t_app_s) {
  w.key(key).begin_object();
  w.field("events", rc.events);
  w.key("windows").begin_array();
  for (size_t k = 0; k < rc.peaks.size(); ++k) {
    double win = double(kRateWindowsNs[k]) * 1e-9;
    w.begin_object();
    w.field("window_s", win).field("peak", rc.peaks[k].peak()).field("peak_per_s", double(rc.peaks[k].peak()) / win);
    w.field("mean", t_app_s > 0 ? double(rc.events) * win / t_app_s : 0.0);
    w.field("mean_per_s", t_app_s > 0 ? double(rc.events) / t_app_s : 0.0);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void queues(JsonWriter& w, const QueueStats& q) {
  w.key("queues").begin_object();
  w.field("expected", q.expected).field("unexpected", q.unexpected).field("unexpected_share", q.unexpected_share());
  w.field("max_umq", q.max_umq).field("max_prq", q.max_prq).field("left_umq", q.left_umq).field("left_prq", q.left_prq);
  summary(w, "umq_length", q.umq_length);
  summary(w, "umq_depth", q.umq_depth);
  summary(w, "prq_length", q.prq_length);
  summary(w, "prq_depth", q.prq_depth);
  values(w, "umq_length_values", q.umq_length);
  values(w, "umq_depth_values", q.umq_depth);
  values(w, "prq_length_values", q.prq_length);
  values(w, "prq_depth_values", q.prq_depth);
  w.end_object();
}

void rank_json(JsonWriter& w, const RankMetrics& m, const QueueStats& q) {
  w.begin_object();
  w.field("rank", m.rank).field("calls", m.calls);
  w.key("calls_by_function").begin_object();
  for (size_t f = 0; f < m.calls_by_function.size(); ++f)
    if (m.calls_by_function[f]) w.field(function_short_name(static_cast<uint16_t>(f)), m.calls_by_function[f]);
  w.end_object();

  w.key("time").begin_object();
  w.field("t_app_s", m.t_app_s())
      .field("t_mpi_s", double(m.t_mpi_ns) * 1e-9)
      .field("t_comm_s", double(m.t_comm_ns) * 1e-9);
  w.field("t_comm_span_s", m.any_comm ? double(m.last_comm_stop_ns - m.first_comm_start_ns) * 1e-9 : 0.0);
  w.field("s_mpi", m.s_mpi()).field("s_comm", m.s_comm()).field("s_admin", m.s_admin());
  w.end_object();

  w.key("p2p").begin_object();
  w.field("sends", m.sends).field("recvs", m.recvs);
  string_counts(w, "send_functions", m.send_functions);
  string_counts(w, "recv_functions", m.recv_functions);
  summary(w, "send_bytes", m.send_bytes);
  summary(w, "recv_bytes", m.recv_bytes);
  summary(w, "send_elements", m.send_elements);
  summary(w, "recv_elements", m.recv_elements);
  w.field("send_size_unknown", m.send_size_unknown).field("recv_size_unknown", m.recv_size_unknown);
  int_list(w, "send_peers", m.send_peers);
  int_list(w, "recv_peers", m.recv_peers);
  w.field("distinct_peers", m.distinct_peers());
  int_list(w, "tags", m.tags);
  w.field("any_source_recvs", m.any_source_recvs).field("any_source_unresolved", m.any_source_unresolved);
  w.field("proc_null_sends", m.proc_null_sends).field("proc_null_recvs", m.proc_null_recvs);
  w.field("nonblocking_sends", m.nonblocking_sends).field("nonblocking_recvs", m.nonblocking_recvs);
  w.field("nonblocking_send_share", share(m.nonblocking_sends, m.sends));
  w.field("nonblocking_recv_share", share(m.nonblocking_recvs, m.recvs));
  w.field("probes", m.probes).field("max_outstanding_recv_requests", m.max_outstanding_recv_requests);
  w.field("recv_request_id_reuse", m.recv_request_id_reuse).field("other_comm_calls", m.other_comm_p2p);
  log2_bins(w, "send_bytes_log2", m.send_bytes);
  log2_bins(w, "send_elements_log2", m.send_elements);
  w.end_object();

  w.key("collectives").begin_object();
  string_counts(w, "by_function", m.collectives);
  w.field("total", m.coll_elements.count());
  summary(w, "elements", m.coll_elements);
  summary(w, "bytes", m.coll_bytes);
  w.field("size_unknown", m.coll_size_unknown);
  w.end_object();

  w.key("rates").begin_object();
  rates(w, "p2p", m.p2p_rate, m.t_app_s());
  rates(w, "collective", m.coll_rate, m.t_app_s());
  w.end_object();
  queues(w, q);
  w.end_object();
}

void series(JsonWriter& w, std::string_view key, const TimeSeries& ts, int64_t t0) {
  w.key(key).begin_object();
  w.field("t0_s", ts.bins().empty() ? 0.0 : double(ts.origin_ns() - t0) * 1e-9);
  w.field("bin_s", double(ts.bin_ns()) * 1e-9);
  w.key("counts").begin_array();
  for (uint64_t c : ts.bins()) w.value(c);
  w.end_array();
  w.end_object();
}

void run_json(JsonWriter& w, const Analysis& a) {
  RankMetrics all;
  int64_t app_ns = 0, span_ns = 0;
  double mean_s_mpi = 0, mean_s_comm = 0, mean_s_admin = 0;
  for (const auto& m : a.ranks) {
    all.sends += m.sends;
    all.recvs += m.recvs;
    for (auto& [k, v] : m.send_functions) all.send_functions[k] += v;
    for (auto& [k, v] : m.recv_functions) all.recv_functions[k] += v;
    for (auto& [k, v] : m.collectives) all.collectives[k] += v;
    all.send_bytes.merge(m.send_bytes);
    all.recv_bytes.merge(m.recv_bytes);
    all.send_elements.merge(m.send_elements);
    all.recv_elements.merge(m.recv_elements);
    all.coll_elements.merge(m.coll_elements);
    all.coll_bytes.merge(m.coll_bytes);
    all.send_size_unknown += m.send_size_unknown;
    all.recv_size_unknown += m.recv_size_unknown;
    all.coll_size_unknown += m.coll_size_unknown;
    all.any_source_recvs += m.any_source_recvs;
    all.any_source_unresolved += m.any_source_unresolved;
    all.proc_null_sends += m.proc_null_sends;
    all.proc_null_recvs += m.proc_null_recvs;
    all.nonblocking_sends += m.nonblocking_sends;
    all.nonblocking_recvs += m.nonblocking_recvs;
    all.probes += m.probes;
    all.t_mpi_ns += m.t_mpi_ns;
    all.t_comm_ns += m.t_comm_ns;
    all.calls += m.calls;
    all.max_outstanding_recv_requests = std::max(all.max_outstanding_recv_requests, m.max_outstanding_recv_requests);
    if (m.any_call) app_ns += m.last_stop_ns - m.first_start_ns;
    if (m.any_comm) span_ns += m.last_comm_stop_ns - m.first_comm_start_ns;
    mean_s_mpi += m.s_mpi();
    mean_s_comm += m.s_comm();
    mean_s_admin += m.s_admin();
  }
  const double nr = a.ranks.empty() ? 1.0 : double(a.ranks.size());
  const double run_s = double(a.t1_ns - a.t0_ns) * 1e-9;

  w.key("run").begin_object();
  w.field("ranks", a.ranks.size()).field("calls", all.calls).field("duration_s", run_s);
  w.key("time").begin_object();
  w.field("t_app_s_sum", double(app_ns) * 1e-9).field("t_mpi_s_sum", double(all.t_mpi_ns) * 1e-9);
  w.field("t_comm_s_sum", double(all.t_comm_ns) * 1e-9).field("t_comm_span_s_sum", double(span_ns) * 1e-9);
  w.field("s_mpi", app_ns > 0 ? double(all.t_mpi_ns) / double(app_ns) : 0.0);
  w.field("s_comm", span_ns > 0 ? double(all.t_comm_ns) / double(span_ns) : 0.0);
  w.field("s_admin", all.t_mpi_ns > 0 ? 1.0 - double(all.t_comm_ns) / double(all.t_mpi_ns) : 0.0);
  w.field("mean_rank_s_mpi", mean_s_mpi / nr)
      .field("mean_rank_s_comm", mean_s_comm / nr)
      .field("mean_rank_s_admin", mean_s_admin / nr);
  w.end_object();

  uint64_t pairs = 0, count_bad = 0, bytes_bad = 0;
  w.key("p2p").begin_object();
  w.field("sends", all.sends).field("recvs", all.recvs);
  string_counts(w, "send_functions", all.send_functions);
  string_counts(w, "recv_functions", all.recv_functions);
  summary(w, "send_bytes", all.send_bytes);
  summary(w, "recv_bytes", all.recv_bytes);
  summary(w, "send_elements", all.send_elements);
  summary(w, "recv_elements", all.recv_elements);
  w.field("send_size_unknown", all.send_size_unknown).field("recv_size_unknown", all.recv_size_unknown);
  w.field("any_source_recvs", all.any_source_recvs).field("any_source_unresolved", all.any_source_unresolved);
  w.field("proc_null_sends", all.proc_null_sends).field("proc_null_recvs", all.proc_null_recvs);
  w.field("nonblocking_send_share", share(all.nonblocking_sends, all.sends));
  w.field("nonblocking_recv_share", share(all.nonblocking_recvs, all.recvs));
  w.field("probes", all.probes).field("max_outstanding_recv_requests", all.max_outstanding_recv_requests);
  w.key("pair_mismatches").begin_array();
  for (size_t s = 0; s < a.pairs.size(); ++s) {
    for (size_t d = 0; d < a.pairs[s].size(); ++d) {
      const PairTotals& p = a.pairs[s][d];
      if (p.sends) ++pairs;
      bool cbad = p.sends != p.recvs, bbad = p.send_bytes != p.recv_bytes;
      count_bad += cbad;
      bytes_bad += bbad;
      if ((cbad || bbad) && count_bad + bytes_bad <= 40) {
        w.begin_object()
            .field("src", s)
            .field("dst", d)
            .field("sends", p.sends)
            .field("recvs", p.recvs)
            .field("send_bytes", p.send_bytes)
            .field("recv_bytes", p.recv_bytes)
            .end_object();
      }
    }
  }
  w.end_array();
  // Sends to ranks outside the run have no receiver in the trace: the pairs cannot check out.
  w.field("pairs", pairs).field("sends_outside_run", a.invalid_peer);
  w.field("pair_count_check", count_bad == 0 && a.invalid_peer == 0);
  w.field("pair_bytes_check", bytes_bad == 0 && a.invalid_peer == 0);
  w.key("pair_matrix").begin_array();
  for (auto& row : a.pairs) {
    w.begin_array();
    for (auto& p : row) w.value(p.sends);
    w.end_array();
  }
  w.end_array();
  log2_bins(w, "send_bytes_log2", all.send_bytes);
  log2_bins(w, "send_elements_log2", all.send_elements);
  w.end_object();

  w.key("collectives").begin_object();
  string_counts(w, "by_function", all.collectives);
  w.field("total", all.coll_elements.count());
  summary(w, "elements", all.coll_elements);
  summary(w, "bytes", all.coll_bytes);
  w.field("size_unknown", all.coll_size_unknown);
  log2_bins(w, "elements_log2", all.coll_elements);
  w.end_object();

  w.key("rates").begin_object();
  rates(w, "p2p", a.run_p2p_rate, run_s);
  rates(w, "collective", a.run_coll_rate, run_s);
  w.end_object();
  w.key("series").begin_object();
  series(w, "p2p", a.p2p_series, a.t0_ns);
  series(w, "collective", a.coll_series, a.t0_ns);
  w.end_object();
  queues(w, a.run_queues);
  w.end_object();
}
}  // namespace

void write_json(const Analysis& a, std::ostream& os, int only_rank) {
  JsonWriter w;
  w.begin_object();
  w.field("format", "gpucomm-trace-report").field("version", 1);
  w.key("trace").begin_object();
  w.field("input", a.info.input).field("meta", a.info.meta_path).field("prefix", a.info.prefix);
  w.field("hostname", a.info.hostname).field("start_time", a.info.start_time);
  w.field("format_version", std::to_string(a.info.version[0]) + "." + std::to_string(a.info.version[1]) + "." +
                                std::to_string(a.info.version[2]));
  w.field("ranks", a.info.files.size()).field("bytes", a.info.total_bytes()).field("records", a.records);
  w.field("read_seconds", a.read_seconds);
  w.field("mb_per_s", a.read_seconds > 0 ? double(a.info.total_bytes()) / 1e6 / a.read_seconds : 0.0);
  w.key("files").begin_array();
  for (auto& f : a.info.files) {
    w.begin_object()
        .field("rank", f.rank)
        .field("path", f.path)
        .field("bytes", f.bytes)
        .field("format", f.binary ? "dumpi" : "dumpi2ascii")
        .end_object();
  }
  w.end_array();
  w.end_object();
  run_json(w, a);
  w.key("ranks").begin_array();
  for (size_t r = 0; r < a.ranks.size(); ++r)
    if (only_rank < 0 || static_cast<int>(r) == only_rank) rank_json(w, a.ranks[r], a.queues[r]);
  w.end_array();
  w.key("snapshots").begin_array();
  for (auto& s : a.snapshots) {
    w.begin_object()
        .field("rank", s.rank)
        .field("time_s", s.time_s)
        .field("umq", s.umq.size())
        .field("prq", s.prq.size())
        .end_object();
  }
  w.end_array();
  w.field("replay_skipped_p2p", a.unreplayed_p2p);
  w.key("warnings").begin_array();
  for (auto& m : a.warnings) w.value(m);
  w.end_array();
  w.end_object();
  os << w.str() << '\n';
}

}  // namespace gpucomm::trace
