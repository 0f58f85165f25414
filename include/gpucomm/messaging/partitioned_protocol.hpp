#pragma once
// The steps of partitioned point-to-point (docs/MESSAGING.md, "Partitioned communication"), written
// once as templates over a memory backend B and a cooperation level C; the device backend
// (partitioned_device.cuh) runs them in kernels, the host backend (src/messaging/partitioned.cpp)
// on host threads of both PE kinds. What a backend offers:
//
//   group     leader(c), bcast(c, v) (the leader's value to the group, synchronizing)
//   own words load(p) (acquire), exchange(p, v) (acq_rel), add(p, v) (release; one thread), on
//             this PE's heap words at system scope
//   heap      at<T>(offset): this PE's symmetric address of a heap offset
//   remote    put_signal(c, dst, src, n, sig, v, pe): blocking (src reusable on return); whoever
//             sees sig == v sees the data
//
// Protocol of one round r (the words are part::k*; who writes which: partitioned_handle.hpp):
//   receiver  start: kRound = r (own words), then kCts = r at the sender (release): its buffer may
//             be written from now on;
//   sender    pready(i): kReady[i] = r (exchange: a second mark in the round is an error), waits
//             until the receiver's kCts shows r (acquire), puts partition i into the receiver's
//             buffer and sets the receiver's flag [i] = r (put_signal), then adds 1 to kSent;
//   receiver  parrived(j): the flags of the send partitions covering j hold r (acquire);
//   both      wait: the sender until kSent = r x partitions, the receiver until every flag holds r.
// Flags and kCts only grow (they carry the round), so nothing is reset between rounds; the sender
// writes round r + 1 only after kCts = r + 1, which the receiver stores only after its round r
// completed.
#include <cstdint>

#include "gpucomm/messaging/fn.hpp"
#include "gpucomm/messaging/partitioned_handle.hpp"

namespace gpucomm::msg::part {

// The argument checks every pready and parrived makes, on the host and on the device: the handle,
// its kind, the partition index, and a started request. `round` is the owner's kRound.
GPUCOMM_MSG_FN PartFault check_call(const PartitionedHandle& h, PartKind want, uint64_t partition, uint64_t round) {
  if (h.magic != kPartMagic || h.version != kPartVersion || h.bytes != sizeof(PartitionedHandle))
    return PartFault::bad_handle;
  if (h.kind != want) return PartFault::wrong_kind;
  if (partition >= h.partitions) return PartFault::bad_partition;
  if (round == 0) return PartFault::not_started;
  return PartFault::none;
}

// Marks send partition i ready in round r (one thread); returns the round it was marked in before
// (r: marked twice).
template <class B>
GPUCOMM_MSG_FN uint64_t mark_ready(const B& b, const PartitionedHandle& h, uint64_t r, uint64_t i) {
  return b.exchange(&h.words[kReady + i], r);
}

// Sends partition i of round r (the group; the receiver started r): the bytes straight into the
// receiver's buffer (or its staging area), its flag [i] = r, then the count of sent partitions.
template <class B, class C>
GPUCOMM_MSG_FN void send_partition(const B& b, C c, const PartitionedHandle& h, uint64_t r, uint64_t i) {
  uint64_t dst = 0, flags = 0;
  if (b.leader(c)) {
    dst = b.load(&h.words[kDstOff]);
    flags = b.load(&h.words[kFlagsOff]);
  }
  dst = b.bcast(c, dst);
  flags = b.bcast(c, flags);
  const uint64_t n = h.partition_bytes;
  b.put_signal(c, b.template at<char>(dst) + i * n, h.buf + i * n, n, b.template at<uint64_t>(flags) + i, r, h.peer);
  if (b.leader(c)) b.add(&h.words[kSent], 1);
}

// What `missing` returns when nothing is missing, and before the match.
inline constexpr uint64_t kAllArrived = ~uint64_t(0);
inline constexpr uint64_t kNotMatched = ~uint64_t(0) - 1;

// The first send partition covering receive partition j whose flag does not hold round r yet
// (one thread; acquire loads, so once it returns kAllArrived the partition's bytes are visible).
template <class B>
GPUCOMM_MSG_FN uint64_t missing(const B& b, const PartitionedHandle& h, uint64_t r, uint64_t j) {
  if (b.load(&h.words[kMatched]) == 0) return kNotMatched;
  const Cover cv = cover(j, h.partition_bytes, b.load(&h.words[kPeerBytes]));
  const uint64_t* flags = b.template at<uint64_t>(b.load(&h.words[kFlagsOff]));
  for (uint64_t i = cv.lo; i <= cv.hi; ++i)
    if (b.load(&flags[i]) < r) return i;
  return kAllArrived;
}

}  // namespace gpucomm::msg::part
