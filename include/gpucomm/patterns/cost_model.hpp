#pragma once
// The constants of the pattern layer's cost model (docs/PATTERNS.md, "Cost model"). A schedule's
// time is the sum over its phases of the slowest of (a) each stream's transfers one after the
// other (start-up cost plus bytes over the path's bandwidth) and (b) each shared resource's
// bytes over its bandwidth, divided by the contention factor when several links share it; plus
// the cost of each phase boundary (joining streams; signals between PEs). Bandwidths in GB/s
// (1e9 bytes/s), times in microseconds. The defaults describe a PCIe 4 / NVLink 4 machine; the
// autotune option measures instead of estimating.
namespace gpucomm::patterns {

struct CostModel {
  double nvlink_gbps_per_link = 25.0;       // per direction
  int nvlink_links_if_unknown = 4;          // NVLink reported without a link count
  double pcie_gbps = 25.0;                  // one GPU's PCIe link, per direction (host<->GPU, P2P)
  double switch_uplink_gbps = 25.0;         // a PCIe switch towards the root complex, per direction
  double xsocket_gbps = 20.0;               // between CPU sockets, per direction
  double pcie_contention = 0.8;             // efficiency of a PCIe segment shared by several links
  double hbm_copy_gbps = 1000.0;            // a copy inside one GPU's memory
  double host_copy_gbps = 8.0;              // a CPU copy (one thread)
  double staged_gbps = 6.0;                 // pageable host memory staged through pinned buffers
  double copy_engine_us = 3.0;              // start-up of one copy-engine copy (host call and device)
  double kernel_us = 3.0;                   // start-up of one copy kernel (a fused batch pays it once)
  double fused_item_us = 0.05;              // each further transfer of a fused batch
  double copy_engine_row_ns = 5.0;          // each row of a strided copy-engine copy
  double strided_kernel_efficiency = 0.25;  // share of the path's bandwidth a kernel reaches on narrow rows
  double host_copy_us = 0.3;                // start-up of one CPU copy
  double join_us = 1.5;                     // joining and forking the streams of one PE at a phase boundary
  double signal_us = 6.0;                   // a phase boundary with signals between GPU PEs
  double host_signal_us = 2.0;              // the same between host-memory PEs
  // Engine choice on GPUs (Engine::automatic): contiguous transfers below this many bytes and
  // strided ones with rows below fused_row_bytes go to the fused kernel, the rest to the copy
  // engines.
  size_t fused_max_bytes = size_t{64} * 1024;
  size_t fused_row_bytes = 2048;
};

}  // namespace gpucomm::patterns
