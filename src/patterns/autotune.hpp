#pragma once
// CompileOptions::autotune: run every candidate schedule (one warm-up launch, then timed launches;
// on several PEs the slowest PE's time counts) and keep the fastest. Winners are cached per
// process by the pattern's structure, the fabric and the options, and in the file
// GPUCOMM_PATTERN_TUNE_FILE when set; rank 0's cache decides for the job.
#include <vector>

#include "gpucomm/patterns/fabric.hpp"
#include "plan_impl.hpp"

namespace gpucomm::patterns::detail {

Schedule autotune(Plan::Impl& x, const Fabric& f, const std::vector<const Schedule*>& candidates);
// The structure of a pattern without its addresses (the cache key's first part).
std::string pattern_signature(const GlobalPattern& g);

}  // namespace gpucomm::patterns::detail
