// gpucomm-bench-coll: the collectives' host API with nccl-tests conventions (size, count, type,
// redop, root, then out-of-place and in-place time, algbw, busbw, CTAs, wrong), on host-memory PEs
// (calls run on the calling thread) or GPU PEs (stream-ordered: eager, or captured into a CUDA graph
// and replayed). Run under a launcher: gpucomm run -n N -- gpucomm-bench-coll [options]
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cases.hpp"
#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/gpucomm.hpp"

#ifndef GPUCOMM_GIT_COMMIT
#define GPUCOMM_GIT_COMMIT "unknown"
#endif

using namespace gpucomm;
using namespace gpucomm::bench;

namespace {

constexpr const char* kTool = "gpucomm-bench-coll";

void usage(FILE* f) {
  std::fprintf(f,
               "usage: gpucomm-bench-coll [options]   (run it under `gpucomm run -n N`)\n"
               "  --ops LIST        operations (default allreduce,allgather,reduce_scatter,alltoall,broadcast,reduce;\n"
               "                    also barrier)\n"
               "  -d, --type T      data type: f8e4m3 f8e5m2 f16 bf16 f32 f64 i32 i64 u32 u64 (default f32)\n"
               "  -o, --redop OP    sum prod min max band bor bxor (default sum)\n"
               "  -r, --root R      root of broadcast and reduce (default 0)\n"
               "  -b, --minbytes B  smallest size (default 8; K, M, G suffixes)\n"
               "  -e, --maxbytes B  largest size (default 1M)\n"
               "  -f, --stepfactor F  size multiplier (default 4)\n"
               "  -n, --iters N     calls per sample (default 20)\n"
               "  --samples N       samples after one warm-up sample; the median is reported (default 5)\n"
               "  --mode M          eager, graph or both (GPU PEs; default both; host PEs run eager only)\n"
               "  --algo A          algorithm (auto, oneshot, oneshot_ll, twoshot, ring, multiring, hierarchical)\n"
               "  --max-ctas N      bound on the CTAs (channels) of a call (default: GPUCOMM_COLL_MAX_CTAS)\n"
               "  --no-check        skip the correctness pass (the wrong column shows -)\n"
               "  --in-kernel LIST  GPU PEs: also time the in-kernel barrier and f32 sum allreduce at these sizes\n"
               "                    (bytes, comma-separated), one block calling back to back inside a kernel\n"
               "  --kernel-iters N  in-kernel calls per timed kernel (default 1000)\n"
               "  --kernel-threads T  threads of the in-kernel block (default 256)\n"
               "  --barrier-algo A  algorithm of the in-kernel barrier (auto, oneshot, oneshot_ll, dissemination);\n"
               "                    the in-kernel allreduce uses --algo\n"
               "  --force-protocol  one PE: run the N-PE protocol with the PE as its own peer (barrier, oneshot,\n"
               "                    oneshot_ll; GPUCOMM_COLL_FORCE_PROTOCOL=1) instead of the one-member short-cut\n"
               "  --json FILE       write the results as JSON (rank 0)\n"
               "  --quick           fewer sizes, iterations and samples\n"
               "Time: per call, the median over samples of the slowest PE's mean over `iters` back-to-back\n"
               "calls (host PEs: wall clock; GPU PEs: CUDA events on the stream). algbw = size / time,\n"
               "busbw = algbw * (allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall (n-1)/n; others 1).\n");
}

long long parse_num(const std::string& text, const std::string& what) {
  long long v = 0;
  const char* end = text.data() + text.size();
  auto [stop, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || v < 0) raise_arg(kTool, what, "'" + text + "' is not a non-negative number");
  std::string suffix(stop, end);
  long long mul = suffix.empty()  ? 1
                  : suffix == "K" ? 1LL << 10
                  : suffix == "M" ? 1LL << 20
                  : suffix == "G" ? 1LL << 30
                                  : 0;
  if (!mul) raise_arg(kTool, what, "'" + text + "': unknown suffix (K, M or G)");
  return v * mul;
}

std::vector<coll::CollOp> parse_ops(const std::string& list) {
  std::vector<coll::CollOp> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    coll::CollOp op{};
    if (!coll::parse_op(item.c_str(), &op) || op == coll::CollOp::alltoallv)
      raise_arg(kTool, "--ops", "'" + item + "' is not a benchmarked operation");
    out.push_back(op);
  }
  if (out.empty()) raise_arg(kTool, "--ops", "names no operation");
  return out;
}

