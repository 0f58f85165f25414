#pragma once
// The floors the proxy paths are compared with, measured in the same run with plain CUDA (no
// gpucomm path in between):
//   flag_rt_blocks     round trip of a flag between two blocks of one kernel through device memory
//                      (release/acquire at device scope): the GPU agent's floor
//   gpu_cpu_flag_rt    round trip of a flag between a GPU thread and a CPU thread through pinned
//                      memory; half of it is the one-way time of a flag
//   cpu_write_to_gpu   a CPU thread issues an 8-byte write into device memory (cudaMemcpyAsync from
//                      pinned memory, cuStreamWriteValue64, cuStreamBatchMemOp with one write) and
//                      waits until a GPU thread polling that word has seen it and answered through
//                      pinned memory: the cheapest completed CPU-issued write plus a flag's one-way
//                      trip from a GPU thread to a CPU thread, i.e. the CPU proxy's floor (the
//                      minimum over the three forms is reported as cpu_proxy_floor)
// The GPU-CPU ping-pong also calibrates %globaltimer against the host's steady clock (the
// sample with the shortest round trip), for the latency breakdown of traced runs.
#include <vector>

#include "../rma/results.hpp"

namespace proxy_bench {

struct ClockSync {
  double gpu_minus_host_ns = 0;  // %globaltimer - steady_clock, both in ns
  double uncertainty_ns = 0;     // half the round trip of the sample used
  bool valid = false;
};

// Appends the floors to `out` (`trials` samples of each); returns the clock calibration.
ClockSync measure_floors(int trials, bool quick, std::vector<bench::Result>& out);

// Only the clock calibration (a short GPU-CPU ping-pong).
ClockSync calibrate_clocks();

}  // namespace proxy_bench
