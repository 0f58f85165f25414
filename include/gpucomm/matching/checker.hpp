#pragma once
// Judging results that need not equal the reference: unordered engines may pick any legal
// matching, and partitioned engines work on one queue per (communicator, source).
#include <string>
#include <vector>

#include "gpucomm/matching/batch.hpp"

namespace gpucomm::matching {

// Empty string when `out` is a legal matching of `b` without ordering guarantees:
// every match pairs a message and a receive of the batch with compatible envelopes and at least
// one of them new; no message or receive is used twice; the queues hold exactly the unmatched
// entries; and it is maximal: no unmatched message and unmatched receive, one of them new, are
// compatible. Otherwise says what is wrong. Handles must be unique among messages and among
// receives.
std::string check_legal_matching(const Batch& b, const Outcome& out);

// Splits a batch into one batch per (communicator, source), order kept. Throws
// gpucomm::Error(invalid_argument) when a receive uses ANY_SOURCE.
struct Partition {
  int32_t comm;
  int32_t src;
  Batch batch;
};
std::vector<Partition> partition_by_source(const Batch& b);

// Rebuilds the whole outcome from the partitions' outcomes: phase-1 matches in message arrival
// order, phase-2 matches in receive post order, queues in global order.
Outcome merge_partitions(const Batch& whole, const std::vector<Outcome>& parts);

}  // namespace gpucomm::matching
