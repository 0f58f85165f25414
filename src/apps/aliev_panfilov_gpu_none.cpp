// Aliev-Panfilov on GPU PEs in a build without CUDA kernels.
#include "gpucomm/apps/aliev_panfilov.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {

RunResult aliev_panfilov_gpu(Runtime&, Model, const RunConfig&) {
  raise(Errc::unsupported, "aliev_panfilov",
        "built without CUDA kernels; run with host-memory PEs (GPUCOMM_DEVICE=host)");
}

}  // namespace gpucomm::apps
