// Himeno on GPU PEs in a build without CUDA kernels.
#include "gpucomm/apps/himeno.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {

RunResult himeno_gpu(Runtime&, Model, const RunConfig&) {
  raise(Errc::unsupported, "himeno", "built without CUDA kernels; run with host-memory PEs (GPUCOMM_DEVICE=host)");
}

}  // namespace gpucomm::apps
