#pragma once
// Endpoints: the owner's matching state and the matching itself (docs/MESSAGING.md, "Endpoints").
// Pure logic on a state the owning group keeps in its own memory (shared memory on the GPU, the
// owner's memory on host PEs); no shared word is touched here, so the same code runs on both and
// is checked against the reference matcher on the host (tests/messaging/test_ep_matcher.cpp).
//
// Posted receives sit in FIFO bins keyed by what they name: (source, tag) hashed into kBuckets
// bins, (ANY, tag) and (source, ANY) into kBuckets each, and one (ANY, ANY) bin; every receive
// carries its post sequence number. A message (s, t) can only be taken by a receive of the four
// bins covering its envelope, so it looks at their first compatible entries (a bin may hold other
// keys that share its hash) and takes the one posted first: MPI's earliest compatible receive, at
// a cost that does not grow with the number of receives posted. Unexpected messages are kept in
// arrival order (their payload stays in the ring, stored once); a receive takes the first
// compatible one.
#include <cstdint>

#include "gpucomm/messaging/endpoints_layout.hpp"
#include "gpucomm/messaging/fn.hpp"

// The endpoint code is small: inlined into the calling kernel, the handle's fields stay kernel
// parameters (a function that took the handle's address would copy it to the stack).
#ifndef GPUCOMM_EP_FN
#if defined(__CUDACC__)
#define GPUCOMM_EP_FN __host__ __device__ __forceinline__
#else
#define GPUCOMM_EP_FN inline
#endif
#endif

namespace gpucomm::msg::ep {

inline constexpr uint16_t kNone = 0xffffu;

enum : uint8_t { kRecvFree = 0, kRecvPosted = 1, kRecvDone = 2 };

// A receive of the owner: linked in its bin while posted; holds its status once done.
struct Recv {
  void* buf;
  uint32_t capacity;
  int32_t src;    // posted: the source or kAnySource; done: the message's source
  int32_t tag;    // posted: the tag or kAnyTag; done: the message's tag
  uint32_t seq;   // posted: post order; done: the message's length
  uint16_t next;  // posted: next in the bin
  uint8_t state;
  uint8_t error;  // done: kErrNone or kErrTruncated
};

// A drained message that found no receive. bytes == kGone: taken (removed lazily).
struct Unexpected {
  uint64_t ticket;
  int32_t tag;
  uint16_t src;
  uint16_t bytes;
};
inline constexpr uint16_t kGone = 0xffffu;

// What the owner keeps per sender PE: the next ticket to read, the consumed prefix (`base`, the
// credit it returns), the tickets consumed past it (bit i: base + i), and the last credit returned.
struct SenderState {
  uint64_t next;
  uint64_t base;
  uint64_t mask;
  uint64_t credited;
};

// kRecvs: receives posted or completed and not yet waited for; kPes: the most PEs of a job it
// serves; kUnexp: unexpected messages held (a power of two; when full, the rings keep the rest
// and their senders wait for credits); kBuckets: bins per keyed class (a power of two).
template <uint32_t kRecvs = 64, uint32_t kPes = 8, uint32_t kUnexp = 64, uint32_t kBuckets = 16>
struct OwnerState {
  static_assert(kRecvs >= 1 && kRecvs < kNone, "receives are indexed by 16 bits");
  static_assert((kUnexp & (kUnexp - 1)) == 0 && (kBuckets & (kBuckets - 1)) == 0, "powers of two");
  static constexpr uint32_t recvs = kRecvs, pes = kPes, unexp = kUnexp, buckets = kBuckets;
  static constexpr uint32_t bins = 3 * kBuckets + 1;

