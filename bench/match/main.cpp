// gpucomm-bench-match: message-matching rates of the GPU engines and the CPU list matcher
// against queue length, order and key multiplicity; warp-parallel queue throughput and
// latency; replay of queue snapshots. See docs/MATCHING.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gpu_bench.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/json.hpp"
#include "gpucomm/matching/checker.hpp"
#include "gpucomm/matching/engine.hpp"
#include "gpucomm/matching/list_matcher.hpp"
#include "gpucomm/matching/oracle.hpp"
#include "gpucomm/matching/snapshot.hpp"
#include "gpucomm/matching/workload.hpp"

namespace gm = gpucomm::matching;
namespace gb = gpucomm::bench;

namespace {

struct Options {
  bool quick = false;
  bool no_gpu = false;
  std::string json;
  std::string replay;
  std::vector<uint32_t> lengths;
  std::vector<double> multiplicities;
  std::vector<std::string> engines;  // cpu, mpi, no_unexpected, partitioned, hash
  int iters = 0;
  double budget_s = 0;
  uint32_t jobs_elems = 0;  // entries per launch; jobs per launch = this / length
  uint64_t seed = 12345;
  bool queue = true;
};

void usage() {
  std::printf(
      "usage: gpucomm-bench-match [--quick] [--json FILE] [--replay FILE] [--lengths 2,16,...]\n"
      "                           [--multiplicities 0,0.12,...] [--engines cpu,mpi,no_unexpected,partitioned,hash]\n"
      "                           [--iters N] [--budget SECONDS] [--jobs-elems N] [--seed N] [--no-queue] [--no-gpu]\n"
      "Matches per second against queue length (best, average and worst order) for every engine\n"
      "and the CPU list matcher; warp-parallel queue throughput and latency; snapshot replay.\n");
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    size_t b = s.find(',', a);
    if (b == std::string::npos) b = s.size();
    if (b > a) out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The CPU list matcher on one job: iterations until `iters` or the budget (at least 3).
double time_cpu(const gm::Batch& b, int iters, double budget_s, size_t* matches) {
  std::vector<double> t;
  double spent = 0;
  std::vector<gm::Match> out;
  // At least 3 iterations, unless one alone runs 10 times past the budget.
  for (int i = 0; i < std::max(iters, 3) && (i < 3 || spent < budget_s) && !(i >= 1 && spent > 10 * budget_s); ++i) {
    gm::ListMatcher lm;
    lm.load(b.umq, b.prq);
    out.clear();
    out.reserve(b.msgs.size() + b.recvs.size());
    const double t0 = now_s();
    lm.process(b.msgs, b.recvs, out);
    const double dt = now_s() - t0;
    t.push_back(dt);
    spent += dt;
  }
  *matches = out.size();
  return median_of(t);
}

struct Row {
  std::string engine, order, direction, note;
  uint32_t length = 0;
  double multiplicity = 0;
  size_t jobs = 0, matches = 0;
  double median_s = 0, rate = 0;
  std::vector<double> raw;
  bool verified = false, skipped = false;
};

// Ordered engines must equal the reference on every job (all jobs are copies of one batch
// whose reference outcome is `ref`); the hash engine must be legal.
bool verify(gm::Engine e, const gm::Batch& b, const gm::Outcome& ref, const gb::Timing& t, std::string* why) {
  for (size_t i = 0; i < t.outcome.size(); ++i) {
    if (t.status[i] & (gm::kStatusInfo - 1)) {
      *why = "job " + std::to_string(i) + ": " + gm::status_text(t.status[i]);
      return false;
    }
    const std::string d = e == gm::Engine::hash ? (i < 4 ? gm::check_legal_matching(b, t.outcome[i]) : std::string())
                                                : gm::describe_difference(ref, t.outcome[i]);
    if (!d.empty()) {
      *why = "job " + std::to_string(i) + ": " + d;
      return false;
    }
  }
  return true;
}

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o) {}

  std::vector<Row> rows;
  std::vector<gb::QueueTiming> queue_rows;
  int failures = 0;

  bool wants(const char* e) const { return std::find(o_.engines.begin(), o_.engines.end(), e) != o_.engines.end(); }

