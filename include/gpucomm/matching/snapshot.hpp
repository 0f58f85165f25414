#pragma once
// Queue snapshots (the contents of a rank's UMQ and PRQ at one moment, for instance exported
// by the trace toolkit) and their replay as matching batches. Format in docs/MATCHING.md.
#include <string>
#include <vector>

#include "gpucomm/matching/batch.hpp"

namespace gpucomm::matching {

struct Snapshot {
  std::string app;
  int64_t rank = -1;
  std::vector<Envelope> umq;  // messages, arrival order; handles 0..
  std::vector<Envelope> prq;  // receives, post order, -1 for a wildcard; handles 0..
};

// Parses `{"snapshots":[{"app":..,"rank":..,"umq":[[comm,src,tag],...],"prq":[...]}]}`.
// Throws gpucomm::Error(invalid_argument) naming the file and what is wrong.
std::vector<Snapshot> parse_snapshots(const std::string& json_text, const std::string& origin = "<text>");
// Reads either that JSON or the trace toolkit's binary snapshot file (magic "GCQSNAP1",
// include/gpucomm/trace/queue_snapshot.hpp), telling them apart by the first bytes.
std::vector<Snapshot> read_snapshots(const std::string& path);

// Replays: the snapshot's UMQ drained by one receive per message with the message's envelope,
// posted in the UMQ's order; and the PRQ drained by one message per receive (wildcards replaced
// by source 0 / tag 0), arriving in the PRQ's order.
Batch drain_umq(const Snapshot& s);
Batch drain_prq(const Snapshot& s);

}  // namespace gpucomm::matching