std::string iso_now() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

struct Config {
  std::vector<coll::CollOp> ops = {coll::CollOp::allreduce, coll::CollOp::allgather, coll::CollOp::reduce_scatter,
                                   coll::CollOp::alltoall,  coll::CollOp::broadcast, coll::CollOp::reduce};
  coll::DataType dt = coll::DataType::f32;
  coll::RedOp redop = coll::RedOp::sum;
  int root = 0;
  size_t minbytes = 8, maxbytes = 1 << 20;
  size_t factor = 4;
  int iters = 20, samples = 5;
  std::string mode = "both";
  coll::CollOptions opts;
  bool check = true;
  std::string json;
  std::vector<size_t> kernel_sizes;  // --in-kernel
  int kernel_iters = 1000;
  unsigned kernel_threads = 256;
  coll::Algorithm barrier_algo = coll::Algorithm::automatic;  // --barrier-algo
  bool force_protocol = false;
};

Config parse_args(int argc, char** argv, bool* help) {
  Config cfg;
  bool quick = false, sizes_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) raise_arg(kTool, a, "needs a value");
      return argv[++i];
    };
    if (a == "--ops") {
      cfg.ops = parse_ops(next());
    } else if (a == "-d" || a == "--type") {
      std::string v = next();
      if (!coll::parse_type(v.c_str(), &cfg.dt)) raise_arg(kTool, a, "unknown type '" + v + "'");
    } else if (a == "-o" || a == "--redop") {
      std::string v = next();
      if (!coll::parse_redop(v.c_str(), &cfg.redop)) raise_arg(kTool, a, "unknown reduction '" + v + "'");
    } else if (a == "-r" || a == "--root") {
      cfg.root = static_cast<int>(parse_num(next(), a));
    } else if (a == "-b" || a == "--minbytes") {
      cfg.minbytes = static_cast<size_t>(parse_num(next(), a));
      sizes_given = true;
    } else if (a == "-e" || a == "--maxbytes") {
      cfg.maxbytes = static_cast<size_t>(parse_num(next(), a));
      sizes_given = true;
    } else if (a == "-f" || a == "--stepfactor") {
      cfg.factor = static_cast<size_t>(parse_num(next(), a));
      sizes_given = true;
    } else if (a == "-n" || a == "--iters") {
      cfg.iters = static_cast<int>(parse_num(next(), a));
    } else if (a == "--samples") {
      cfg.samples = static_cast<int>(parse_num(next(), a));
    } else if (a == "--mode") {
      cfg.mode = next();
      if (cfg.mode != "eager" && cfg.mode != "graph" && cfg.mode != "both")
        raise_arg(kTool, a, "'" + cfg.mode + "' is not eager, graph or both");
    } else if (a == "--algo") {
      std::string v = next();
      if (!coll::parse_algorithm(v.c_str(), &cfg.opts.algorithm)) raise_arg(kTool, a, "unknown algorithm '" + v + "'");
    } else if (a == "--max-ctas") {
      cfg.opts.max_ctas = static_cast<int>(parse_num(next(), a));
    } else if (a == "--no-check") {
      cfg.check = false;
    } else if (a == "--json") {
      cfg.json = next();
    } else if (a == "--in-kernel") {
      std::stringstream ss(next());
      std::string item;
      while (std::getline(ss, item, ',')) cfg.kernel_sizes.push_back(static_cast<size_t>(parse_num(item, a)));
    } else if (a == "--kernel-iters") {
      cfg.kernel_iters = static_cast<int>(parse_num(next(), a));
    } else if (a == "--kernel-threads") {
      cfg.kernel_threads = static_cast<unsigned>(parse_num(next(), a));
    } else if (a == "--barrier-algo") {
      const std::string v = next();
      if (!coll::parse_algorithm(v.c_str(), &cfg.barrier_algo)) raise_arg(kTool, a, "unknown algorithm '" + v + "'");
    } else if (a == "--force-protocol") {
      cfg.force_protocol = true;
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "-h" || a == "--help") {
      *help = true;
      return cfg;
    } else {
      raise_arg(kTool, a, "unknown option (see --help)");
    }
  }
  if (quick) {
    cfg.iters = std::min(cfg.iters, 10);
    cfg.samples = std::min(cfg.samples, 3);
    if (!sizes_given) {
      cfg.maxbytes = 64 << 10;
      cfg.factor = 8;
    }
  }
  if (quick) cfg.kernel_iters = std::min(cfg.kernel_iters, 200);
  if (cfg.iters < 1) raise_arg(kTool, "--iters", "must be at least 1");
  if (cfg.kernel_iters < 1) raise_arg(kTool, "--kernel-iters", "must be at least 1");
  if (cfg.kernel_threads < 32 || cfg.kernel_threads > 1024 || cfg.kernel_threads % 32)
    raise_arg(kTool, "--kernel-threads", "must be a multiple of 32 from 32 to 1024");
  if (cfg.samples < 1) raise_arg(kTool, "--samples", "must be at least 1");
  if (cfg.factor < 2) raise_arg(kTool, "--stepfactor", "must be at least 2");
  if (cfg.minbytes > cfg.maxbytes) raise_arg(kTool, "--minbytes", "is larger than --maxbytes");
  return cfg;
}

