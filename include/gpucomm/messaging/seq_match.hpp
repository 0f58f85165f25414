#pragma once
// The sequential matcher of the messaging layer: one thread matches one envelope against a
// communicator's queues with the reference semantics of docs/MATCHING.md (a message takes the
// earliest compatible posted receive, a receive the earliest compatible unexpected message;
// unmatched ones join the other queue in order). Host-memory PEs and thread-level device callers
// use it; warp and block callers use the GPU engines on the same arrays, so either may run next.
#include <cstdint>

#include "gpucomm/matching/envelope.hpp"
#include "gpucomm/messaging/fn.hpp"

namespace gpucomm::msg::seq {

using matching::Envelope;

GPUCOMM_MSG_FN void remove_at(Envelope* q, uint32_t* n, uint32_t i) {
  for (uint32_t j = i + 1; j < *n; ++j) q[j - 1] = q[j];
  *n -= 1;
}

// Index of the earliest entry of q[0..n) that `probe` fits (probe is a receive when
// kProbeIsRecv), or -1.
template <bool kProbeIsRecv>
GPUCOMM_MSG_FN int32_t find(const Envelope* q, uint32_t n, const Envelope& probe) {
  for (uint32_t i = 0; i < n; ++i) {
    const bool ok = kProbeIsRecv ? matching::compatible(probe, q[i]) : matching::compatible(q[i], probe);
    if (ok) return static_cast<int32_t>(i);
  }
  return -1;
}

// A new message against the PRQ: returns the matched receive's handle (removed from the PRQ), or
// -1 after appending the message to the UMQ (the caller checked that it has room).
GPUCOMM_MSG_FN int32_t match_message(Envelope* prq, uint32_t* prq_n, Envelope* umq, uint32_t* umq_n,
                                     const Envelope& msg) {
  const int32_t i = find<false>(prq, *prq_n, msg);
  if (i >= 0) {
    const auto h = static_cast<int32_t>(prq[i].handle);
    remove_at(prq, prq_n, static_cast<uint32_t>(i));
    return h;
  }
  umq[(*umq_n)++] = msg;
  return -1;
}

// A new receive against the UMQ: the matched message's handle (removed), or -1 after appending the
// receive to the PRQ.
GPUCOMM_MSG_FN int32_t match_receive(Envelope* umq, uint32_t* umq_n, Envelope* prq, uint32_t* prq_n,
                                     const Envelope& recv) {
  const int32_t i = find<true>(umq, *umq_n, recv);
  if (i >= 0) {
    const auto h = static_cast<int32_t>(umq[i].handle);
    remove_at(umq, umq_n, static_cast<uint32_t>(i));
    return h;
  }
  prq[(*prq_n)++] = recv;
  return -1;
}

}  // namespace gpucomm::msg::seq
