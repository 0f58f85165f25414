#include "test_support.hpp"

#include <chrono>
#include <cstdlib>

#include "gpucomm/runtime/devices.hpp"

namespace gpucomm::testing {

int gpu_count() {
  return cuda_device_count();
}

uint64_t test_seed() {
  if (const char* s = std::getenv("GPUCOMM_TEST_SEED")) return std::strtoull(s, nullptr, 0);
  static const uint64_t seed =
      static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count()) ^
      (static_cast<uint64_t>(std::random_device{}()) << 32);
  return seed;
}

std::string seed_note(uint64_t seed) {
  return "seed " + std::to_string(seed) + " (replay with GPUCOMM_TEST_SEED=" + std::to_string(seed) + ")";
}

}  // namespace gpucomm::testing
