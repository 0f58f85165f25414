// RandomAccess on GPU PEs in a build without CUDA kernels.
#include "gpucomm/apps/random_access.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {

RunResult random_access_gpu(Runtime&, Model, const RunConfig&) {
  raise(Errc::unsupported, "random_access",
        "built without CUDA kernels; run with host-memory PEs (GPUCOMM_DEVICE=host)");
}

}  // namespace gpucomm::apps
