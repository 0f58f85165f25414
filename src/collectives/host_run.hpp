#pragma once
// Runs one collective on a host-memory PE: every channel in turn on the calling thread.
#include <cstdint>

#include "gpucomm/collectives/algorithms.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::coll::detail {

void run_on_host(Runtime& rt, const CollHandle& h, const Call& call, int64_t timeout_ms);

}  // namespace gpucomm::coll::detail
