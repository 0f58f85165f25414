#pragma once
// Logging with rank prefixes; the level comes from GPUCOMM_LOG_LEVEL (error, warn, info, debug,
// trace; default warn). Usage: GPUCOMM_LOG(info, "connected to " << addr);
#include <sstream>
#include <string>

namespace gpucomm::log {

enum class Level { error = 0, warn = 1, info = 2, debug = 3, trace = 4 };

Level level() noexcept;
void set_level(Level l) noexcept;
bool enabled(Level l) noexcept;
void write(Level l, const std::string& msg);
bool parse_level(const std::string& text, Level* out) noexcept;

}  // namespace gpucomm::log

#define GPUCOMM_LOG(lvl, expr)                                                  \
  do {                                                                          \
    if (::gpucomm::log::enabled(::gpucomm::log::Level::lvl)) {                  \
      std::ostringstream gpucomm_log_os_;                                       \
      gpucomm_log_os_ << expr;                                                  \
      ::gpucomm::log::write(::gpucomm::log::Level::lvl, gpucomm_log_os_.str()); \
    }                                                                           \
  } while (0)