// One placement's measurement, combined over the PEs.
struct Measured {
  bool ran = false;
  double time_us = 0, algbw = 0, busbw = 0;
  uint32_t ctas = 0;
  std::string algorithm;
  long long wrong = -1;  // -1: not checked
};

// Per-sample maximum over the PEs, then the median; wrong summed over the PEs.
void combine(Runtime& rt, const std::vector<double>& samples, long long wrong, Measured* m) {
  std::ostringstream mine;
  mine << wrong;
  for (double s : samples) mine << ' ' << s;
  std::vector<double> worst(samples.size(), 0.0);
  long long total_wrong = 0;
  for (const auto& part : rt.bootstrap().allgather(mine.str())) {
    std::istringstream in(part);
    long long w = 0;
    in >> w;
    total_wrong = (w < 0 || total_wrong < 0) ? -1 : total_wrong + w;
    for (double& x : worst) {
      double v = 0;
      in >> v;
      x = std::max(x, v);
    }
  }
  m->time_us = median(worst);
  m->wrong = total_wrong;
}

// Whether a call runs the one-member short-cut (GPU PEs, a team of one, the protocol not forced).
bool runs_alone(const Config& cfg, bool gpu, int n, coll::CollOp op, coll::Algorithm a) {
  if (!gpu || n != 1) return false;
  return !(cfg.force_protocol && coll::force_applies(op, a));
}

Measured measure(Runtime& rt, coll::Collectives& coll, Harness& h, const Config& cfg, const Case& c, void* send_alloc,
                 void* recv_alloc, bool graph) {
  Measured m;
  const Team& team = rt.world();
  const CaseBuffers b = place(c, send_alloc, recv_alloc);
  const coll::Choice choice = coll.plan(c.op, c.dt, plan_bytes(c), team, cfg.opts);
  // A one-member team runs no protocol on GPU PEs (a copy kernel, or nothing in place).
  const bool alone = runs_alone(cfg, h.gpu(), team.size(), c.op, choice.algorithm);
  m.ctas = alone ? 0 : choice.channels;
  m.algorithm = alone ? "one-member" : coll::algorithm_name(choice.algorithm);
  const CollCall call = make_call(coll, team, c, b, cfg.opts);
  long long wrong = -1;
  if (cfg.check) {
    auto input = fill_input(c);
    if (!input.empty())
      h.upload(c.in_place ? recv_alloc : send_alloc, input.data(), c.in_place ? input.size() : send_bytes(c));
    rt.barrier_all();
    h.run_once(call);
    std::vector<uint8_t> out(recv_bytes(c));
    if (!out.empty()) h.download(out.data(), b.recv, out.size());
    wrong = static_cast<long long>(count_wrong(c, out));
  } else {
    h.run_once(call);  // prepares the team before a capture
  }
  combine(rt, h.samples_us(call, cfg.iters, cfg.samples, graph), wrong, &m);
  const double bytes = static_cast<double>(case_bytes(c));
  m.algbw = m.time_us > 0 ? bytes / m.time_us / 1e3 : 0;  // GB/s
  m.busbw = m.algbw * bus_factor(c);
  m.ran = true;
  return m;
}