  SenderState sender[kPes];
  Recv recv[kRecvs];
  Unexpected umq[kUnexp];
  uint16_t bin_head[bins];
  uint16_t bin_tail[bins];
  uint16_t free_ids[kRecvs];    // the free entries: free_ids[0 .. kRecvs - held), a stack (a warp pops 32 at once)
  uint64_t stage[32][4];        // a warp's drained records (their first four words)
  uint16_t taken[32];           // a warp's batch: the receive each record took (kNone: unexpected)
  uint32_t umq_head, umq_tail;  // arrival counters; entries [head, tail) live or gone
  uint32_t post_seq;
  uint32_t posted;       // receives in bins
  uint32_t in_class[4];  // of them: exact, (ANY, tag), (source, ANY), (ANY, ANY) (bin_class)
  uint32_t held;         // receives not free (posted or done and not yet waited for)
  int32_t ep;            // the endpoint owned, -1 when closed
  uint32_t senders;
};

GPUCOMM_EP_FN uint32_t mix(uint32_t v) {
  v ^= v >> 16;
  v *= 0x7feb352du;
  v ^= v >> 15;
  return v;
}

// The bin of a receive naming (src, tag), wildcards included.
template <class S>
GPUCOMM_EP_FN uint32_t bin_of(int32_t src, int32_t tag) {
  constexpr uint32_t m = S::buckets - 1;
  if (src != kAnySource && tag != kAnyTag)
    return mix(static_cast<uint32_t>(src) * 0x9e3779b1u ^ static_cast<uint32_t>(tag)) & m;
  if (src == kAnySource && tag != kAnyTag) return S::buckets + (mix(static_cast<uint32_t>(tag)) & m);
  if (src != kAnySource) return 2 * S::buckets + (mix(static_cast<uint32_t>(src)) & m);
  return 3 * S::buckets;
}

GPUCOMM_EP_FN bool compatible(int32_t rsrc, int32_t rtag, int32_t src, int32_t tag) {
  return (rsrc == kAnySource || rsrc == src) && (rtag == kAnyTag || rtag == tag);
}

template <class S>
GPUCOMM_EP_FN void init(S& st, int32_t ep, uint32_t senders) {
  for (uint32_t i = 0; i < S::recvs; ++i) {
    st.recv[i].state = kRecvFree;
    st.free_ids[i] = static_cast<uint16_t>(S::recvs - 1 - i);  // entry 0 taken first
  }
  for (uint32_t i = 0; i < S::bins; ++i) st.bin_head[i] = st.bin_tail[i] = kNone;
  st.umq_head = st.umq_tail = 0;
  st.post_seq = 0;
  st.posted = 0;
  for (uint32_t& c : st.in_class) c = 0;
  st.held = 0;
  st.ep = ep;
  st.senders = senders;
}

// A free receive entry, or kNone when kRecvs are held.
template <class S>
GPUCOMM_EP_FN uint16_t take_recv(S& st) {
  if (st.held >= S::recvs) return kNone;
  const uint16_t id = st.free_ids[S::recvs - 1 - st.held];
  st.recv[id].state = kRecvPosted;
  ++st.held;
  return id;
}

template <class S>
GPUCOMM_EP_FN void give_recv(S& st, uint16_t id) {
  st.recv[id].state = kRecvFree;
  st.free_ids[S::recvs - st.held] = id;
  --st.held;
}

// The class of a bin: 0 exact keys, 1 (ANY, tag), 2 (source, ANY), 3 (ANY, ANY).
template <class S>
GPUCOMM_EP_FN uint32_t bin_class(uint32_t bin) {
  return bin / S::buckets;
}

// Appends posted receive `id` (src, tag, buffer already set) to its bin with the next sequence number.
template <class S>
GPUCOMM_EP_FN void bin_append(S& st, uint16_t id) {
  Recv& r = st.recv[id];
  r.seq = st.post_seq++;
  r.next = kNone;
  const uint32_t b = bin_of<S>(r.src, r.tag);
  if (st.bin_tail[b] == kNone) {
    st.bin_head[b] = id;
  } else {
    st.recv[st.bin_tail[b]].next = id;
  }
  st.bin_tail[b] = id;
  ++st.posted;
  ++st.in_class[bin_class<S>(b)];
}

// The class of receive `id`'s bin (from what it names).
template <class S>
GPUCOMM_EP_FN uint32_t recv_class(const S& st, uint16_t id) {
  const Recv& r = st.recv[id];
  return (r.src == kAnySource ? 1u : 0u) + (r.tag == kAnyTag ? 2u : 0u);
}

// The earliest posted receive compatible with a message (src, tag), taken out of its bin; kNone
// when none is posted. Looks at the four bins that can hold one. Leaves the counters `posted` and
// `in_class` to the caller (a warp taking a batch at once counts once; only reads them here).
template <class S>
GPUCOMM_EP_FN uint16_t take_posted_uncounted(S& st, int32_t src, int32_t tag) {
  if (st.posted == 0) return kNone;
  const uint32_t cand[4] = {bin_of<S>(src, tag), bin_of<S>(kAnySource, tag), bin_of<S>(src, kAnyTag),
                            bin_of<S>(kAnySource, kAnyTag)};
  uint16_t best = kNone, best_prev = kNone;
  uint32_t best_bin = 0;
  for (uint32_t c = 0; c < 4; ++c) {
    if (st.in_class[c] == 0) continue;  // no receive of this class is posted: its bin is empty
    uint16_t prev = kNone;
    for (uint16_t i = st.bin_head[cand[c]]; i != kNone; prev = i, i = st.recv[i].next) {
      const Recv& r = st.recv[i];
      if (!compatible(r.src, r.tag, src, tag)) continue;
      if (best == kNone || static_cast<int32_t>(r.seq - st.recv[best].seq) < 0) {
        best = i;
        best_prev = prev;
        best_bin = cand[c];
      }
      break;  // later entries of this bin were posted later
    }
  }
  if (best == kNone) return kNone;
  const uint16_t nx = st.recv[best].next;
  if (best_prev == kNone) {
    st.bin_head[best_bin] = nx;
  } else {
    st.recv[best_prev].next = nx;
  }
  if (st.bin_tail[best_bin] == best) st.bin_tail[best_bin] = best_prev;
  return best;
}

template <class S>
GPUCOMM_EP_FN uint16_t take_posted(S& st, int32_t src, int32_t tag) {
  const uint16_t id = take_posted_uncounted(st, src, tag);
  if (id != kNone) {
    --st.posted;
    --st.in_class[recv_class(st, id)];
  }
  return id;
}

// Takes posted receive `id` out of its bin (a cancel). O(length of its bin).
template <class S>
GPUCOMM_EP_FN void unlink_posted(S& st, uint16_t id) {
  const uint32_t b = bin_of<S>(st.recv[id].src, st.recv[id].tag);
  uint16_t prev = kNone;
  for (uint16_t i = st.bin_head[b]; i != kNone; prev = i, i = st.recv[i].next) {
    if (i != id) continue;
    const uint16_t nx = st.recv[i].next;
    if (prev == kNone) {
      st.bin_head[b] = nx;
    } else {
      st.recv[prev].next = nx;
    }
    if (st.bin_tail[b] == id) st.bin_tail[b] = prev;
    --st.posted;
    --st.in_class[bin_class<S>(b)];
    return;
  }
}

template <class S>
GPUCOMM_EP_FN bool umq_full(const S& st) {
  return st.umq_tail - st.umq_head >= S::unexp;
}

// Writes unexpected entry at arrival counter i (the caller advances umq_tail).
template <class S>
GPUCOMM_EP_FN void umq_put(S& st, uint32_t i, uint64_t ticket, int32_t tag, uint32_t src, uint32_t bytes) {
  Unexpected& u = st.umq[i & (S::unexp - 1)];
  u.ticket = ticket;
  u.tag = tag;
  u.src = static_cast<uint16_t>(src);
  u.bytes = static_cast<uint16_t>(bytes);
}

template <class S>
GPUCOMM_EP_FN void umq_push(S& st, uint64_t ticket, int32_t tag, uint32_t src, uint32_t bytes) {
  umq_put(st, st.umq_tail, ticket, tag, src, bytes);
  ++st.umq_tail;
}

// Arrival counter of the first unexpected message compatible with (src, tag), or umq_tail.
template <class S>
GPUCOMM_EP_FN uint32_t umq_find(const S& st, int32_t src, int32_t tag) {
  for (uint32_t i = st.umq_head; i != st.umq_tail; ++i) {
    const Unexpected& u = st.umq[i & (S::unexp - 1)];
    if (u.bytes != kGone && compatible(src, tag, u.src, u.tag)) return i;
  }
  return st.umq_tail;
}

template <class S>
GPUCOMM_EP_FN void umq_remove(S& st, uint32_t i) {
  st.umq[i & (S::unexp - 1)].bytes = kGone;
  while (st.umq_head != st.umq_tail && st.umq[st.umq_head & (S::unexp - 1)].bytes == kGone) ++st.umq_head;
}

}  // namespace gpucomm::msg::ep
