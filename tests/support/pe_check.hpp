#pragma once
// What the multi-process PE programs of the tests share: a CHECK that counts failures and prints
// them, and a seed that is fresh each run (GPUCOMM_TEST_SEED replays one) and different per rank.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
