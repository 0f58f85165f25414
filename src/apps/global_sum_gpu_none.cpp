// Global Sum on GPU PEs in a build without CUDA kernels.
#include "gpucomm/apps/global_sum.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {

RunResult global_sum_gpu(Runtime&, Model, const RunConfig&) {
  raise(Errc::unsupported, "global_sum", "built without CUDA kernels; run with host-memory PEs (GPUCOMM_DEVICE=host)");
}

}  // namespace gpucomm::apps
