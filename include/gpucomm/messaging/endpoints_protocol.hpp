#pragma once
// Endpoints: the protocol, run by one thread (a host thread, or the elected lane of a GPU group),
// templated over a memory backend B (endpoints_device.cuh: DeviceEpBackend; src/messaging/
// endpoints.cpp: the host's). docs/MESSAGING.md, "Endpoints", has the argument.
//
// A backend provides: ld2/st2 (two 8-byte words, relaxed, each single-copy atomic), ld_acq and
// st_rel (one word, system scope), st_rel_local (one word of a sender on this PE's own device: the
// release needs no system-scope fence), fadd (relaxed fetch-add on this PE's own word), cas_acq (the
// owner word), now() (ns), fail(Fail, peer, ep, addr, expected, seen), which does not return, and
// check_wait(start, Fail, peer, ep, addr, expected, seen): fails once the job failed or the wait
// that started at `start` ran past the timeout.
//
// Who writes what (sender PE n, receiving endpoint (p, e)):
//   ticket[p][e] at n   n's threads: one relaxed fetch-add per message (the send order)
//   ring[e][n][.] at p  the sender of ticket t writes slot t mod S: stamped words, relaxed, no fence
//   credit[p][e] at n   e's owner: a release store of its consumed prefix every S/4 messages
// The sender reads its credit word with acquire before writing a slot, so the owner's reads of the
// record that slot held (before its release) come before the new record's stores. The owner polls
// the ring with relaxed loads and takes a record when every word it needs carries the stamp.
#include <bit>
#include <cstdint>

#include "gpucomm/messaging/endpoints_layout.hpp"
#include "gpucomm/messaging/endpoints_matcher.hpp"

