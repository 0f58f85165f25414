#include "gpucomm/core/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "gpucomm/core/error.hpp"

namespace gpucomm::log {
namespace {
Level initial_level() {
  Level l = Level::warn;
  if (const char* v = std::getenv("GPUCOMM_LOG_LEVEL")) {
    if (!parse_level(v, &l)) {
      std::fprintf(stderr, "[gpucomm] warning: GPUCOMM_LOG_LEVEL='%s' is not one of error, warn, info, debug, trace\n",
                   v);
    }
  }
  return l;
}
std::atomic<int>& level_ref() {
  static std::atomic<int> lvl{static_cast<int>(initial_level())};
  return lvl;
}
const char* tag(Level l) {
  switch (l) {
    case Level::error:
      return "error";
    case Level::warn:
      return "warn";
    case Level::info:
      return "info";
    case Level::debug:
      return "debug";
    case Level::trace:
      return "trace";
  }
  return "?";
}
}  // namespace

Level level() noexcept {
  return static_cast<Level>(level_ref().load(std::memory_order_relaxed));
}
void set_level(Level l) noexcept {
  level_ref().store(static_cast<int>(l));
}
bool enabled(Level l) noexcept {
  return static_cast<int>(l) <= level_ref().load(std::memory_order_relaxed);
}

bool parse_level(const std::string& text, Level* out) noexcept {
  static const struct {
    const char* name;
    Level l;
  } table[] = {{"error", Level::error}, {"warn", Level::warn},   {"warning", Level::warn},
               {"info", Level::info},   {"debug", Level::debug}, {"trace", Level::trace}};
  for (const auto& e : table) {
    if (text == e.name) {
      *out = e.l;
      return true;
    }
  }
  return false;
}

void write(Level l, const std::string& msg) {
  static std::mutex mu;
  char prefix[64];
  int rank = process_rank();
  if (rank >= 0) {
    std::snprintf(prefix, sizeof prefix, "[gpucomm %d/%d %s]", rank, process_size(), tag(l));
  } else {
    std::snprintf(prefix, sizeof prefix, "[gpucomm pid %d %s]", static_cast<int>(getpid()), tag(l));
  }
  std::lock_guard<std::mutex> g(mu);
  std::fprintf(stderr, "%s %s\n", prefix, msg.c_str());
  std::fflush(stderr);
}

}  // namespace gpucomm::log
