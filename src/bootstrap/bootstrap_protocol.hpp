#pragma once
// Checks shared by the store's two ends.
#include <array>
#include <cstdint>
#include <string>

#include "wire.hpp"

namespace gpucomm::bootstrap {

// Returns "" if a hello frame is acceptable for a job of `world_size` with `token`, else why not.
std::string check_hello(const wire::Frame& f, const std::array<uint8_t, 16>& token, int world_size);

}  // namespace gpucomm::bootstrap
