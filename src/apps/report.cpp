// The application tool's results: gathering, medians, JSON.
#include "report.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/json.hpp"

#ifndef GPUCOMM_GIT_COMMIT
#define GPUCOMM_GIT_COMMIT "unknown"
#endif

namespace gpucomm::apps {
namespace {

std::string iso_now() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

RunWindow window_now() {
  RunWindow w;
  w.start_unix_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  w.end_unix_ns = w.start_unix_ns;
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0) {
    w.cpu_s = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
              static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  }
  return w;
}

RunRecord gather_record(Runtime& rt, const RunResult& mine, double reference, const RunWindow& window) {
  std::ostringstream out;
  out.precision(17);
  out << mine.wrong << ' ' << mine.wrong_cells << ' ' << window.start_unix_ns << ' ' << window.end_unix_ns << ' '
      << window.cpu_s;
  for (double t : mine.iter_us) out << ' ' << t;
  const auto all = rt.bootstrap().allgather(out.str());
  RunRecord rec;
  rec.mine = mine;
  rec.reference = reference;
  rec.step_us.assign(mine.iter_us.size(), 0.0);
  for (const auto& part : all) {
    std::istringstream in(part);
    int wrong = 0;
    uint64_t wrong_cells = 0;
    RunWindow w;
    in >> wrong >> wrong_cells >> w.start_unix_ns >> w.end_unix_ns >> w.cpu_s;
    rec.wrong += wrong;
    rec.wrong_cells += wrong_cells;
    const bool first = &part == all.data();
    rec.window.start_unix_ns = first ? w.start_unix_ns : std::min(rec.window.start_unix_ns, w.start_unix_ns);
    rec.window.end_unix_ns = std::max(rec.window.end_unix_ns, w.end_unix_ns);
    rec.window.cpu_s += w.cpu_s;
    for (double& slowest : rec.step_us) {
      double t = 0;
      if (!(in >> t)) raise(Errc::protocol, "gpucomm-apps", "a PE reported fewer step times than this one");
      slowest = std::max(slowest, t);
    }
  }
  rec.median_us = median(rec.step_us);
  rec.min_us = rec.step_us.empty() ? 0 : *std::min_element(rec.step_us.begin(), rec.step_us.end());
  return rec;
}

std::string report_json(const ReportHeader& h, const std::vector<RunRecord>& runs) {
  JsonWriter w;
  w.begin_object().field("app", h.app).field("date", iso_now()).field("commit", GPUCOMM_GIT_COMMIT);
  w.field("command", h.command).field("pe_kind", h.pe_kind).field("pes", h.pes);
  w.field("warmup", h.warmup).field("iters", h.iters);
  if (!h.timing.empty()) {
    w.field("timing", h.timing);
  } else {
    w.field("timing", h.pe_kind == "gpu" ? "CUDA events between consecutive steps on the runtime's stream; a step's "
                                           "time is the slowest PE's"
                                         : "wall clock of the local reduce and the exchange after a barrier; a step's "
                                           "time is the slowest PE's");
  }
  w.begin_array("results");
  for (const auto& r : runs) {
    w.begin_object().field("model", model_name(r.mine.model)).field("size", r.mine.size);
    w.field("median_us", r.median_us).field("min_us", r.min_us);
    w.field("value", r.mine.value).field("reference", r.reference);
    w.field("verified", r.wrong == 0 && r.wrong_cells == 0).field("wrong_steps", r.wrong);
    w.field("wrong_cells", r.wrong_cells);
    w.begin_object("window")
        .field("start_unix_ns", r.window.start_unix_ns)
        .field("end_unix_ns", r.window.end_unix_ns)
        .field("cpu_core_s", r.window.cpu_s)
        .end_object();
    w.begin_object("metrics");
    for (const auto& [name, v] : r.mine.metrics) w.field(name, v);
    w.end_object();
    // RandomAccess: giga-updates per second at the median step time (every PE's updates of a step).
    if (r.mine.updates && r.median_us > 0) w.field("gups", static_cast<double>(r.mine.updates) / (r.median_us * 1e3));
    w.begin_array("iter_us");
    for (double t : r.step_us) w.value(t);
    w.end_array().end_object();
  }
  w.end_array().end_object();
  return w.str() + "\n";
}

}  // namespace gpucomm::apps
