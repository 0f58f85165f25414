// Builds without CUDA kernels (GPUCOMM_ENABLE_CUDA=OFF): the GPU engines report that they are
// unavailable.
#include "gpucomm/core/error.hpp"
#include "gpucomm/matching/engine.hpp"

namespace gpucomm::matching {

struct DeviceBatchSet::Impl {};

bool gpu_available() {
  return false;
}
std::string gpu_name() {
  return {};
}
DeviceBatchSet::DeviceBatchSet(const std::vector<Batch>&) {
  raise(Errc::unsupported, "DeviceBatchSet", "gpucomm was built without CUDA kernels");
}
DeviceBatchSet::~DeviceBatchSet() = default;
size_t DeviceBatchSet::size() const {
  return 0;
}
size_t DeviceBatchSet::max_targets() const {
  return 0;
}
void DeviceBatchSet::run(Engine, cudaStream_t, const RunOptions&) {}
void DeviceBatchSet::restore(cudaStream_t) {}
std::vector<Outcome> DeviceBatchSet::download(cudaStream_t, std::vector<uint32_t>*) {
  return {};
}

}  // namespace gpucomm::matching