void print_cols(const Measured& m) {
  if (!m.ran) {
    std::printf("  %10s %7s %7s %5s %6s", "-", "-", "-", "-", "-");
    return;
  }
  char wrong[24] = "-";
  if (m.wrong >= 0) std::snprintf(wrong, sizeof wrong, "%lld", m.wrong);
  std::printf("  %10.2f %7.2f %7.2f %5u %6s", m.time_us, m.algbw, m.busbw, m.ctas, wrong);
}

std::string json_result(const Case& c, const char* mode, const char* placement, const Measured& m) {
  std::ostringstream js;
  js << "{\"op\": \"" << coll::op_name(c.op) << "\", \"type\": \"" << coll::type_name(c.dt) << "\", \"redop\": \""
     << (coll::reduces(c.op) ? coll::redop_name(c.redop) : "none")
     << "\", \"root\": " << (coll::rooted(c.op) ? c.root : -1) << ", \"size\": " << case_bytes(c)
     << ", \"count\": " << case_bytes(c) / coll::type_size(c.dt) << ", \"mode\": \"" << mode << "\", \"placement\": \""
     << placement << "\", \"algorithm\": \"" << m.algorithm << "\", \"ctas\": " << m.ctas
     << ", \"time_us\": " << m.time_us << ", \"algbw_gbps\": " << m.algbw << ", \"busbw_gbps\": " << m.busbw
     << ", \"wrong\": " << m.wrong << "}";
  return js.str();
}

