#pragma once
// Helpers shared by gpucomm's GoogleTest suites.
#include <gtest/gtest.h>

#include <cstdint>
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