  // One workload on the CPU list matcher and each requested GPU engine.
  void measure(const std::string& label_order, const std::string& direction, uint32_t len, double mult,
               const gm::Batch& b, bool gpu) {
    Row base;
    base.order = label_order;
    base.direction = direction;
    base.length = len;
    base.multiplicity = mult;
    const gm::Outcome ref = gm::match_reference(b);
    if (wants("cpu")) {
      Row r = base;
      r.engine = "cpu_list";
      r.jobs = 1;
      r.median_s = time_cpu(b, o_.iters, o_.budget_s, &r.matches);
      r.rate = r.median_s > 0 ? r.matches / r.median_s : 0;
      r.verified = r.matches == ref.matches.size();
      if (!r.verified) ++failures;
      print(r);
      rows.push_back(r);
    }
    if (!gpu) return;
    const size_t njobs = std::max<size_t>(1, o_.jobs_elems / std::max<uint32_t>(len, 1));
    for (const char* name : {"mpi", "no_unexpected", "partitioned", "hash"}) {
      if (!wants(name)) continue;
      gm::Engine e;
      gm::engine_from_name(name, &e);
      Row r = base;
      r.engine = name;
      if (e == gm::Engine::no_unexpected && (!b.umq.empty() || ref.matches.size() != b.msgs.size()))
        r.note = "workload has unexpected messages";
      std::vector<gm::Batch> jobs;
      if (e == gm::Engine::partitioned) {
        bool any_source = false;
        for (const auto* q : {&b.prq, &b.recvs})
          for (const auto& x : *q) any_source = any_source || x.src == gm::kAnySource;
        if (any_source) {
          r.note = "ANY_SOURCE in workload";
        } else {
          for (auto& p : gm::partition_by_source(b)) {
            if (gm::max_targets_of(p.batch) > gm::kWarpMaxTargets) r.note = "a partition exceeds 2048 entries";
            jobs.push_back(std::move(p.batch));
          }
        }
        const size_t per = jobs.size();
        for (size_t k = 1; k < njobs && r.note.empty(); ++k)
          for (size_t i = 0; i < per; ++i) jobs.push_back(jobs[i]);
      } else {
        jobs.assign(njobs, b);
      }
      if (e == gm::Engine::hash) {
        for (const auto* q : {&b.prq, &b.recvs}) {
          for (const auto& x : *q)
            if (gm::has_wildcard(x)) r.note = "wildcards in workload";
        }
      }
      if (!r.note.empty()) {
        r.skipped = true;
        print(r);
        rows.push_back(r);
        continue;
      }
      try {
        const gb::Timing t = gb::time_engine(e, jobs, {}, o_.iters, o_.budget_s);
        r.jobs = e == gm::Engine::partitioned ? njobs : jobs.size();
        r.matches = 0;
        for (const auto& out : t.outcome) r.matches += out.matches.size();
        r.median_s = t.median;
        r.raw = t.seconds;
        r.rate = t.median > 0 ? r.matches / t.median : 0;
        std::string why;
        if (e == gm::Engine::partitioned) {
          // Per-partition outcomes of the first copy, merged, must equal the whole reference.
          const size_t per = jobs.size() / njobs;
          std::vector<gm::Outcome> first(t.outcome.begin(), t.outcome.begin() + static_cast<long>(per));
          why = gm::describe_difference(ref, gm::merge_partitions(b, first));
          for (size_t i = 0; i < t.status.size() && why.empty(); ++i)
            if (t.status[i] & (gm::kStatusInfo - 1)) why = gm::status_text(t.status[i]);
          r.verified = why.empty();
        } else {
          r.verified = verify(e, b, ref, t, &why);
        }
        if (!r.verified) {
          ++failures;
          r.note = "VERIFY FAILED: " + why;
        }
      } catch (const std::exception& ex) {
        ++failures;
        r.skipped = true;
        r.note = std::string("error: ") + ex.what();
      }
      print(r);
      rows.push_back(r);
    }
  }

  static void header() {
    std::printf("%-14s %-9s %-10s %7s %6s %6s %12s %14s  %s\n", "engine", "order", "direction", "length", "mult",
                "jobs", "median_us", "matches/s", "note");
  }
  static void print(const Row& r) {
    if (r.skipped) {
      std::printf("%-14s %-9s %-10s %7u %6.2f %6s %12s %14s  skipped: %s\n", r.engine.c_str(), r.order.c_str(),
                  r.direction.c_str(), r.length, r.multiplicity, "-", "-", "-", r.note.c_str());
    } else {
      std::printf("%-14s %-9s %-10s %7u %6.2f %6zu %12.2f %14.4g  %s\n", r.engine.c_str(), r.order.c_str(),
                  r.direction.c_str(), r.length, r.multiplicity, r.jobs, r.median_s * 1e6, r.rate,
                  r.verified ? r.note.c_str() : ("NOT VERIFIED " + r.note).c_str());
    }
    std::fflush(stdout);
  }

