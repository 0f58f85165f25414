#pragma once
// Envelopes of messages and receives, shared by host and device code.
#include <cstdint>

#include "gpucomm/base/hd.hpp"

namespace gpucomm::matching {

// Wildcards, allowed in receives only.
inline constexpr int32_t kAnySource = -1;
inline constexpr int32_t kAnyTag = -1;

// One queue entry: a message's envelope (comm, source, tag, never wildcards) or a receive's
// (source and tag may be wildcards). `handle` is the caller's cookie (request id, buffer slot);
// engines copy it into matches and never interpret it. 16 bytes: one vector load on the GPU.
struct alignas(16) Envelope {
  int32_t comm;
  int32_t src;
  int32_t tag;
  uint32_t handle;
};

// A matched pair, by the handles of the message and the receive.
struct Match {
  uint32_t msg;
  uint32_t recv;
};

GPUCOMM_HD bool compatible(const Envelope& recv, const Envelope& msg) {
  return recv.comm == msg.comm && (recv.src == kAnySource || recv.src == msg.src) &&
         (recv.tag == kAnyTag || recv.tag == msg.tag);
}

GPUCOMM_HD bool has_wildcard(const Envelope& recv) {
  return recv.src == kAnySource || recv.tag == kAnyTag;
}

GPUCOMM_HD bool same_key(const Envelope& a, const Envelope& b) {
  return a.comm == b.comm && a.src == b.src && a.tag == b.tag;
}

}  // namespace gpucomm::matching
