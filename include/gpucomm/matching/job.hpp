#pragma once
// The POD handle a matching engine works on: one pair of queues in GPU memory and one batch of
// new messages and receives. Host code fills it; device engines take it by value.
#include <cstdint>

#include "gpucomm/matching/envelope.hpp"

namespace gpucomm::matching {

// Status bits an engine ORs into *MatchJob::status. Bits below kStatusInfo are errors.
enum : uint32_t {
  kStatusUmqOverflow = 1u << 0,  // unmatched messages did not fit the UMQ; the excess was dropped
  kStatusPrqOverflow = 1u << 1,  // unmatched receives did not fit the PRQ; the excess was dropped
  kStatusUnexpected = 1u << 2,   // no-unexpected mode: a message found no posted receive
  kStatusWildcard = 1u << 3,     // a wildcard the engine does not support; nothing was changed
  kStatusTooLong = 1u << 4,      // a queue beyond the engine's limit; nothing was changed
  kStatusNoTable = 1u << 5,      // hash engine: the job's table is too small; nothing was changed
  kStatusInfo = 1u << 8,
  kInfoOpenAddressing = 1u << 8,  // hash engine picked open addressing for some phase
  kInfoChained = 1u << 9,         // hash engine picked the chained batch table for some phase
};

// Longest target queue each engine accepts in one phase.
inline constexpr uint32_t kBlockMaxTargets = 65536;   // block ballot-matrix engine (bitmask in shared memory)
inline constexpr uint32_t kWarpMaxTargets = 2048;     // warp engine (direct path and tiles of 64)
inline constexpr uint32_t kDirectMaxTargets = 64;     // direct path: no matrix, one warp
inline constexpr uint32_t kHashSharedTargets = 1024;  // hash tables in shared memory up to this many targets

// Hash-table strategies of the unordered engine (hash_match_device.cuh).
enum class HashStrategy : uint32_t { automatic = 0, linear_probing = 1, double_hashing = 2, chained = 3 };

// Hash-table storage in global memory for phases with more than kHashSharedTargets targets:
// 7 words per slot (slots a power of two, at least twice the targets) plus one word per target.
struct HashTableStorage {
  uint32_t* words = nullptr;
  uint32_t slots = 0;
  uint32_t bucket_cap = 0;
};

struct MatchJob {
  Envelope* umq;  // capacity umq_cap; *umq_size entries in arrival order
  uint32_t* umq_size;
  uint32_t umq_cap;
  Envelope* prq;  // capacity prq_cap; *prq_size entries in post order
  uint32_t* prq_size;
  uint32_t prq_cap;
  const Envelope* msgs;  // new messages, arrival order
  uint32_t n_msgs;
  const Envelope* recvs;  // new receives, post order
  uint32_t n_recvs;
  Match* matches;  // room for n_msgs + n_recvs; phase-1 matches, then phase-2
  uint32_t* n_matches;
  int32_t* scratch;        // room for max(n_msgs, n_recvs) ints
  uint32_t* status;        // status bits, OR-ed
  HashTableStorage table;  // hash engine only
};

}  // namespace gpucomm::matching
