// N-Body on GPU PEs in a build without CUDA kernels.
#include "gpucomm/apps/nbody.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {

RunResult nbody_gpu(Runtime&, Model, const RunConfig&) {
  raise(Errc::unsupported, "nbody", "built without CUDA kernels; run with host-memory PEs (GPUCOMM_DEVICE=host)");
}

}  // namespace gpucomm::apps