int run(int argc, char** argv) {
  bool help = false;
  Config cfg = parse_args(argc, argv, &help);
  if (help) {
    usage(stdout);
    return 0;
  }
  std::string cmdline;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);

  // Read when the team's workspace is made (coll.prepare below).
  if (cfg.force_protocol) setenv("GPUCOMM_COLL_FORCE_PROTOCOL", "1", 1);
  Runtime rt;
  const bool gpu = rt.pe_kind() == PeKind::gpu;
  const int n = rt.size(), me = rt.rank();
  if (cfg.root >= n) raise_arg(kTool, "--root", "must be below the number of PEs (" + std::to_string(n) + ")");
  std::unique_ptr<Harness> h = gpu ? make_gpu_harness(rt) : make_host_harness(rt);
  coll::Collectives coll(rt);
  coll.prepare(rt.world());

  std::vector<std::pair<const char*, bool>> modes;  // name, graph
  if (cfg.mode != "graph" || !gpu) modes.push_back({"eager", false});
  if (cfg.mode != "eager" && gpu) modes.push_back({"graph", true});
  if (me == 0) {
    std::printf("# gpucomm-bench-coll: %d %s PEs, type %s, redop %s, root %d, %d calls x %d samples (median)\n", n,
                gpu ? "GPU" : "host-memory", coll::type_name(cfg.dt), coll::redop_name(cfg.redop), cfg.root, cfg.iters,
                cfg.samples);
    if (!gpu && cfg.mode == "graph")
      std::printf("# graph mode needs GPU PEs: host-memory PEs run the calls eagerly on their thread\n");
    std::printf("# modes: %s\n",
                gpu ? "eager = back-to-back stream-ordered calls; graph = one CUDA graph of them replayed"
                    : "eager = synchronous calls on the calling thread");
    std::printf("%-15s %-6s %11s %11s %-6s %-5s %-4s  %10s %7s %7s %5s %6s  %10s %7s %7s %5s %6s  %s\n", "# op", "mode",
                "size", "count", "type", "redop", "root", "time(us)", "algbw", "busbw", "ctas", "wrong", "time(us)",
                "algbw", "busbw", "ctas", "wrong", "algorithm");
    std::printf("%-15s %-6s %11s %11s %-6s %-5s %-4s  %-40s  %-40s\n", "#", "", "(B)", "(elems)", "", "", "",
                "out-of-place (GB/s)", "in-place (GB/s)");
    std::fflush(stdout);
  }
  // Buffers of the largest case (blocked operations round down; add a block of slack).
  const size_t alloc_bytes = cfg.maxbytes + static_cast<size_t>(n) * 64 + 64;
  void* send_alloc = h->alloc(alloc_bytes);
  void* recv_alloc = h->alloc(alloc_bytes);
  std::vector<std::string> results;
  Measured first_eager_allreduce;
  size_t first_allreduce_bytes = 0;
  Measured first_graph_allreduce;
  for (coll::CollOp op : cfg.ops) {
    for (size_t bytes = cfg.minbytes;; bytes *= cfg.factor) {
      for (auto [mode, graph] : modes) {
        Measured res[2];
        Case cs[2];
        for (int p = 0; p < 2; ++p) {
          Case c = make_case(op, cfg.dt, cfg.redop, bytes, p == 1, n, me);
          c.root = cfg.root;
          cs[p] = c;
          if (c.count == 0 && op != coll::CollOp::barrier) continue;  // smaller than one element per block
          if (op == coll::CollOp::barrier && p == 1) continue;
          res[p] = measure(rt, coll, *h, cfg, c, send_alloc, recv_alloc, graph);
          results.push_back(json_result(c, mode, p ? "in" : "out", res[p]));
        }
        if (op == coll::CollOp::allreduce && res[0].ran && !first_allreduce_bytes && !graph) {
          first_eager_allreduce = res[0];
          first_allreduce_bytes = case_bytes(cs[0]);
        }
        if (op == coll::CollOp::allreduce && res[0].ran && graph && !first_graph_allreduce.ran)
          first_graph_allreduce = res[0];
        if (me == 0 && (res[0].ran || res[1].ran)) {
          const Case& c = cs[0];
          std::printf("%-15s %-6s %11zu %11zu %-6s %-5s %4d", coll::op_name(op), mode, case_bytes(c),
                      case_bytes(c) / coll::type_size(c.dt), coll::type_name(c.dt),
                      coll::reduces(op) ? coll::redop_name(c.redop) : "none", coll::rooted(op) ? c.root : -1);
          print_cols(res[0]);
          print_cols(res[1]);
          std::printf("  %s\n", (res[0].ran ? res[0] : res[1]).algorithm.c_str());
          std::fflush(stdout);
        }
      }
      if (op == coll::CollOp::barrier || bytes >= cfg.maxbytes || bytes * cfg.factor > cfg.maxbytes) break;
    }
  }
  // In-kernel calls (GPU PEs): the barrier, then the allreduce at each size.
  if (gpu && !cfg.kernel_sizes.empty()) {
    if (me == 0) {
      std::printf("# in-kernel: one block of %u threads, %d back-to-back calls per kernel, time per call\n",
                  cfg.kernel_threads, cfg.kernel_iters);
      std::printf("%-15s %-6s %11s  %10s %6s  %s\n", "# op", "mode", "size", "time(us)", "wrong", "algorithm");
    }
    std::vector<size_t> sizes = {0};
    sizes.insert(sizes.end(), cfg.kernel_sizes.begin(), cfg.kernel_sizes.end());
    for (size_t bytes : sizes) {
      const size_t b = bytes / sizeof(float) * sizeof(float);
      if (bytes && !b) continue;
      const coll::CollOp op = b ? coll::CollOp::allreduce : coll::CollOp::barrier;
      Case c = make_case(op, coll::DataType::f32, coll::RedOp::sum, b, false, n, me);
      const coll::Algorithm asked = b ? cfg.opts.algorithm : cfg.barrier_algo;
      coll::CollOptions o;
      o.algorithm = asked;
      const coll::Algorithm ran = coll.plan(op, c.dt, b, rt.world(), o).algorithm;
      // "kernel": each call on its own; "session": the calls in one coll::device::Session.
      for (const bool session : {false, true}) {
        long long wrong = -1;
        Measured m;
        combine(
            rt,
            h->kernel_samples_us(coll, b, asked, cfg.kernel_iters, cfg.samples, cfg.kernel_threads, session, &wrong),
            wrong, &m);
        m.ran = true;
        m.ctas = 1;
        m.algorithm = runs_alone(cfg, gpu, n, op, ran) ? "one-member" : coll::algorithm_name(ran);
        m.algbw = m.time_us > 0 ? static_cast<double>(b) / m.time_us / 1e3 : 0;
        m.busbw = m.algbw * bus_factor(c);
        const char* mode = session ? "session" : "kernel";
        results.push_back(json_result(c, mode, "out", m));
        if (me == 0) {
          std::printf("%-15s %-7s %10zu  %10.3f %6lld  %s\n", coll::op_name(op), mode, b, m.time_us, m.wrong,
                      m.algorithm.c_str());
          std::fflush(stdout);
        }
      }
    }
  }
  // The targets of the stream-ordered path (GPU PEs): enqueue cost beside the launch floor.
  double enqueue = 0, floor = 0;
  if (gpu && first_allreduce_bytes) {
    Case c = make_case(coll::CollOp::allreduce, cfg.dt, cfg.redop, first_allreduce_bytes, false, n, me);
    const CollCall call = make_call(coll, rt.world(), c, place(c, send_alloc, recv_alloc), cfg.opts);
    enqueue = h->enqueue_us(call, 64, cfg.samples);
    floor = h->launch_floor_us(64, cfg.samples);
  }
  if (me == 0) {
    if (gpu && first_allreduce_bytes) {
      std::printf(
          "# host enqueue per stream-ordered allreduce (%zu B, eager, %d PEs): %.2f us; empty-kernel launch "
          "floor, same stream, same run: %.2f us; target <= floor + 1 us: %s\n",
          first_allreduce_bytes, n, enqueue, floor, enqueue <= floor + 1.0 ? "met" : "NOT met");
      if (first_graph_allreduce.ran) {
        std::printf(
            "# graph replay per allreduce (%zu B, out of place): %.2f us; target: no slower than NCCL's one-rank "
            "graph replay (1.30 us for an 8-byte allgather on one H100; `gpucomm bench coll --anchors` measures "
            "NCCL in the same run)\n",
            first_allreduce_bytes, first_graph_allreduce.time_us);
      }
    }
    if (!cfg.json.empty()) {
      std::ofstream f(cfg.json);
      if (!f) raise_arg(kTool, "--json", "cannot write " + cfg.json);
      f << "{\n  \"benchmark\": \"coll\",\n  \"date\": \"" << iso_now() << "\",\n  \"commit\": \"" << GPUCOMM_GIT_COMMIT
        << "\",\n  \"command\": \"" << cmdline << "\",\n  \"pe_kind\": \"" << (gpu ? "gpu" : "host")
        << "\",\n  \"pes\": " << n << ",\n  \"iters\": " << cfg.iters << ",\n  \"samples\": " << cfg.samples
        << ",\n  \"time\": \"per call: median over samples of the slowest "
        << "PE's mean over iters back-to-back calls\",\n  \"enqueue_us\": " << enqueue
        << ",\n  \"launch_floor_us\": " << floor << ",\n  \"results\": [";
      for (size_t i = 0; i < results.size(); ++i) f << (i ? ",\n    " : "\n    ") << results[i];
      f << "\n  ]\n}\n";
      std::printf("# wrote %s\n", cfg.json.c_str());
    }
  }
  rt.barrier_all();
  h->release(send_alloc);
  h->release(recv_alloc);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucomm-bench-coll: %s\n", e.what());
    return 1;
  }
}
