#pragma once
// Passing file descriptors between the PEs of one node (SCM_RIGHTS over Unix sockets in private
// 0700 directories, every client authenticated: same user, a PE's pid, a per-exchange secret
// published through the store): how the host heap shares its memfd and the GPU heap its
// exported memory handles.
#include <string>
#include <vector>

#include "gpucomm/bootstrap/bootstrap.hpp"

namespace gpucomm::heap {

// Collective over the world (every PE calls it; PEs on other nodes pass an empty peer list).
// `local_ranks` are the world ranks on this PE's node, including this PE. Each PE offers
// `my_fds` and receives, for each rank in local_ranks, a dup of that rank's fds (its own are
// dup'ed too), in local_ranks order. `tag` names the exchange in messages. Every wait has the
// GPUCOMM_TIMEOUT limit. The caller owns the returned descriptors.
std::vector<std::vector<int>> exchange_fds(bootstrap::Bootstrap& b, const std::vector<int>& local_ranks,
                                           const std::vector<int>& my_fds, const std::string& tag);

}  // namespace gpucomm::heap
