#pragma once
// The application tool's results: per-step times gathered from every PE, medians, and the JSON
// report that `gpucomm apps` reads.
#include <string>
#include <vector>

#include "gpucomm/apps/run.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::apps {

struct RunRecord {
  RunResult mine;               // this PE's result
  std::vector<double> step_us;  // per timed step: the slowest PE's time
  double median_us = 0, min_us = 0;
  double reference = 0;
  int wrong = 0;             // steps with a wrong result, summed over the PEs
  uint64_t wrong_cells = 0;  // points of a distributed result that differ, summed over the PEs
};

// Collective over the world: gathers every PE's times and wrong counts into `rec`.
RunRecord gather_record(Runtime& rt, const RunResult& mine, double reference);

struct ReportHeader {
  std::string app, command, pe_kind;
  std::string timing;  // what was timed (empty: Global Sum's wording)
  int pes = 0, warmup = 0, iters = 0;
};
std::string report_json(const ReportHeader& h, const std::vector<RunRecord>& runs);

double median(std::vector<double> v);

}  // namespace gpucomm::apps
