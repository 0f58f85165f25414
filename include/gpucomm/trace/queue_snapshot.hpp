#pragma once
// Matching-queue snapshots: the contents of one rank's unexpected-message queue (UMQ) and
// posted-receive queue (PRQ) at one instant of a trace replay, for the matching engines to
// replay. File format (little-endian, docs/TRACES.md "Queue snapshot format"):
//
//   header   : char magic[8] = "GCQSNAP1"; uint32 version = 1; uint32 snapshot_count
//   snapshot : int32 rank; uint32 reason; double time_s; uint32 umq_count; uint32 prq_count;
//              then umq_count + prq_count envelopes, UMQ first, each queue in queue order
//   envelope : int32 comm; int32 source; int32 tag; uint32 flags (0); int64 bytes
//
// In the UMQ, `source` and `tag` are the message's; in the PRQ they are the posted receive's
// and may be -1 (MPI_ANY_SOURCE / MPI_ANY_TAG). `bytes` is -1 where the datatype size is unknown.
// `time_s` counts from the earliest call of the run. `reason` 1: the rank's largest UMQ+PRQ.
#include <cstdint>
#include <string>
#include <vector>

namespace gpucomm::trace {

inline constexpr int32_t kSnapshotAny = -1;

struct QueueEnvelope {
  int32_t comm = 0;
  int32_t source = 0;
  int32_t tag = 0;
  int64_t bytes = -1;
  bool operator==(const QueueEnvelope&) const = default;
};

enum class SnapshotReason : uint32_t { rank_peak = 1 };

struct QueueSnapshot {
  int32_t rank = 0;
  SnapshotReason reason = SnapshotReason::rank_peak;
  double time_s = 0;
  std::vector<QueueEnvelope> umq;
  std::vector<QueueEnvelope> prq;
  bool operator==(const QueueSnapshot&) const = default;
};

// Writes/reads a snapshot file; errors raise gpucomm::Error naming the file (and byte offset).
void write_queue_snapshots(const std::string& path, const std::vector<QueueSnapshot>& snapshots);
std::vector<QueueSnapshot> read_queue_snapshots(const std::string& path);

// Whether a message envelope matches a posted receive (MPI rules: same communicator, source
// and tag equal or wildcards in the receive).
inline bool envelope_matches(const QueueEnvelope& posted, const QueueEnvelope& message) {
  return posted.comm == message.comm && (posted.source == kSnapshotAny || posted.source == message.source) &&
         (posted.tag == kSnapshotAny || posted.tag == message.tag);
}

}  // namespace gpucomm::trace
