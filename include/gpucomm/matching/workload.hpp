#pragma once
// Synthetic matching workloads for tests and benchmarks.
#include <cstdint>
#include <random>

#include "gpucomm/matching/batch.hpp"

namespace gpucomm::matching {

struct WorkloadSpec {
  uint32_t umq = 0, prq = 0, msgs = 0, recvs = 0;  // entries of each list
  int32_t comms = 1, sources = 8, tags = 8;        // keys are drawn from these ranges
  double any_source = 0.0;                         // share of receives with ANY_SOURCE
  double any_tag = 0.0;                            // share of receives with ANY_TAG
  double multiplicity = 0.0;                       // share of entries given one hot key
};

// Random lists; message handles are 0.. over umq then msgs, receive handles 0.. over prq then
// recvs. The queues need not be consistent (a UMQ entry may fit a PRQ entry): the semantics
// never pair two old entries.
Batch random_batch(const WorkloadSpec& spec, std::mt19937_64& rng);

// Benchmark shape: `n` posted receives, then `n` messages that each fit one of them.
// best: messages arrive in post order (each match at the PRQ head); worst: reverse order (each
// at the tail); average: random order. A share `multiplicity` of the pairs share one key.
// With `unexpected`, the roles swap: n messages wait in the UMQ and n receives are posted.
enum class Order { best, average, worst };
const char* order_name(Order o);
Batch paired_batch(uint32_t n, Order order, double multiplicity, bool unexpected, std::mt19937_64& rng);

}  // namespace gpucomm::matching
