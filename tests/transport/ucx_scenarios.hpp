#pragma once
// The scenarios of gpucomm_test_ucx_pe; each runs on every PE of the job.
#include <vector>

#include "ucx_harness.hpp"

namespace ucxtest {

void scenario_rma(Job& j, int iters, const std::vector<int>& targets, const std::vector<int>& sources);
void scenario_rma_all(Job& j, int iters);
void scenario_ring(Job& j, int iters);
void scenario_atomics(Job& j, int iters);
void scenario_signal_order(Job& j, int rounds);
void scenario_bad_args(Job& j);
// GPU PEs: puts, signals and gets on heaps in device memory.
void scenario_gpu_rma(Job& j, int iters);
void scenario_flush_timeout(Job& j);
// Returns normally only if the expected peer failure was raised (and printed).
void scenario_peer_killed(Job& j, int victim);

}  // namespace ucxtest
