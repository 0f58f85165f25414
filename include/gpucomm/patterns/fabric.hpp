#pragma once
// What the strategies and the cost model know about the machine: the endpoints transfers run
// between (the host memory and the GPU memory of each PE), the path between two endpoints (its
// bandwidth, and the shared resources it uses: a GPU's NVLink ports and PCIe link in each
// direction, a PCIe switch's uplink, the link between CPU sockets), and an order of the
// endpoints that keeps topological neighbours together. Built from gpucomm's topology
// (gpucomm/topology), or from a synthetic one in tests.
#include <cstdint>
#include <string>
#include <vector>

#include "gpucomm/patterns/cost_model.hpp"
#include "gpucomm/topology/topology.hpp"

namespace gpucomm::patterns {

// A PE as the plan sees it.
struct PeInfo {
  int node = 0;               // node index (PEs of one node share memory mappings)
  int device = -1;            // index of its GPU in the planning topology; -1: a host-memory PE, or see below
  bool gpu_unlisted = false;  // a GPU PE whose GPU the planning topology does not list (paths: PCIe)
  bool gpu() const { return device >= 0 || gpu_unlisted; }
};

// Host memory (`device` false) or GPU memory of one PE. Host-memory PEs' symmetric heaps are
// host memory.
struct Endpoint {
  int pe = 0;
  bool device = false;
  bool operator==(const Endpoint&) const = default;
};

using ResourceId = uint32_t;

struct Path {
  std::vector<ResourceId> resources;  // shared resources the path loads, in one direction
  double gbps = 0;                    // bandwidth of the path alone (GB/s, 1e9 bytes per second)
  bool local = false;                 // both ends on one memory (a GPU's own copy, a CPU copy)
};

class Fabric {
 public:
  Fabric(topology::Topology topo, std::vector<PeInfo> pes, CostModel model = {});

  const CostModel& model() const { return model_; }
  const topology::Topology& topology() const { return topo_; }
  int num_pes() const { return static_cast<int>(pes_.size()); }
  const PeInfo& pe(int r) const { return pes_.at(static_cast<size_t>(r)); }
  bool is_gpu(int r) const { return pe(r).gpu(); }

  // The path of a copy from `src` to `dst` executed by `owner` (-1: src's PE); CPU copies load
  // the owner's CPU.
  Path path(Endpoint src, Endpoint dst, int owner = -1) const;
  // Position of an endpoint in the topological order: nodes, then GPUs in the order of their
  // PCIe switch groups (GPUs of one switch together), host memory of a node before its GPUs.
  int order(Endpoint e) const;
  // Switch group of a GPU endpoint (GPUs that reach each other through one PCIe switch or over
  // NVLink share one); host endpoints form a group per node.
  int group(Endpoint e) const;

  size_t num_resources() const { return names_.size(); }
  const std::string& resource_name(ResourceId r) const { return names_.at(r); }
  // Whether concurrent transfers on the resource slow each other down beyond sharing its
  // bandwidth (PCIe segments: CostModel::pcie_contention).
  double contention(ResourceId r) const { return contention_.at(r); }
  double gbps(ResourceId r) const { return gbps_.at(r); }
  // Link resources (ports, uplinks, socket links) as opposed to a GPU's or CPU's own copies.
  bool is_link(ResourceId r) const { return link_.at(r) != 0; }

  // A short fingerprint of the topology and the PEs (for the autotune cache).
  std::string signature() const;

 private:
  ResourceId add_resource(std::string name, double gbps, double contention, bool link);
  int gpu_of(int pe) const;
  double nvlink_gbps(const topology::Link& l) const;

  topology::Topology topo_;
  std::vector<PeInfo> pes_;
  CostModel model_;
  std::vector<std::string> names_;
  std::vector<double> gbps_, contention_;
  std::vector<char> link_;
  // Per GPU of the topology: resources and switch group.
  std::vector<ResourceId> nvl_out_, nvl_in_, pcie_up_, pcie_down_, hbm_, sw_up_, sw_down_;
  std::vector<int> gpu_group_, gpu_rank_in_order_;
  std::vector<ResourceId> cpu_copy_;  // per PE (CPU copies of its transfers)
  ResourceId xsocket_ = 0;
  bool has_xsocket_ = false;
};

// Synthetic topologies for tests and for planning without a GPU: `n` GPUs connected by NVLink
// (`links` per pair, through a switch when n > 2), or a PCIe tree of `sockets` sockets with
// `switches_per_socket` switches of `gpus_per_switch` GPUs each.
topology::Topology nvlink_topology(int n, int links);
topology::Topology pcie_tree_topology(int sockets, int switches_per_socket, int gpus_per_switch);
// One PE per GPU, all on node 0.
std::vector<PeInfo> one_pe_per_gpu(const topology::Topology& t);

}  // namespace gpucomm::patterns
