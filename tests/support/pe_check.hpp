#pragma once
// What the multi-process PE programs of the tests share: a CHECK that counts failures and prints
// them, a seed that is fresh each run (GPUCOMM_TEST_SEED replays one) and different per rank,
// and a strict parser for their integer arguments.
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

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
