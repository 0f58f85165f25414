// Built without CUDA: the GPU scenario says why it does not run.
#include "fault_pe.hpp"

namespace faultpe {

int run_gpu(const std::string& scenario, int /*victim*/, int /*arg*/) {
  if (scenario != "gpu-kill-wait") return -1;
  say("[  SKIPPED ] gpu-kill-wait: gpucomm was built without CUDA");
  return 0;
}

}  // namespace faultpe