namespace gpucomm::msg::ep {

// What went wrong (a backend's fail() reports it and does not return).
enum class Fail : uint32_t {
  bad_pe,             // expected: size, seen: the pe
  bad_endpoint,       // expected: endpoints, seen: the ep
  bad_tag,            // seen: the tag (sends need tag >= 0; receives tag >= 0 or ANY_TAG)
  bad_source,         // expected: size, seen: the source
  bad_bytes,          // expected: max_bytes, seen: the length
  bad_request,        // seen: the request id
  too_many_receives,  // expected: the state's kRecvs
  too_many_pes,       // expected: the state's kPes, seen: the job's PEs
  owned,              // open: another group owns the endpoint
  not_open,           // a receive call on a state that owns no endpoint
  pending,            // close with receives held (seen: how many)
  bad_record,         // a record that does not come from its ring's sender (seen: the header word)
  credit_timeout,     // a send waited for ring space past the timeout (expected: ticket, seen: credit)
  recv_timeout,       // a wait or probe past the timeout (expected: source << 32 | tag, seen: posted)
  aborted,            // the job failed while this thread waited (seen: the failed PE)
};

GPUCOMM_EP_FN const char* fail_name(Fail f) {
  switch (f) {
    case Fail::bad_pe:
      return "pe out of range";
    case Fail::bad_endpoint:
      return "endpoint out of range";
    case Fail::bad_tag:
      return "bad tag";
    case Fail::bad_source:
      return "source out of range";
    case Fail::bad_bytes:
      return "message longer than the endpoints' max_bytes";
    case Fail::bad_request:
      return "not a request of this owner";
    case Fail::too_many_receives:
      return "more receives held than the owner state's capacity";
    case Fail::too_many_pes:
      return "more PEs than the owner state serves";
    case Fail::owned:
      return "endpoint already owned by another group";
    case Fail::not_open:
      return "owner state owns no endpoint";
    case Fail::pending:
      return "close with receives not yet waited for";
    case Fail::bad_record:
      return "record from a PE other than its ring's";
    case Fail::credit_timeout:
      return "send waited for ring space past the timeout";
    case Fail::recv_timeout:
      return "receive waited past the timeout";
    case Fail::aborted:
      return "the job failed while waiting";
  }
  return "?";
}

namespace proto {

// The envelope a timed-out receive or probe reports: source above tag (describe_failure decodes it).
GPUCOMM_EP_FN uint64_t envelope_word(int32_t src, int32_t tag) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(tag);
}

// Copies n payload bytes out of (lo) 4-byte pieces of record words starting at word w.
GPUCOMM_EP_FN void unpack(void* dst, const uint64_t* words, uint32_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  for (uint32_t i = 0; i < n; i += 4) {
    const auto v = static_cast<uint32_t>(words[i / 4]);
    const uint32_t k = n - i < 4 ? n - i : 4;
    for (uint32_t j = 0; j < k; ++j) d[i + j] = static_cast<unsigned char>(v >> (8 * j));
  }
}

GPUCOMM_EP_FN uint32_t pack4(const unsigned char* s, uint32_t k) {
  uint32_t v = 0;
  for (uint32_t j = 0; j < k; ++j) v |= static_cast<uint32_t>(s[j]) << (8 * j);
  return v;
}

// ---- sending (any thread; the leader of a group) -------------------------------------------------

template <class B>
GPUCOMM_EP_FN void check_send(const B& b, const EndpointsHandle& h, int pe, int ep, int tag, uint32_t bytes) {
  if (static_cast<uint32_t>(pe) >= static_cast<uint32_t>(h.size)) b.fail(Fail::bad_pe, pe, ep, nullptr, h.size, pe);
  if (static_cast<uint32_t>(ep) >= h.lay.endpoints) b.fail(Fail::bad_endpoint, pe, ep, nullptr, h.lay.endpoints, ep);
  if (tag < 0) b.fail(Fail::bad_tag, pe, ep, nullptr, 0, static_cast<uint32_t>(tag));
  if (bytes > h.lay.max_bytes) b.fail(Fail::bad_bytes, pe, ep, nullptr, h.lay.max_bytes, bytes);
}

// Sends `bytes` (at most max_bytes) to endpoint (pe, ep) with `tag`: one ticket, ring space from
// the credit word, the stamped record. Returns when the record is written (the buffer is free).
template <class B>
GPUCOMM_EP_FN void send(const B& b, const EndpointsHandle& h, int pe, int ep, int tag, const void* buf,
                        uint32_t bytes) {
  check_send(b, h, pe, ep, tag, bytes);
  const Layout& l = h.lay;
  const uint64_t t = b.fadd(ticket_word(h.region, l, pe, ep), 1);
  const uint64_t* cw = credit_word(h.region, l, pe, ep);
  uint64_t freed = b.ld_acq(cw);
  if (t - freed >= l.slots) {
    const uint64_t start = b.now();
    for (uint32_t i = 1; t - freed >= l.slots; ++i) {
      freed = b.ld_acq(cw);
      if ((i & 1023u) == 0) b.check_wait(start, Fail::credit_timeout, pe, ep, cw, t, freed);
    }
  }
  const uint32_t s = stamp_of(t);
  uint64_t* rec = ring_slot(region_of(h, pe), l, ep, h.rank, t);
  const auto* src = static_cast<const unsigned char*>(buf);
  const uint32_t words = used_words(bytes);
  const bool aligned = (reinterpret_cast<uintptr_t>(buf) & 3u) == 0;
  // Payload words first, header last: nothing depends on the order (every word is stamped).
  for (uint32_t w = 2; w < words; w += 2) {
    const uint32_t o0 = (w - 2) * 4, o1 = o0 + 4;
    uint32_t a = 0, c = 0;
    if (aligned && o1 + 4 <= bytes) {
      a = *reinterpret_cast<const uint32_t*>(src + o0);
      c = *reinterpret_cast<const uint32_t*>(src + o1);
    } else {
      a = o0 < bytes ? pack4(src + o0, bytes - o0 < 4 ? bytes - o0 : 4) : 0;
      c = o1 < bytes ? pack4(src + o1, bytes - o1 < 4 ? bytes - o1 : 4) : 0;
    }
    b.st2(rec + w, stamped(s, a), stamped(s, c));
  }
  b.st2(rec, stamped(s, static_cast<uint32_t>(tag)), stamped(s, static_cast<uint32_t>(h.rank) | (bytes << 16)));
}

// ---- owning (the owner's leader) -------------------------------------------------------------------

// Takes ownership of endpoint `ep`: the owner word (compare-and-swap, acquire), the per-sender
// counters saved by the previous owner; messages consumed out of order stay marked, the others
// are read again (the rings keep every message not consumed).
template <class B, class S>
GPUCOMM_EP_FN void open(const B& b, const EndpointsHandle& h, int ep, S& st) {
  if (static_cast<uint32_t>(ep) >= h.lay.endpoints) b.fail(Fail::bad_endpoint, -1, ep, nullptr, h.lay.endpoints, ep);
  if (static_cast<uint32_t>(h.size) > S::pes) b.fail(Fail::too_many_pes, -1, ep, nullptr, S::pes, h.size);
  uint64_t* ow = owner_word(h.region, h.lay, ep);
  if (!b.cas_acq(ow, 0, 1)) b.fail(Fail::owned, -1, ep, ow, 0, 1);
  init(st, ep, static_cast<uint32_t>(h.size));
  for (int s = 0; s < h.size; ++s) {
    const uint64_t* hw = home_words(h.region, h.lay, ep, s);
    SenderState& q = st.sender[s];
    q.base = hw[0];
    q.mask = hw[1];
    q.next = q.base;
    q.credited = q.base;
  }
}

// Gives ownership back: saves the per-sender counters, returns the credits, frees the owner word
// (release). Every receive must have been waited for.
template <class B, class S>
GPUCOMM_EP_FN void close(const B& b, const EndpointsHandle& h, S& st) {
  if (st.ep < 0) b.fail(Fail::not_open, -1, -1, nullptr, 0, 0);
  if (st.held != 0) b.fail(Fail::pending, -1, st.ep, nullptr, 0, st.held);
  for (int s = 0; s < h.size; ++s) {
    uint64_t* hw = home_words(h.region, h.lay, st.ep, s);
    const SenderState& q = st.sender[s];
    hw[0] = q.base;
    hw[1] = q.mask;
    if (q.credited != q.base) b.st_rel(credit_word(region_of(h, static_cast<int>(s)), h.lay, h.rank, st.ep), q.base);
  }
  b.st_rel(owner_word(h.region, h.lay, st.ep), 0);
  st.ep = -1;
}

// The number of consecutive one bits at the bottom of m (64 when all are set).
GPUCOMM_EP_FN uint32_t trailing_ones(uint64_t m) {
#if defined(__CUDA_ARCH__)
  return m == ~uint64_t{0} ? 64u : static_cast<uint32_t>(__ffsll(static_cast<long long>(~m)) - 1);
#else
  return static_cast<uint32_t>(std::countr_one(m));
#endif
}

// Marks the tickets of sender s given as bits above its consumed prefix (bit i: base + i)
// consumed; returns credits every quarter ring.
template <class B, class S>
GPUCOMM_EP_FN void consume_bits(const B& b, const EndpointsHandle& h, S& st, uint32_t s, uint64_t bits) {
  SenderState& q = st.sender[s];
  const uint64_t m = q.mask | bits;
  const uint32_t n = trailing_ones(m);
  q.mask = n == 64 ? 0 : m >> n;
  q.base += n;
  if (q.base - q.credited >= (h.lay.slots + 3u) / 4u) {
    uint64_t* cw = credit_word(region_of(h, static_cast<int>(s)), h.lay, h.rank, st.ep);
    if (static_cast<int>(s) == h.rank) {
      b.st_rel_local(cw, q.base);
    } else {
      b.st_rel(cw, q.base);
    }
    q.credited = q.base;
  }
}

// Marks ticket t of sender s consumed.
template <class B, class S>
GPUCOMM_EP_FN void consume(const B& b, const EndpointsHandle& h, S& st, uint32_t s, uint64_t t) {
  consume_bits(b, h, st, s, uint64_t{1} << (t - st.sender[s].base));
}

// Delivers a record's payload into receive `id` and completes it: the first 8 bytes from words 2
// and 3 (already read), the rest from the ring (complete: the drain saw every word stamped).
template <class B, class S>
GPUCOMM_EP_FN void deliver(const B& b, S& st, uint16_t id, uint32_t src, int32_t tag, uint32_t bytes, uint64_t w2,
                           uint64_t w3, const uint64_t* rec) {
  Recv& r = st.recv[id];
  const uint32_t n = bytes < r.capacity ? bytes : r.capacity;
  if (n == 8 && (reinterpret_cast<uintptr_t>(r.buf) & 7u) == 0) {
    *static_cast<uint64_t*>(r.buf) = static_cast<uint64_t>(static_cast<uint32_t>(w2)) | (w3 << 32);
  } else {
    const uint64_t head[2] = {w2, w3};
    unpack(r.buf, head, n < 8 ? n : 8);
    auto* d = static_cast<unsigned char*>(r.buf);
    for (uint32_t o = 8; o < n; o += 8) {
      uint64_t pair[2];
      b.ld2(rec + 2 + o / 4, pair[0], pair[1]);
      unpack(d + o, pair, n - o < 8 ? n - o : 8);
    }
  }
  r.src = static_cast<int32_t>(src);
  r.tag = tag;
  r.seq = bytes;
  r.error = bytes > r.capacity ? static_cast<uint8_t>(kErrTruncated) : static_cast<uint8_t>(kErrNone);
  r.state = kRecvDone;
}

// Whether the words [4, used) of a record carry the stamp (its first four do).
template <class B>
GPUCOMM_EP_FN bool rest_complete(const B& b, const uint64_t* rec, uint32_t stamp, uint32_t bytes) {
  const uint32_t words = used_words(bytes);
  for (uint32_t w = 4; w < words; w += 2) {
    uint64_t x, y;
    b.ld2(rec + w, x, y);
    if (!has_stamp(x, stamp) || !has_stamp(y, stamp)) return false;
  }
  return true;
}

// A complete record of sender s at ticket t: its receive, or the unexpected list.
template <class B, class S>
GPUCOMM_EP_FN void arrived(const B& b, const EndpointsHandle& h, S& st, uint32_t s, uint64_t t, uint64_t w0,
                           uint64_t w1, uint64_t w2, uint64_t w3, const uint64_t* rec) {
  const auto tag = static_cast<int32_t>(static_cast<uint32_t>(w0));
  const uint32_t bytes = static_cast<uint32_t>(w1 >> 16) & 0xffffu;
  const uint16_t id = take_posted(st, static_cast<int32_t>(s), tag);
  if (id == kNone) {
    umq_push(st, t, tag, s, bytes);
    return;
  }
  deliver(b, st, id, s, tag, bytes, w2, w3, rec);
  consume(b, h, st, s, t);
}

// Checks a record's header against its ring (sender s); fails on a foreign or malformed one.
template <class B, class S>
GPUCOMM_EP_FN uint32_t record_bytes(const B& b, const EndpointsHandle& h, const S& st, uint32_t s, uint64_t w1,
                                    const uint64_t* rec) {
  const uint32_t bytes = static_cast<uint32_t>(w1 >> 16) & 0xffffu;
  if ((static_cast<uint32_t>(w1) & 0xffffu) != s || bytes > h.lay.max_bytes)
    b.fail(Fail::bad_record, static_cast<int>(s), st.ep, rec, s, w1);
  return bytes;
}

// Drains what sender s has in the ring, in ticket order; returns the records taken.
template <class B, class S>
GPUCOMM_EP_FN uint32_t drain_sender(const B& b, const EndpointsHandle& h, S& st, uint32_t s, uint32_t limit = ~0u) {
  SenderState& q = st.sender[s];
  uint32_t n = 0;
  while (n < limit) {
    if (static_cast<int64_t>(q.next - q.base) < 0) q.next = q.base;                 // the prefix grew past it
    while (q.next - q.base < 64 && ((q.mask >> (q.next - q.base)) & 1u)) ++q.next;  // consumed already
    if (umq_full(st)) return n;
    const uint64_t* rec = ring_slot(h.region, h.lay, st.ep, s, q.next);
    uint64_t w0, w1, w2, w3;
    b.ld2(rec, w0, w1);
    b.ld2(rec + 2, w2, w3);
    const uint32_t stamp = stamp_of(q.next);
    if (!has_stamp(w0, stamp) || !has_stamp(w1, stamp) || !has_stamp(w2, stamp) || !has_stamp(w3, stamp)) return n;
    const uint32_t bytes = record_bytes(b, h, st, s, w1, rec);
    if (bytes > 8 && !rest_complete(b, rec, stamp, bytes)) return n;
    arrived(b, h, st, s, q.next, w0, w1, w2, w3, rec);
    ++q.next;
    ++n;
  }
  return n;
}

// One pass over every sender's ring, taking at most `limit` records of each (a wait takes one at
// a time and looks at its own receive in between: no extra poll of a ring after its message).
template <class B, class S>
GPUCOMM_EP_FN uint32_t progress(const B& b, const EndpointsHandle& h, S& st, uint32_t limit = ~0u) {
  uint32_t n = 0;
  for (uint32_t s = 0; s < st.senders; ++s) n += drain_sender(b, h, st, s, limit);
  return n;
}

template <class B, class S>
GPUCOMM_EP_FN void check_recv_args(const B& b, const EndpointsHandle& h, const S& st, int src, int tag) {
  if (st.ep < 0) b.fail(Fail::not_open, -1, -1, nullptr, 0, 0);
  if (src < kAnySource || src >= h.size) b.fail(Fail::bad_source, src, st.ep, nullptr, h.size, src);
  if (tag < kAnyTag) b.fail(Fail::bad_tag, src, st.ep, nullptr, 0, static_cast<uint32_t>(tag));
}

// Posts a receive of up to `capacity` bytes into `buf`; returns its request id. Takes the first
// compatible unexpected message at once when there is one.
template <class B, class S>
GPUCOMM_EP_FN uint16_t irecv(const B& b, const EndpointsHandle& h, S& st, void* buf, uint32_t capacity, int src,
                             int tag) {
  check_recv_args(b, h, st, src, tag);
  const uint16_t id = take_recv(st);
  if (id == kNone) b.fail(Fail::too_many_receives, src, st.ep, nullptr, S::recvs, st.held);
  Recv& r = st.recv[id];
  r.buf = buf;
  r.capacity = capacity;
  r.src = src;
  r.tag = tag;
  const uint32_t i = umq_find(st, src, tag);
  if (i == st.umq_tail) {
    bin_append(st, id);
    return id;
  }
  const Unexpected u = st.umq[i & (S::unexp - 1)];
  umq_remove(st, i);
  const uint64_t* rec = ring_slot(h.region, h.lay, st.ep, u.src, u.ticket);
  uint64_t w2, w3;
  b.ld2(rec + 2, w2, w3);  // complete: the drain saw every word stamped
  deliver(b, st, id, u.src, u.tag, u.bytes, w2, w3, rec);
  consume(b, h, st, u.src, u.ticket);
  return id;
}

template <class B, class S>
GPUCOMM_EP_FN void check_request(const B& b, const S& st, uint16_t id) {
  if (id >= S::recvs || st.recv[id].state == kRecvFree) b.fail(Fail::bad_request, -1, st.ep, nullptr, S::recvs, id);
}

// The status of done receive `id`, which goes back to the free list.
template <class S>
GPUCOMM_EP_FN Status finish(S& st, uint16_t id) {
  const Recv& r = st.recv[id];
  const Status out{r.src, r.tag, r.seq, r.error};
  give_recv(st, id);
  return out;
}

// True (and the status) when receive `id` completed; one progress pass otherwise.
template <class B, class S>
GPUCOMM_EP_FN bool test(const B& b, const EndpointsHandle& h, S& st, uint16_t id, Status* status) {
  check_request(b, st, id);
  if (st.recv[id].state != kRecvDone) progress(b, h, st);
  if (st.recv[id].state != kRecvDone) return false;
  const Status s = finish(st, id);
  if (status) *status = s;
  return true;
}

template <class B, class S>
GPUCOMM_EP_FN Status wait(const B& b, const EndpointsHandle& h, S& st, uint16_t id) {
  check_request(b, st, id);
  if (st.recv[id].state != kRecvDone) {
    const uint64_t start = b.now();
    for (uint32_t i = 1; st.recv[id].state != kRecvDone; ++i) {
      progress(b, h, st, 1);
      if ((i & 255u) == 0) {
        const Recv& r = st.recv[id];
        b.check_wait(start, Fail::recv_timeout, r.src, st.ep, nullptr, envelope_word(r.src, r.tag), st.posted);
      }
    }
  }
  return finish(st, id);
}

// Cancels receive `id`: a posted one completes at once with kErrCancelled (its wait or test
// returns that status); one that a message already matched keeps its message.
template <class B, class S>
GPUCOMM_EP_FN void cancel(const B& b, S& st, uint16_t id) {
  check_request(b, st, id);
  Recv& r = st.recv[id];
  if (r.state != kRecvPosted) return;
  unlink_posted(st, id);
  r.seq = 0;
  r.error = static_cast<uint8_t>(kErrCancelled);
  r.state = kRecvDone;
}

// Whether a message compatible with (src, tag) arrived, and its envelope; it stays for a receive.
template <class B, class S>
GPUCOMM_EP_FN bool iprobe(const B& b, const EndpointsHandle& h, S& st, int src, int tag, Status* status) {
  check_recv_args(b, h, st, src, tag);
  uint32_t i = umq_find(st, src, tag);
  if (i == st.umq_tail) {
    progress(b, h, st);
    i = umq_find(st, src, tag);
    if (i == st.umq_tail) return false;
  }
  const Unexpected& u = st.umq[i & (S::unexp - 1)];
  if (status) *status = Status{u.src, u.tag, u.bytes, kErrNone};
  return true;
}

template <class B, class S>
GPUCOMM_EP_FN Status probe(const B& b, const EndpointsHandle& h, S& st, int src, int tag) {
  Status out{};
  const uint64_t start = b.now();
  for (uint32_t i = 1; !iprobe(b, h, st, src, tag, &out); ++i) {
    if ((i & 255u) == 0) {
      b.check_wait(start, Fail::recv_timeout, src, st.ep, nullptr, envelope_word(src, tag), st.posted);
    }
  }
  return out;
}

}  // namespace proto
}  // namespace gpucomm::msg::ep
