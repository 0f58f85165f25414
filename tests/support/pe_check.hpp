#pragma once
// What the multi-process PE programs of the tests share: a CHECK that counts failures and prints
// them, a seed that is fresh each run (GPUCOMM_TEST_SEED replays one) and different per rank,
// a strict parser for their integer arguments, and the "PE OK" line a PE prints on success.
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace gpucomm::testing {

inline int g_pe_failures = 0;

inline uint64_t pe_seed(int rank) {
  static const uint64_t base = [] {
    if (const char* s = std::getenv("GPUCOMM_TEST_SEED")) return static_cast<uint64_t>(std::strtoull(s, nullptr, 0));
    return static_cast<uint64_t>((static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                 static_cast<uint64_t>(getpid()));
  }();
  return base * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(rank);
}

// The decimal integer `text` (all of it) of a command-line argument or environment variable
// named `what`; anything else ends the program with status 2 and a message naming `what`.
inline int64_t arg_int(const char* text, const char* what) {
  int64_t v = 0;
  const char* end = text + std::strlen(text);
  auto [stop, ec] = std::from_chars(text, end, v);
  if (ec != std::errc() || stop != end) {
    std::fprintf(stderr, "%s: '%s' is not an integer\n", what, text);
    std::exit(2);
  }
  return v;
}

// The success line of a PE ("PE OK rank R of N: WHAT", or "PE OK" after the runtime is gone),
// flushed at once: in a failed job the launcher stops a PE that has not exited after its grace
// period, and a line still in stdout's buffer would be lost with it.
inline void print_pe_ok(int rank, int size, const std::string& what) {
  std::printf("PE OK rank %d of %d: %s\n", rank, size, what.c_str());
  std::fflush(stdout);
}
inline void print_pe_ok() {
  std::printf("PE OK\n");
  std::fflush(stdout);
}

}  // namespace gpucomm::testing

#define PE_CHECK(cond, ...)                              \
  do {                                                   \
    if (!(cond)) {                                       \
      std::fprintf(stderr, "CHECK failed: %s: ", #cond); \
      std::fprintf(stderr, __VA_ARGS__);                 \
      std::fprintf(stderr, "\n");                        \
      ++::gpucomm::testing::g_pe_failures;               \
    }                                                    \
  } while (0)
