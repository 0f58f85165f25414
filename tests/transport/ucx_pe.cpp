// A PE of the UCX transport tests: `gpucomm_test_ucx_pe SCENARIO [ARG]`, run under `gpucomm run`
// with GPUCOMM_DEVICE=host. Opens transport::open_remote("ucx") over the runtime's bootstrap and
// host symmetric heap. Prints "PE OK" and exits 0 on success; on failure prints the error and
// the seed (GPUCOMM_TEST_SEED replays it) and exits 1. Without libgpucomm_ucx it skips.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>

#include "pe_check.hpp"
#include "test_support.hpp"
#include "ucx_scenarios.hpp"

using namespace ucxtest;

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "rma";
  const int arg = argc > 2 ? static_cast<int>(gpucomm::testing::arg_int(argv[2], "ARG")) : 0;
#ifndef GPUCOMM_TEST_HAVE_UCX
  std::printf(
      "[  SKIPPED ] %s: libgpucomm_ucx was not built (GPUCOMM_WITH_UCX=OFF, or UCX was not found at "
      "configure time: `pip install libucx-cu13`, then reconfigure)\n",
      scenario.c_str());
  return 0;
#endif
  if (scenario == "gpu-rma") {
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 1) {
      std::printf("[  SKIPPED ] gpu-rma needs a GPU, found none\n");
      return 0;
    }
  }
  uint64_t seed = 0;
  try {
    gpucomm::RuntimeOptions opts;
    opts.heap_bytes = 32 << 20;
    gpucomm::Runtime rt(opts);
    std::vector<bool> reach;
    if (scenario == "ring") {
      reach.assign(static_cast<size_t>(rt.size()), false);
      reach[static_cast<size_t>((rt.rank() + 1) % rt.size())] = true;
    }
    Job j(rt, reach);
    seed = j.seed;
    using Scenario = void (*)(Job&, int);
    static const std::map<std::string, Scenario> scenarios = {
        {"rma", [](Job& job, int a) { scenario_rma_all(job, a > 0 ? a : 20); }},
        {"ring", [](Job& job, int a) { scenario_ring(job, a > 0 ? a : 10); }},
        {"atomics", [](Job& job, int a) { scenario_atomics(job, a > 0 ? a : 200); }},
        {"signal-order", [](Job& job, int a) { scenario_signal_order(job, a > 0 ? a : 2000); }},
        {"bad-args", [](Job& job, int) { scenario_bad_args(job); }},
        {"flush-timeout", [](Job& job, int) { scenario_flush_timeout(job); }},
        {"peer-killed", [](Job& job, int victim) { scenario_peer_killed(job, victim); }},
        {"gpu-rma", [](Job& job, int a) { scenario_gpu_rma(job, a > 0 ? a : 10); }},
    };
    auto it = scenarios.find(scenario);
    if (it == scenarios.end()) throw std::invalid_argument("unknown scenario '" + scenario + "'");
    it->second(j, arg);
    if (g_failures == 0) gpucomm::testing::print_pe_ok(rt.rank(), rt.size(), scenario);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "PE ERROR: %s\n", e.what());
    ++g_failures;
  }
  if (g_failures && seed) std::fprintf(stderr, "%s\n", gpucomm::testing::seed_note(seed).c_str());
  return g_failures == 0 ? 0 : 1;
}
