// Builds without CUDA kernels: the GPU half reports itself unavailable.
#include "gpu_bench.hpp"

namespace gpucomm::bench {
std::string gpu_unavailable_reason() {
  return "gpucomm was built without CUDA kernels";
}
std::string device_name() {
  return {};
}
Timing time_engine(matching::Engine, const std::vector<matching::Batch>&, const matching::RunOptions&, int, double) {
  return {};
}
QueueTiming time_queue(uint32_t, uint32_t, uint32_t, int) {
  return {};
}
}  // namespace gpucomm::bench
