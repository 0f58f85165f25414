#pragma once
// What one PE declares at compile time, in the job's terms, and how the declarations of all PEs
// become the job's pattern. The declaration travels through the bootstrap's all-gather as bytes
// (encode/decode; a malformed one raises Errc::protocol).
#include <cstdint>
#include <string>
#include <vector>

#include "gpucomm/patterns/plan.hpp"
#include "gpucomm/topology/topology.hpp"

namespace gpucomm::patterns::detail {

struct Declaration {
  int rank = 0;
  std::string name;
  Kind kind = Kind::custom;
  // Options that must agree across PEs.
  Strategy strategy = Strategy::automatic;
  Engine engine = Engine::automatic;
  bool entry_sync = true, exit_sync = true, autotune = false;
  uint32_t chunks = 0;
  // This PE.
  int node = 0;
  bool gpu = false;        // a GPU PE
  std::string pci_bus_id;  // its GPU (empty for host-memory PEs)
  // Rank 0 only: the topology every PE plans with.
  bool has_topology = false;
  topology::Topology topology;
  // The transfers this PE declares (any owner); `after` holds indices into this list.
  std::vector<GlobalTransfer> transfers;
  std::vector<std::string> errors;  // found while translating (buffers outside the heap, ...)
};

// Translates `p` (declared on this PE) into the job's terms; problems go to errors.
Declaration declare(const Runtime& rt, const Pattern& p, const CompileOptions& o);

std::string encode(const Declaration& d);
Declaration decode(const std::string& bytes);

// The job's pattern from every PE's declaration (in rank order): each transfer comes from its
// owner's declaration; transfers a PE declares for another owner must match the owner's.
// Mismatches and disagreeing options go to `errors`.
GlobalPattern merge(const std::vector<Declaration>& all, std::vector<std::string>* errors);
// The same for a pattern only this PE compiles.
GlobalPattern single(const Declaration& d);

}  // namespace gpucomm::patterns::detail