 private:
  const Options& o_;
};

std::string iso_date() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void write_rows(gpucomm::JsonWriter& j, const char* key, const std::vector<Row>& rows) {
  j.begin_array(key);
  for (const auto& r : rows) {
    j.begin_object()
        .field("engine", r.engine)
        .field("order", r.order)
        .field("direction", r.direction)
        .field("length", static_cast<long long>(r.length))
        .field("multiplicity", r.multiplicity)
        .field("jobs", static_cast<long long>(r.jobs))
        .field("matches", static_cast<long long>(r.matches))
        .field("median_s", r.median_s)
        .field("matches_per_s", r.rate)
        .field("verified", r.verified)
        .field("skipped", r.skipped)
        .field("note", r.note);
    j.begin_array("seconds");
    for (double s : r.raw) j.value(s);
    j.end_array().end_object();
  }
  j.end_array();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string cmdline;
  for (int i = 0; i < argc; ++i) {
    if (i) cmdline += ' ';
    cmdline += argv[i];
  }
  auto need = [&](int& i) -> std::string {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "gpucomm-bench-match: %s needs a value\n", argv[i]);
      std::exit(2);
    }
    return argv[++i];
  };
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--quick") {
        o.quick = true;
      } else if (a == "--json") {
        o.json = need(i);
      } else if (a == "--replay") {
        o.replay = need(i);
      } else if (a == "--lengths") {
        for (auto& s : split(need(i))) o.lengths.push_back(static_cast<uint32_t>(std::stoul(s)));
      } else if (a == "--multiplicities") {
        for (auto& s : split(need(i))) o.multiplicities.push_back(std::stod(s));
      } else if (a == "--engines") {
        o.engines = split(need(i));
      } else if (a == "--iters") {
        o.iters = std::stoi(need(i));
      } else if (a == "--budget") {
        o.budget_s = std::stod(need(i));
      } else if (a == "--jobs-elems") {
        o.jobs_elems = static_cast<uint32_t>(std::stoul(need(i)));
      } else if (a == "--seed") {
        o.seed = std::stoull(need(i));
      } else if (a == "--no-queue") {
        o.queue = false;
      } else if (a == "--no-gpu") {
        o.no_gpu = true;
      } else if (a == "-h" || a == "--help") {
        usage();
        return 0;
      } else {
        std::fprintf(stderr, "gpucomm-bench-match: unknown argument '%s'\n", a.c_str());
        usage();
        return 2;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucomm-bench-match: bad argument value: %s\n", e.what());
    return 2;
  }
  for (const auto& e : o.engines) {
    gm::Engine x;
    if (e != "cpu" && !gm::engine_from_name(e, &x)) {
      std::fprintf(stderr, "gpucomm-bench-match: unknown engine '%s'\n", e.c_str());
      return 2;
    }
  }
  if (o.engines.empty()) o.engines = {"cpu", "mpi", "no_unexpected", "partitioned", "hash"};
  if (o.lengths.empty()) {
    o.lengths = o.quick
                    ? std::vector<uint32_t>{2, 64, 256, 1024, 4096, 32768}
                    : std::vector<uint32_t>{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
  }
  if (o.multiplicities.empty())
    o.multiplicities = o.quick ? std::vector<double>{0.0, 0.12} : std::vector<double>{0.0, 0.06, 0.12, 0.5};
  if (o.iters <= 0) o.iters = o.quick ? 5 : 20;
  if (o.budget_s <= 0) o.budget_s = o.quick ? 0.05 : 0.5;
  if (o.jobs_elems == 0) o.jobs_elems = 1u << 18;

  std::string gpu_why = o.no_gpu ? "disabled with --no-gpu" : gb::gpu_unavailable_reason();
  const bool gpu = gpu_why.empty();
  const std::string device = gpu ? gb::device_name() : "";
  if (gpu) {
    std::printf("device: %s\n", device.c_str());
  } else {
    std::printf("GPU engines and queue benchmarks SKIPPED: %s. Only the CPU list matcher runs.\n", gpu_why.c_str());
  }

  Bench bench(o);
  std::mt19937_64 rng(o.seed);
  Bench::header();
  const double t_start = now_s();
  for (uint32_t len : o.lengths) {
    for (double mult : o.multiplicities) {
      for (auto order : {gm::Order::best, gm::Order::average, gm::Order::worst}) {
        const gm::Batch b = gm::paired_batch(len, order, mult, false, rng);
        bench.measure(gm::order_name(order), "posted", len, mult, b, gpu);
        if (!o.quick) {
          const gm::Batch u = gm::paired_batch(len, order, mult, true, rng);
          bench.measure(gm::order_name(order), "unexpected", len, mult, u, gpu);
        }
      }
    }
  }

  std::vector<Row> replay_rows;
  if (!o.replay.empty()) {
    std::vector<gm::Snapshot> snaps;
    try {
      snaps = gm::read_snapshots(o.replay);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpucomm-bench-match: %s\n", e.what());
      return 1;
    }
    std::printf("\nreplay of %zu snapshots from %s\n", snaps.size(), o.replay.c_str());
    Bench::header();
    Bench rb(o);
    for (const auto& s : snaps) {
      const std::string who = s.app + "#" + std::to_string(s.rank);
      if (!s.umq.empty()) rb.measure(who, "drain_umq", static_cast<uint32_t>(s.umq.size()), 0, gm::drain_umq(s), gpu);
      if (!s.prq.empty()) rb.measure(who, "drain_prq", static_cast<uint32_t>(s.prq.size()), 0, gm::drain_prq(s), gpu);
    }
    replay_rows = rb.rows;
    bench.failures += rb.failures;
  }

  if (gpu && o.queue) {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const uint32_t full = static_cast<uint32_t>(std::max(sms, 1)) * 32;
    std::vector<uint32_t> warps =
        o.quick ? std::vector<uint32_t>{32, 1024, full} : std::vector<uint32_t>{1, 32, 256, 1024, 2048, full};
    std::vector<uint32_t> queues =
        o.quick ? std::vector<uint32_t>{1, 32, 128} : std::vector<uint32_t>{1, 8, 32, 128, 512};
    std::printf("\n%-8s %-7s %16s %16s %14s %14s  %s\n", "warps", "queues", "enqueue elem/s", "dequeue elem/s",
                "enq lat us", "deq lat us", "verified");
    for (uint32_t w : warps) {
      for (uint32_t q : queues) {
        if (q > w) continue;
        try {
          auto r = gb::time_queue(w, q, o.quick ? 16 : 64, o.quick ? 3 : 10);
          std::printf("%-8u %-7u %16.4g %16.4g %14.3f %14.3f  %s\n", w, q, r.enqueue_elems_per_s, r.dequeue_elems_per_s,
                      r.enqueue_latency_us, r.dequeue_latency_us, r.verified ? "yes" : "NO");
          if (!r.verified) ++bench.failures;
          bench.queue_rows.push_back(r);
        } catch (const std::exception& e) {
          std::printf("%-8u %-7u error: %s\n", w, q, e.what());
          ++bench.failures;
        }
      }
    }
  }
  std::printf("\n%zu measurements in %.1f s%s\n", bench.rows.size() + replay_rows.size() + bench.queue_rows.size(),
              now_s() - t_start, bench.failures ? ", WITH FAILURES" : "");

  if (!o.json.empty()) {
    gpucomm::JsonWriter j;
    j.begin_object()
        .field("tool", "gpucomm-bench-match")
        .field("date", iso_date())
        .field("git_commit", GPUCOMM_GIT_COMMIT)
        .field("command_line", cmdline)
        .field("quick", o.quick)
        .field("seed", static_cast<long long>(o.seed));
    if (gpu) {
      j.field("device", device);
    } else {
      j.null_field("device");
    }
    j.field("gpu_skipped", !gpu).field("gpu_skipped_reason", gpu_why);
    write_rows(j, "matching", bench.rows);
    write_rows(j, "replay", replay_rows);
    j.begin_array("queue");
    for (const auto& r : bench.queue_rows) {
      j.begin_object()
          .field("warps", static_cast<long long>(r.warps))
          .field("queues", static_cast<long long>(r.queues))
          .field("ops_per_warp", static_cast<long long>(r.ops_per_warp))
          .field("enqueue_elems_per_s", r.enqueue_elems_per_s)
          .field("dequeue_elems_per_s", r.dequeue_elems_per_s)
          .field("enqueue_latency_us", r.enqueue_latency_us)
          .field("dequeue_latency_us", r.dequeue_latency_us)
          .field("verified", r.verified)
          .end_object();
    }
    j.end_array().field("failures", static_cast<long long>(bench.failures)).end_object();
    std::ofstream f(o.json);
    f << j.str() << "\n";
    if (!f) {
      std::fprintf(stderr, "gpucomm-bench-match: cannot write %s\n", o.json.c_str());
      return 1;
    }
    std::printf("wrote %s\n", o.json.c_str());
  }
  return bench.failures ? 1 : 0;
}
