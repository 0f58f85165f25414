#pragma once
// Random MPI-safe point-to-point programs for the differential test (docs/MESSAGING.md, "Tests").
//
// Every PE generates the same program from a shared seed. A round is a set of messages (random
// communicator, source, destination, tag from a small range so that envelopes repeat, size across
// every protocol threshold, heap or private buffer) and, at every destination, one receive per
// message in a random post order, interleaved with the PE's sends in a random order. Wildcards are
// chosen per (destination, communicator) so that the program is safe whatever the arrival order:
// ANY_TAG for all the receives of one source, ANY_SOURCE for all the receives of one tag, or both
// for all receives; what a wildcard receive can match is then taken by receives of the same
// pattern only. Receives without ANY_SOURCE have one legal outcome, which the matching oracle
// (match_reference) computes; ANY_SOURCE receives are checked for legality (compatible envelope,
// every message exactly once, no two messages of one source crossing two receives that both fit
// the earlier message).
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "gpucomm/messaging/types.hpp"

namespace gpucomm::msgtest {

// One communicator of the test as the generator sees it.
struct CommSpec {
  msg::Mode mode;
  std::vector<int> members;  // world ranks, in communicator rank order
};

struct MsgSpec {
  int id;
  int comm;      // index into the communicators
  int src, dst;  // communicator ranks
  int src_pe, dst_pe;
  int tag;
  size_t bytes;
  bool heap;  // the send buffer is in the symmetric heap (rendezvous by get)
  int seq;    // send order among the messages of (src_pe, dst_pe)
};

struct RecvSpec {
  int id;
  int comm;
  int dst_pe;
  int src;  // communicator rank or kAnySource
  int tag;  // or kAnyTag
  size_t cap;
  int expect;  // the message the oracle assigns (receives without ANY_SOURCE), else -1
};

struct Op {
  enum Kind { isend, irecv, recv } kind;
  int index;  // message or receive id
};

struct Round {
  std::vector<MsgSpec> msgs;
  std::vector<RecvSpec> recvs;
  std::vector<std::vector<Op>> ops;  // per PE, in program order
  std::vector<int> wait_style;       // per PE: 0 waitall, 1 waitany, 2 test loops
};

struct GenOptions {
  int max_msgs_per_pe = 6;
  int tags = 3;
  double big_share = 0.02;  // messages beyond the eager limit of several chunks
  size_t big_bytes = 600000;
};

Round make_round(std::mt19937_64& rng, int npes, const std::vector<CommSpec>& comms, const GenOptions& g);

// Problems of one PE's receives in a round, as text (empty when all is well). `got[r]` is the
// message id receive r took (-1 when unknown) and `status` its Status.
std::vector<std::string> check_round(const Round& r, int me, const std::vector<int>& got,
                                     const std::vector<msg::Status>& status);

}  // namespace gpucomm::msgtest
