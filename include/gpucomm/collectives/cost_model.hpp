#pragma once
// Algorithm selection from a stated cost model of the team's topology (docs/COLLECTIVES.md,
// "Selection: the cost model"). Host code; the choices for each size range are also written into
// the CollHandle, so kernels choose the same way.
#include <cstdint>
#include <string>
#include <vector>

#include "gpucomm/collectives/layout.hpp"
#include "gpucomm/collectives/plan.hpp"
#include "gpucomm/collectives/types.hpp"

namespace gpucomm::coll {

// How the members of a team reach each other: the slowest class any member sees for a pair on
// its node, and the network between nodes.
enum class LinkClass : uint8_t { nvlink, nvswitch, pcie, host, network, last = network };
const char* link_class_name(LinkClass c);

struct TopoSummary {
  int n = 1;                          // team size
  int nodes = 1;                      // nodes the team spans
  int per_node = 0;                   // members per node when uniform, else 0
  LinkClass intra = LinkClass::host;  // between members of one node
  bool all_direct = true;             // every member mapped by every other (LL possible)
  bool gpu = false;                   // GPU PEs (else host-memory PEs)
};

struct LinkParams {
  double alpha_us;  // per dependent step (a flag's round trip through the memory system)
  double beta_gbs;  // per PE and direction
  bool shared;      // every PE's traffic crosses one link (a PCIe root)
  double ll_alpha_us;
};
// The table of the model (src/collectives/cost_model.cpp).
const LinkParams& link_params(LinkClass c);

struct Estimate {
  Algorithm algorithm = Algorithm::oneshot;
  uint32_t channels = 1;
  double us = 0;  // predicted time
};

// The model's time for `algorithm` on `channels` channels moving `bytes` per PE (allreduce,
// reduce, broadcast: the buffer; allgather, reduce-scatter, alltoall(v): one block). Infinite
// when the algorithm cannot run there (LL without direct mappings, hierarchical without uniform
// nodes, a workspace too small for the algorithm).
double model_us(CollOp op, Algorithm algorithm, DataType dt, uint64_t bytes, uint32_t channels, const TopoSummary& t,
                const Sizes& sizes);
// Every algorithm that implements `op`, each with its best channel count (<= max_channels), fastest first.
std::vector<Estimate> estimates(CollOp op, DataType dt, uint64_t bytes, const TopoSummary& t, const Sizes& sizes,
                                uint32_t max_channels);
// The model's choice.
Estimate choose(CollOp op, DataType dt, uint64_t bytes, const TopoSummary& t, const Sizes& sizes,
                uint32_t max_channels);
// The best channel count for a given algorithm.
Estimate best_channels(CollOp op, Algorithm algorithm, DataType dt, uint64_t bytes, const TopoSummary& t,
                       const Sizes& sizes, uint32_t max_channels);
// Fills h.auto_upto/auto_algo/auto_channels from the model (sizes 1 B .. 16 GB, by powers of two).
void fill_auto_rules(CollHandle& h, const TopoSummary& t, const Sizes& sizes, uint32_t max_channels);
// The rule of `h` for `bytes` of `op`.
GPUCOMM_HD int auto_rule(const CollHandle& h, CollOp op, uint64_t bytes) {
  const int o = static_cast<int>(op);
  for (int i = 0; i < kAutoRules - 1; ++i)
    if (bytes <= h.auto_upto[o][i]) return i;
  return kAutoRules - 1;
}
// One line of the model's estimates for logs and `gpucomm bench coll`.
std::string describe_estimates(const std::vector<Estimate>& e);

}  // namespace gpucomm::coll
