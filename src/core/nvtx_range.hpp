#pragma once
// An NVTX range around a host call, for Nsight Systems and other NVTX tools (a few nanoseconds
// when no tool is attached: NVTX v3 is header-only and loads a tool only when one is injected).
#include <nvtx3/nvToolsExt.h>

namespace gpucomm::detail {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace gpucomm::detail
