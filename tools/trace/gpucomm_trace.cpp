// gpucomm-trace: the C++ half of `gpucomm trace`. Reads a DUMPI (or dumpi2ascii) trace and
// prints the analysis report as JSON; the Python command renders text and plots from it.
//
//   gpucomm-trace analyze PATH [--json FILE|-] [--rank R] [--export-queues FILE]
//                 [--snapshots N] [--progress|--no-progress]
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "gpucomm/core/error.hpp"
#include "gpucomm/trace/analysis.hpp"

namespace {

const char* kUsage =
    "usage: gpucomm-trace analyze PATH [--json FILE|-] [--rank R] [--export-queues FILE]\n"
    "                     [--snapshots N] [--progress|--no-progress]\n"
    "\n"
    "PATH is a DUMPI trace directory (a .meta file and its <prefix>-NNNN.bin rank files), a .meta\n"
    "file, a directory of dumpi2ascii outputs named <prefix>-NNNN.txt, or one such .txt file.\n"
    "The report is JSON (default: standard output). --rank limits the per-rank section to rank R.\n"
    "--export-queues writes the matching-queue snapshots (the N largest, --snapshots N, default 8;\n"
    "0 keeps one per rank) in gpucomm's snapshot format. --progress draws a progress bar on\n"
    "standard error (default: when standard error is a terminal and the trace exceeds 16 MB).\n";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "gpucomm-trace: error: %s\n\n%s", msg.c_str(), kUsage);
  std::exit(2);
}

long parse_long(const std::string& arg, const char* value) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(value, &end, 10);
  if (errno || !end || *end || end == value) usage_error("argument " + arg + ": '" + value + "' is not an integer");
  return v;
}

void draw_progress(uint64_t done, uint64_t total) {
  int pct = total ? static_cast<int>(100.0 * double(done) / double(total)) : 100;
  int bar = pct / 4;
  std::fprintf(stderr, "\rreading trace [%-25.*s] %3d%% (%.1f of %.1f MB)", bar, "#########################", pct,
               double(done) / 1e6, double(total) / 1e6);
  if (done >= total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  if (cmd != "analyze") usage_error("unknown command '" + cmd + "'");
  std::string path, json = "-", queues;
  int rank = -1;
  long snapshots = 8;
  int progress = -1;  // -1: on when standard error is a terminal and the trace is over 16 MB
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error("argument " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--json") {
      json = value();
    } else if (a == "--rank") {
      rank = static_cast<int>(parse_long(a, value()));
      if (rank < 0) usage_error("argument --rank: must be >= 0");
    } else if (a == "--export-queues") {
      queues = value();
    } else if (a == "--snapshots") {
      snapshots = parse_long(a, value());
      if (snapshots < 0) usage_error("argument --snapshots: must be >= 0");
    } else if (a == "--progress") {
      progress = 1;
    } else if (a == "--no-progress") {
      progress = 0;
    } else if (!a.empty() && a[0] == '-') {
      usage_error("unknown option " + a);
    } else if (path.empty()) {
      path = a;
    } else {
      usage_error("unexpected argument '" + a + "' (PATH already given)");
    }
  }
  if (path.empty()) usage_error("argument PATH is required");
  try {
    using namespace gpucomm::trace;
    TraceSet trace = TraceSet::open(path);
    if (rank >= trace.ranks()) {
      usage_error("argument --rank: the trace has ranks 0.." + std::to_string(trace.ranks() - 1) + ", not " +
                  std::to_string(rank));
    }
    AnalysisOptions opt;
    opt.snapshot_limit = static_cast<size_t>(snapshots);
    if (progress < 0) progress = isatty(2) && trace.info().total_bytes() > (16u << 20);
    if (progress) opt.progress = draw_progress;
    Analysis a = analyze(trace, opt);
    if (!queues.empty()) write_queue_snapshots(queues, a.snapshots);
    if (json == "-") {
      write_json(a, std::cout, rank);
    } else {
      std::ofstream os(json);
      if (!os) usage_error("argument --json: cannot create '" + json + "'");
      write_json(a, os, rank);
    }
  } catch (const gpucomm::Error& e) {
    std::fprintf(stderr, "gpucomm-trace: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
