#pragma once
// What the messaging PE scenarios share: the payload pattern every byte of a message is checked
// against, a parser for the scenario options, and the scenario entry points.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gpucomm/messaging/messenger.hpp"
#include "pe_check.hpp"

namespace gpucomm::msgtest {

// Byte `i` of the message `(src, dst, tag, seq)`: every byte depends on all of them.
inline uint8_t pattern(uint64_t key, uint64_t i) {
  uint64_t x = (key + i) * 0x9e3779b97f4a7c15ULL;
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17) ^ i);
}
inline uint64_t msg_key(int src, int dst, int tag, uint64_t seq) {
  return (static_cast<uint64_t>(src) << 48) ^ (static_cast<uint64_t>(dst) << 32) ^
         (static_cast<uint64_t>(static_cast<uint32_t>(tag)) << 12) ^ (seq * 0x100000001b3ULL);
}
inline void fill(void* buf, size_t n, uint64_t key) {
  auto* b = static_cast<uint8_t*>(buf);
  for (size_t i = 0; i < n; ++i) b[i] = pattern(key, i);
}
// Index of the first wrong byte, or -1.
inline long long first_bad(const void* buf, size_t n, uint64_t key) {
  const auto* b = static_cast<const uint8_t*>(buf);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != pattern(key, i)) return static_cast<long long>(i);
  return -1;
}

// One seed for the whole job (rank 0 draws it, or takes GPUCOMM_TEST_SEED), so that every PE
// generates the same random program. Printed on failure: GPUCOMM_TEST_SEED=<seed> replays.
uint64_t shared_seed(Runtime& rt);
uint64_t last_seed();

// Scenario options: `--name value` pairs after the scenario name.
struct Options {
  std::vector<std::string> args;
  int64_t get(const char* name, int64_t fallback) const;
  std::string text(const char* name, const std::string& fallback) const;
  bool flag(const char* name) const;
};

void scenario_exchange(Runtime& rt, const Options& o);
void scenario_order(Runtime& rt, const Options& o);
void scenario_random(Runtime& rt, const Options& o);
void scenario_stress(Runtime& rt, const Options& o);
void scenario_unsafe(Runtime& rt, const Options& o);
void scenario_bad_input(Runtime& rt, const Options& o);
void scenario_api(Runtime& rt, const Options& o);
void scenario_am(Runtime& rt, const Options& o);

}  // namespace gpucomm::msgtest
