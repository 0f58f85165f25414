// Jacobi 2-D on GPU PEs in a build without CUDA kernels.
#include "gpucomm/apps/jacobi2d.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {

RunResult jacobi2d_gpu(Runtime&, Model, const RunConfig&) {
  raise(Errc::unsupported, "jacobi2d", "built without CUDA kernels; run with host-memory PEs (GPUCOMM_DEVICE=host)");
}

}  // namespace gpucomm::apps
