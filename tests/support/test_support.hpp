#pragma once
// Helpers shared by gpucomm's GoogleTest suites.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

namespace gpucomm::testing {

// Number of usable CUDA devices (0 without a driver or GPU).
int gpu_count();

// A fresh seed each run unless GPUCOMM_TEST_SEED is set; printed by the SEEDED_TEST helpers
// so that a failure can be replayed.
uint64_t test_seed();
std::string seed_note(uint64_t seed);

}  // namespace gpucomm::testing

// Skips the current test with a visible reason when fewer than n GPUs exist.
#define GPUCOMM_REQUIRE_GPUS(n)                                                     \
  do {                                                                              \
    int have_ = ::gpucomm::testing::gpu_count();                                    \
    if (have_ < (n)) GTEST_SKIP() << "needs " << (n) << " GPU(s), found " << have_; \
  } while (0)

// Skips the current test with the reason under compute-sanitizer (scripts/run_under_sanitizer.py
// sets GPUCOMM_UNDER_SANITIZER=TOOL): for tests that need concurrent kernels (the tools serialize
// kernels) or that trap on purpose (the tools report every trap).
#define GPUCOMM_SKIP_UNDER_SANITIZER(reason)                                   \
  do {                                                                         \
    if (const char* tool_ = std::getenv("GPUCOMM_UNDER_SANITIZER"))            \
      GTEST_SKIP() << "under compute-sanitizer " << tool_ << ": " << (reason); \
  } while (0)
