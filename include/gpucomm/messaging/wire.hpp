#pragma once
// Encoding and decoding of inbox slots (docs/MESSAGING.md, "Slots on the wire").
//
// Word 0 of a slot is the stamp word: upper half the stamp of its ticket t, (t + 1) mod 2^31 with
// bit 31 set for the LL format; lower half bits 0..3 the kind (WireKind), bits 4..15 the LL payload
// size or the full format's continuation slots, bits 16..17 the communicator's matching mode (the
// receiver's matcher needs no table lookup for it).
//   LL   (<= 20 bytes): every word has the stamp in its upper half; lower halves: kind|size, tag,
//        context id | sender rank << 8, then the payload 4 bytes per word.
//   full: word 1 tag | (context id | sender rank << 8) << 32, word 2 bytes, word 3 the sender's
//        request, word 4 the source's heap offset, words 5..7 zero, payload from byte 64, then the
//        continuation slots. Words 1..7 keep bit 63 clear, so a stale full-format word never
//        carries an LL stamp.
#include <cstdint>

#include "gpucomm/messaging/fn.hpp"
#include "gpucomm/messaging/layout.hpp"

namespace gpucomm::msg::wire {

inline constexpr uint32_t kLLBit = 0x80000000u;

// What a slot says about its message (the sender encodes it, the receiver decodes it).
struct Header {
  uint32_t kind;   // WireKind, with kWireActive for active messages
  uint32_t ncont;  // full format: continuation slots
  int32_t ctx;
  int32_t src;  // the sender's rank in the communicator
  int32_t tag;
  uint32_t sreq;  // rendezvous: the sender's request index
  uint64_t bytes;
  uint64_t offset;                 // rendezvous by get: the source's heap offset
  uint32_t mode;                   // the communicator's Mode
  uint32_t data[kLLMaxBytes / 4];  // LL payload, 4 bytes per word (little-endian)
};

// 4 bytes of a payload of `bytes` bytes from byte `at` (zeros past its end): one load when aligned.
GPUCOMM_MSG_FN uint32_t payload_word(const uint8_t* p, uint64_t bytes, uint32_t at) {
  if (at + 4 <= bytes && (reinterpret_cast<uintptr_t>(p + at) & 3u) == 0)
    return *reinterpret_cast<const uint32_t*>(p + at);
  uint32_t lo = 0;
  for (uint32_t k = 0; k < 4 && at + k < bytes; ++k) lo |= static_cast<uint32_t>(p[at + k]) << (8 * k);
  return lo;
}

// Stores `n` bytes of 4-byte words (little-endian) at `dst`: word stores when aligned.
GPUCOMM_MSG_FN void store_words(char* dst, const uint32_t* w, uint64_t n) {
  uint64_t i = 0;
  if ((reinterpret_cast<uintptr_t>(dst) & 3u) == 0)
    for (; i + 4 <= n; i += 4) *reinterpret_cast<uint32_t*>(dst + i) = w[i / 4];
  for (; i < n; ++i) dst[i] = static_cast<char>(w[i / 4] >> (8 * (i % 4)));
}

GPUCOMM_MSG_FN uint32_t stamp_of(uint64_t ticket) {
  return static_cast<uint32_t>(ticket + 1) & 0x7fffffffu;
}

// Continuation slots of a full-format message of `bytes` bytes.
GPUCOMM_MSG_FN uint32_t cont_slots(uint32_t slot_bytes, uint64_t bytes) {
  const uint64_t first = slot_bytes - kHeaderBytes;
  return bytes <= first ? 0u : static_cast<uint32_t>((bytes - first + slot_bytes - 1) / slot_bytes);
}

GPUCOMM_MSG_FN uint32_t ll_word_count(uint64_t bytes) {
  return 3u + static_cast<uint32_t>((bytes + 3) / 4);
}

GPUCOMM_MSG_FN uint32_t rank_field(int32_t ctx, int32_t src) {
  return static_cast<uint32_t>(ctx) | (static_cast<uint32_t>(src) << 8);
}

// LL word i (0 <= i < ll_word_count(h.bytes)); `payload` holds h.bytes bytes.
GPUCOMM_MSG_FN uint64_t ll_encode(uint64_t ticket, const Header& h, const uint8_t* payload, uint32_t i) {
  uint32_t lo = 0;
  if (i == 0) {
    lo = h.kind | (static_cast<uint32_t>(h.bytes) << 4) | ((h.mode & 3u) << 16);
  } else if (i == 1) {
    lo = static_cast<uint32_t>(h.tag);
  } else if (i == 2) {
    lo = rank_field(h.ctx, h.src);
  } else {
    lo = payload_word(payload, h.bytes, (i - 3) * 4);
  }
  return (static_cast<uint64_t>(stamp_of(ticket) | kLLBit) << 32) | lo;
}

GPUCOMM_MSG_FN uint64_t full_w0(uint64_t ticket, uint32_t kind, uint32_t ncont, uint32_t mode) {
  return (static_cast<uint64_t>(stamp_of(ticket)) << 32) | kind | (ncont << 4) | ((mode & 3u) << 16);
}

// Words 1..7 of the full format (w[0] is left alone).
GPUCOMM_MSG_FN void full_encode(const Header& h, uint64_t* w) {
  w[1] = static_cast<uint64_t>(static_cast<uint32_t>(h.tag)) | (static_cast<uint64_t>(rank_field(h.ctx, h.src)) << 32);
  w[2] = h.bytes;
  w[3] = h.sreq;
  w[4] = h.offset;
  w[5] = w[6] = w[7] = 0;
}

// 0: ticket `ticket` has not arrived in this slot; 1: it has, in the LL format; 2: full format.
GPUCOMM_MSG_FN int arrived(uint64_t w0, uint64_t ticket) {
  const uint32_t hi = static_cast<uint32_t>(w0 >> 32);
  if ((hi & 0x7fffffffu) != stamp_of(ticket)) return 0;
  return (hi & kLLBit) ? 1 : 2;
}

GPUCOMM_MSG_FN bool ll_word_ok(uint64_t w, uint64_t ticket) {
  return static_cast<uint32_t>(w >> 32) == (stamp_of(ticket) | kLLBit);
}

// Decodes the LL words (every one already checked with ll_word_ok); w[0] holds kind and size.
GPUCOMM_MSG_FN void ll_decode(const uint64_t* w, Header& h) {
  const uint32_t w0 = static_cast<uint32_t>(w[0]);
  h.kind = w0 & 15u;
  h.ncont = 0;
  h.bytes = (w0 >> 4) & 0xfffu;
  h.mode = (w0 >> 16) & 3u;
  h.tag = static_cast<int32_t>(static_cast<uint32_t>(w[1]));
  const uint32_t rf = static_cast<uint32_t>(w[2]);
  h.ctx = static_cast<int32_t>(rf & 0xffu);
  h.src = static_cast<int32_t>(rf >> 8);
  h.sreq = 0;
  h.offset = 0;
  for (uint32_t i = 0; i < kLLMaxBytes / 4; ++i) h.data[i] = static_cast<uint32_t>(w[3 + i]);
}

GPUCOMM_MSG_FN void full_decode(uint64_t w0, const uint64_t* w, Header& h) {
  const uint32_t lo = static_cast<uint32_t>(w0);
  h.kind = lo & 15u;
  h.ncont = (lo >> 4) & 0xfffu;
  h.mode = (lo >> 16) & 3u;
  h.tag = static_cast<int32_t>(static_cast<uint32_t>(w[1]));
  const uint32_t rf = static_cast<uint32_t>(w[1] >> 32);
  h.ctx = static_cast<int32_t>(rf & 0xffu);
  h.src = static_cast<int32_t>(rf >> 8);
  h.bytes = w[2];
  h.sreq = static_cast<uint32_t>(w[3]);
  h.offset = w[4];
}

}  // namespace gpucomm::msg::wire
