#pragma once
// The reference matcher: the plainest correct implementation of the batch semantics, used to
// judge every other engine.
#include "gpucomm/matching/batch.hpp"

namespace gpucomm::matching {

// Phase 1: each new message, in arrival order, takes the earliest compatible receive of the
// PRQ; unmatched messages join the UMQ in order. Phase 2: each new receive, in post order, takes
// the earliest compatible message of that UMQ; unmatched receives join the PRQ in order.
Outcome match_reference(const Batch& b);

}  // namespace gpucomm::matching
