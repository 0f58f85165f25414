#pragma once
// One matching step on the host side: the queues before it, the new messages and receives,
// and what the step produced. See docs/MATCHING.md for the reference semantics.
#include <string>
#include <vector>

#include "gpucomm/matching/envelope.hpp"

namespace gpucomm::matching {

struct Batch {
  std::vector<Envelope> umq;    // unexpected messages, arrival order
  std::vector<Envelope> prq;    // posted receives, post order
  std::vector<Envelope> msgs;   // newly arrived messages, arrival order
  std::vector<Envelope> recvs;  // newly posted receives, post order
};

struct Outcome {
  // Phase 1 (new messages, arrival order) then phase 2 (new receives, post order).
  std::vector<Match> matches;
  std::vector<Envelope> umq;
  std::vector<Envelope> prq;
};

// Largest target queue a batch can present to an engine in either phase.
inline size_t max_targets_of(const Batch& b) {
  size_t p1 = b.prq.size(), p2 = b.umq.size() + b.msgs.size();
  return p1 > p2 ? p1 : p2;
}

// Empty string when equal; otherwise says where the two first differ.
std::string describe_difference(const Outcome& expected, const Outcome& actual);

// Short text form of a batch, for failure messages (truncated beyond `limit` entries a queue).
std::string describe(const Batch& b, size_t limit = 16);

}  // namespace gpucomm::matching
