#pragma once
// The application tool's results: per-step times gathered from every PE, medians, and the JSON
// report that `gpucomm apps` reads.
#include <cstdint>
#include <string>
#include <vector>

#include "gpucomm/apps/run.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::apps {

// When one (model, size) run happened on this PE, for energy windows (gpucomm apps energy): the
// wall clock (Unix ns) before and after the whole run (set-up, steps, check) and the CPU time
// (user + system, every thread of the process: the PE's proxy and host threads too) it took.
struct RunWindow {
  int64_t start_unix_ns = 0, end_unix_ns = 0;
  double cpu_s = 0;
};
// Reads the clock and this process's CPU time now (the start or the end of a window).
RunWindow window_now();

struct RunRecord {
  RunResult mine;               // this PE's result
  std::vector<double> step_us;  // per timed step: the slowest PE's time
  double median_us = 0, min_us = 0;
  double reference = 0;
  int wrong = 0;             // steps with a wrong result, summed over the PEs
  uint64_t wrong_cells = 0;  // points of a distributed result that differ, summed over the PEs
  RunWindow window;          // earliest start and latest end over the PEs, CPU seconds summed over them
};

// Collective over the world: gathers every PE's times, wrong counts and window into `rec`.
RunRecord gather_record(Runtime& rt, const RunResult& mine, double reference, const RunWindow& window);

struct ReportHeader {
  std::string app, command, pe_kind;
  std::string timing;  // what was timed (empty: Global Sum's wording)
  int pes = 0, warmup = 0, iters = 0;
};
std::string report_json(const ReportHeader& h, const std::vector<RunRecord>& runs);

double median(std::vector<double> v);

}  // namespace gpucomm::apps
