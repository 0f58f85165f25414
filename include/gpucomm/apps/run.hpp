#pragma once
// What every application of the suite takes and returns for one (model, size) run on one PE
// (docs/APPS.md): the run's configuration and this PE's times and check results.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpucomm/apps/catalog.hpp"

namespace gpucomm::apps {

struct RunConfig {
  uint64_t size = 128;  // the application's size unit (gpucomm apps list)
  int warmup = 5;
  int iters = 50;
  int corrupt_rank = -1;  // tests: this PE corrupts its result (each application says how), so the check must fail
  std::string dump_dir;   // tests: applications with a distributed result write each PE's part there
};

// One (model, size) run on this PE.
struct RunResult {
  Model model = Model::loadstore;
  uint64_t size = 0;
  std::vector<double> iter_us;  // this PE's time per timed iteration
  double value = 0;             // the application's checked value of the last iteration
  int wrong = 0;                // iterations (warm-up included) whose value differs from the reference
  uint64_t wrong_cells = 0;     // applications with a distributed result (a grid): elements that differ
  // Application-specific measurements of this PE (a roofline, a copy bandwidth); the report shows
  // rank 0's under "metrics".
  std::vector<std::pair<std::string, double>> metrics;
  uint64_t updates = 0;  // RandomAccess: table updates per step, all PEs together (the report's GUPS)
};

}  // namespace gpucomm::apps
