// Multi-matrix-vector in a build without CUDA kernels.
#include "gpucomm/apps/mmv.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {

RunResult mmv_gpu(Runtime&, Model, const RunConfig&) {
  raise(Errc::unsupported, "mmv", "built without CUDA kernels; the application needs GPU PEs");
}

}  // namespace gpucomm::apps
