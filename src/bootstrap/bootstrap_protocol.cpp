#include "bootstrap_protocol.hpp"

#include <cstring>

namespace gpucomm::bootstrap {

std::string check_hello(const wire::Frame& f, const std::array<uint8_t, 16>& token, int world_size) {
  if (f.payload.size() != token.size() || std::memcmp(f.payload.data(), token.data(), token.size()) != 0)
    return "authentication failed: wrong token (a process of another job, or a stale unique id)";
  if (static_cast<int>(f.h.aux) != world_size) {
    return "rank " + std::to_string(f.h.rank) + " believes the job has " + std::to_string(f.h.aux) +
           " PEs, the store was started for " + std::to_string(world_size);
  }
  if (f.h.rank < 0 || f.h.rank >= world_size)
    return "rank " + std::to_string(f.h.rank) + " is outside 0.." + std::to_string(world_size - 1);
  return "";
}

}  // namespace gpucomm::bootstrap
