#pragma once
// The latency breakdown of one put_signal round trip through a proxy (1 PE to itself, thread
// level, 8 bytes), from the queues' trace records (GPUCOMM_PROXY_TRACE=1) and the time the
// producer saw its signal. Stages (means over the iterations, us):
//   post        the producer's post: ticket, space check, entry (post -> posted)
//   notice      release of the stamp until the agent read the entry (posted -> seen)
//   execute     the agent's work until the data and signal were stored (GPU agent) or the CUDA call
//               returned (CPU proxy) (seen -> issued)
//   deliver     until the producer saw the signal (issued -> observed)
//   total       post -> observed
//   complete    until the agent learnt of the completion (issued -> completed; after the signal)
// CPU proxy stamps are converted to %globaltimer with the calibration of floors.hpp.
#include <vector>

#include "../rma/results.hpp"
#include "floors.hpp"
#include "gpucomm/gpucomm.hpp"

namespace proxy_bench {

// Appends the stages (level = stage name) when the runtime traces its queues; returns whether it did.
bool measure_stages(gpucomm::Runtime& rt, const gpucomm::DeviceHandle& h, char* sym, const char* local, uint64_t* sig,
                    uint64_t& base, int iters, const ClockSync& sync, std::vector<bench::Result>& out);

}  // namespace proxy_bench
