// gpucomm-bench-patterns: the pattern layer on one GPU PE against hand-written CUDA calls.
//   gpucomm run -n 1 -- gpucomm-bench-patterns [--quick] [--only overhead,bandwidth,faces,mcl]
//                                              [--json FILE]
// Sections: launch overhead (host time per launch, eager and graph), bandwidth (H2D, D2H, D2D),
// x-faces of a 3-D array (fused kernel vs cudaMemcpy2DAsync/3DAsync), the MCL thesis's tables as
// ratios. Prints every result and the targets beside the values; progress on stderr.
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "bench.hpp"
#include "gpucomm/core/json.hpp"

#ifndef GPUCOMM_GIT_COMMIT
#define GPUCOMM_GIT_COMMIT "unknown"
#endif

namespace {

using bench::Context;
using bench::Result;

std::string fmt(double v, int digits = 2) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string size_name(size_t b) {
  return b >= (size_t{1} << 20) ? std::to_string(b >> 20) + " MB" : std::to_string(b >> 10) + " KB";
}

const char* verdict(bool ok) {
  return ok ? "met" : "missed";
}

// The targets beside the measured values, and the MCL tables as ratios.
std::vector<std::string> summary(const Context& c) {
  std::vector<std::string> out;
  auto val = [&](const char* s, const char* n, const std::string& cfg, size_t bytes = 0) {
    const Result* r = c.find(s, n, cfg, bytes);
    return r ? r->value() : -1.0;
  };
  std::set<std::string> configs;
  for (const auto& r : c.results)
    if (r.section == "overhead") configs.insert(r.config);
  if (!configs.empty()) {
    out.push_back("launch overhead, host us per launch (median): loop | plan eager | loop graph | plan graph");
    for (const auto& cfg : configs) {
      for (int n : {1, 4, 16}) {
        const size_t bytes = size_t{4096} * static_cast<size_t>(n);
        const double l = val("overhead", "loop", cfg, bytes), p = val("overhead", "plan_eager", cfg, bytes);
        const double lg = val("overhead", "loop_graph", cfg, bytes), pg = val("overhead", "plan_graph", cfg, bytes);
        if (l < 0) continue;
        out.push_back("  " + cfg + ", " + std::to_string(n) + " transfer(s): " + fmt(l) + " | " + fmt(p) + " | " +
                      fmt(lg) + " | " + fmt(pg) + "   target eager <= loop + 2 us: " + fmt(p - l) + " us -> " +
                      verdict(p - l <= 2.0) + "; graph <= one graph launch (+5%): " + verdict(pg <= lg * 1.05));
      }
    }
  }
  bool any_bw = false;
  for (const char* d : {"h2d", "d2h", "d2d"}) {
    for (const auto& r : c.results) {
      if (r.section != "bandwidth" || r.name != "loop" || r.config != d) continue;
      if (!any_bw) out.push_back("bandwidth, GB/s (median): loop | plan eager | plan graph | eager/loop");
      any_bw = true;
      const double l = r.value(), p = val("bandwidth", "plan_eager", d, r.bytes),
                   g = val("bandwidth", "plan_graph", d, r.bytes);
      std::string line = "  " + std::string(d) + " " + size_name(r.bytes) + ": " + fmt(l, 1) + " | " + fmt(p, 1) +
                         " | " + fmt(g, 1) + " | " + fmt(100 * p / l, 1) + "%";
      if (r.bytes >= (size_t{1} << 20)) line += std::string("   target >= 98% from 1 MB -> ") + verdict(p >= 0.98 * l);
      out.push_back(line);
    }
  }
  bool any_face = false;
  for (const auto& r : c.results) {
    if (r.section != "faces" || r.name != "fused") continue;
    if (!any_face)
      out.push_back("x-faces of a 3-D double array, device us per face: fused | cudaMemcpy2DAsync | cudaMemcpy3DAsync");
    any_face = true;
    const double f = r.value(), m2 = val("faces", "memcpy2d", r.config), m3 = val("faces", "memcpy3d", r.config);
    std::string line = "  " + r.config + " (" + size_name(r.bytes) + "): " + fmt(f) + " | " + fmt(m2) + " | " + fmt(m3);
    if (r.bytes <= (size_t{256} << 10))
      line += std::string("   target fused faster up to 256 KB -> ") + verdict(f < m2 && f < m3);
    out.push_back(line);
  }
  // MCL Tables 5.3-5.7 as ratios (MCL / hand-coded in the thesis; plan / hand-written here).
  std::vector<std::string> mcl;
  auto largest = [&](const char* d) {
    size_t b = 0;
    for (const auto& r : c.results)
      if (r.section == "bandwidth" && r.config == d) b = std::max(b, r.bytes);
    return b;
  };
  const std::pair<const char*, const char*> tables[] = {{"5.3", "d2h"}, {"5.4", "h2d"}, {"5.5", "d2d"}};
  for (const auto& [t, d] : tables) {
    const size_t b = largest(d);
    if (b == 0) continue;
    const double ratio = val("bandwidth", "plan_eager", d, b) / val("bandwidth", "loop", d, b);
    mcl.push_back("  Table " + std::string(t) + " (" + d + ", " + size_name(b) + "): plan/loop bandwidth " +
                  fmt(ratio, 4) +
                  (std::string(t) == "5.5" ? " (copies inside one GPU; peer copies need the 2-GPU machine)" : ""));
  }
  const std::string bc = "broadcast host to 4 device buffers";
  if (const Result* loop = c.find("mcl", "loop", bc)) {
    for (const auto& r : c.results) {
      if (r.section == "mcl" && r.config == bc && r.name != "loop") {
        mcl.push_back("  Table 5.6 (" + bc + "): " + r.name + " / loop bandwidth " + fmt(r.value() / loop->value(), 3));
      }
    }
    mcl.push_back("  Table 5.6 (halo left-right / pairwise): needs several GPUs (a 2-GPU machine)");
  }
  for (const auto& r : c.results) {
    if (r.section == "mcl" && r.name == "loop" && r.config.rfind("periodic", 0) == 0) {
      const double p = val("mcl", "plan", r.config), g = val("mcl", "plan_graph", r.config);
      mcl.push_back("  Table 5.7 (" + r.config + ", device time): loop/plan " + fmt(r.value() / p, 3) +
                    ", loop/plan graph " + fmt(r.value() / g, 3) +
                    "; declared and run in 2 lines (target <= 3 -> met)");
    }
  }
  if (!mcl.empty()) {
    out.push_back("MCL thesis tables as ratios (>= 1: the plan is as fast as the hand-written code or faster)");
    out.insert(out.end(), mcl.begin(), mcl.end());
  }
  return out;
}

void write_json(const std::string& path, const Context& c, const std::vector<std::string>& lines, bool quick) {
  gpucomm::JsonWriter w;
  w.begin_object();
  w.field("tool", "gpucomm-bench-patterns");
  w.field("commit", GPUCOMM_GIT_COMMIT);
  w.field("quick", quick);
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
    w.field("gpu", prop.name);
  w.begin_array("results");
  for (const Result& r : c.results) {
    w.begin_object();
    w.field("section", r.section).field("name", r.name).field("config", r.config);
    w.field("bytes", r.bytes).field("transfers", r.transfers).field("unit", r.unit).field("median", r.value());
    w.begin_array("samples");
    for (double s : r.samples) w.value(s);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.begin_array("summary");
  for (const auto& l : lines) w.value(l);
  w.end_array();
  w.end_object();
  std::ofstream out(path);
  out << w.str() << "\n";
  if (!out) {
    std::fprintf(stderr, "gpucomm-bench-patterns: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json;
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string s; std::getline(ss, s, ',');) only.insert(s);
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: gpucomm run -n 1 -- gpucomm-bench-patterns [--quick] [--only overhead,bandwidth,faces,mcl] "
          "[--json FILE]\n");
      return 0;
    } else {
      std::fprintf(stderr, "gpucomm-bench-patterns: unknown argument '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  for (const auto& s : only) {
    if (s != "overhead" && s != "bandwidth" && s != "faces" && s != "mcl") {
      std::fprintf(stderr, "gpucomm-bench-patterns: --only: unknown section '%s'\n", s.c_str());
      return 2;
    }
  }
  auto wanted = [&](const char* s) { return only.empty() || only.count(s); };
  try {
    gpucomm::Runtime rt;
    if (rt.pe_kind() != gpucomm::PeKind::gpu || rt.size() != 1) {
      std::fprintf(stderr, "gpucomm-bench-patterns: needs one GPU PE (gpucomm run -n 1 with a GPU)\n");
      return 1;
    }
    cudaStream_t s = nullptr;
    bench::cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    Context c{rt, s, quick, {}, 0, 0};
    c.steps = (wanted("overhead") ? 7 : 0) + (wanted("bandwidth") ? 3 * (quick ? 3 : 7) : 0) +
              (wanted("faces") ? (quick ? 4 : 7) : 0) + (wanted("mcl") ? 2 : 0);
    if (wanted("overhead")) bench::run_overhead(c);
    if (wanted("bandwidth")) bench::run_bandwidth(c);
    if (wanted("faces")) bench::run_faces(c);
    if (wanted("mcl")) bench::run_mcl(c);
    const auto lines = summary(c);
    for (const auto& l : lines) std::printf("%s\n", l.c_str());
    if (!json.empty()) write_json(json, c, lines, quick);
    (void)cudaStreamDestroy(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucomm-bench-patterns: %s\n", e.what());
    return 1;
  }
  return 0;
}
