#pragma once
// The CPU reference of the collectives: for given inputs of every member, what one member's
// receive buffer holds after a call, with the algorithm's own fold order and rounding (rank order
// for oneshot, oneshot_ll and twoshot; the ring order; node partials for hierarchical), so tests
// compare results bit for bit (docs/COLLECTIVES.md, "Accumulation and determinism").
#include <cstdint>
#include <vector>

#include "gpucomm/collectives/plan.hpp"
#include "gpucomm/collectives/types.hpp"

namespace gpucomm::coll {

struct RefSetup {
  CollOp op = CollOp::allreduce;
  DataType dt = DataType::f32;
  RedOp redop = RedOp::sum;
  Algorithm algo = Algorithm::oneshot;  // as the call ran it (never automatic)
  uint64_t count = 0;                   // as in the host call (per block for allgather, reduce-scatter, alltoall)
  int root = -1;
  uint32_t channels = 1;
  Sizes sizes;                          // of the team's workspace (Collectives::handle)
  std::vector<std::vector<int>> nodes;  // hierarchical: team ranks of each node, in the handle's order
  // alltoallv, [from][to] in elements: counts, the sender's displacements, the receiver's displacements.
  std::vector<std::vector<uint64_t>> counts, send_displs, recv_displs;
};

// `sends[i]`: team rank i's send buffer (bytes); `recv`: rank `rank`'s receive buffer before the call.
// Returns that buffer after the call.
std::vector<uint8_t> reference(const RefSetup& s, const std::vector<std::vector<uint8_t>>& sends, int rank,
                               std::vector<uint8_t> recv);

}  // namespace gpucomm::coll
