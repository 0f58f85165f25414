#pragma once
// The checks compile() makes before anything runs, each on the memory this PE answers for (its
// host and device memory, and its copy of the symmetric heap), so that the job's PEs together
// check everything once:
// - two transfers whose destinations share a byte;
// - a transfer that reads bytes another one writes (or that it writes itself) without a
//   dependency ordering the two;
// - a step this PE executes that reaches memory it cannot address (a PE on another node, a GPU
//   without peer access).
#include <string>
#include <vector>

#include "gpucomm/patterns/schedule.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::patterns::detail {

std::vector<std::string> check_memory(const GlobalPattern& g, int rank);
std::vector<std::string> check_reach(const Schedule& s, const GlobalPattern& g, const Runtime& rt);

}  // namespace gpucomm::patterns::detail
