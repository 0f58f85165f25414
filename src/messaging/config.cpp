#include "config.hpp"

#include <algorithm>
#include <string>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::msg::detail {

namespace {

bool pow2(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

// `opt` when set, else the variable (or its default); checked against [lo, hi].
uint64_t pick(uint64_t opt, bool opt_set, const char* var, int64_t fallback, uint64_t lo, uint64_t hi,
              const char* option) {
  const int64_t v = opt_set ? static_cast<int64_t>(opt) : env::get_int(var, fallback);
  if (v < static_cast<int64_t>(lo) || static_cast<uint64_t>(v) > hi) {
    raise_arg("Messenger", opt_set ? std::string("MessengerOptions::") + option : std::string(var),
              std::to_string(v) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return static_cast<uint64_t>(v);
}

uint32_t next_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return static_cast<uint32_t>(p);
}

size_t align_up(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

}  // namespace

Config make_config(const MessengerOptions& o, int npes, int rank) {
  Config c{};
  c.npes = npes;
  c.rank = rank;
  c.slot_bytes = static_cast<uint32_t>(
      pick(o.slot_bytes, o.slot_bytes != 0, "GPUCOMM_MSG_SLOT_BYTES", 256, 128, 4096, "slot_bytes"));
  c.slots = static_cast<uint32_t>(pick(o.slots, o.slots != 0, "GPUCOMM_MSG_SLOTS", 16, 2, 4096, "slots"));
  c.pool_slots = static_cast<uint32_t>(pick(static_cast<uint64_t>(o.pool_slots < 0 ? 0 : o.pool_slots),
                                            o.pool_slots >= 0, "GPUCOMM_MSG_POOL_SLOTS", 4, 0, 64, "pool_slots"));
  c.requests = static_cast<uint32_t>(
      pick(o.requests, o.requests != 0, "GPUCOMM_MSG_REQUESTS", 1024, 64, kMaxRequests, "requests"));
  c.unexpected = static_cast<uint32_t>(
      pick(o.unexpected, o.unexpected != 0, "GPUCOMM_MSG_UNEXPECTED", 4096, 64, kMaxUnexpected, "unexpected"));
  c.queue_cap = static_cast<uint32_t>(pick(o.queue, o.queue != 0, "GPUCOMM_MSG_QUEUE", 1024, 1, 65536, "queue"));
  c.staging_pairs = static_cast<uint32_t>(
      pick(o.staging_pairs, o.staging_pairs != 0, "GPUCOMM_MSG_STAGING_PAIRS", 4, 1, 64, "staging_pairs"));
  c.chunk_bytes =
      pick(o.chunk_bytes, o.chunk_bytes != 0, "GPUCOMM_MSG_CHUNK", 256 << 10, 256, uint64_t(1) << 32, "chunk_bytes");
  const uint64_t ring_payload = (c.slot_bytes - kHeaderBytes) + uint64_t(c.slots - 1) * c.slot_bytes;
  c.eager_max = static_cast<uint32_t>(
      pick(o.eager_max, o.eager_max != 0, "GPUCOMM_MSG_EAGER_MAX", 2048, kInlineBytes, ring_payload, "eager_max"));
  c.am_per_sender = static_cast<uint32_t>(
      pick(o.am_per_sender, o.am_per_sender != 0, "GPUCOMM_MSG_AM_PER_SENDER", 4, 1, 32, "am_per_sender"));
  c.am_max = static_cast<uint32_t>(pick(o.am_max, o.am_max != 0, "GPUCOMM_MSG_AM_MAX", 256, 4, ring_payload, "am_max"));
  auto need = [](bool ok, const char* what, const std::string& why) {
    if (!ok) raise_arg("Messenger", what, why);
  };
  need(pow2(c.slot_bytes), "slot_bytes (GPUCOMM_MSG_SLOT_BYTES)",
       std::to_string(c.slot_bytes) + " is not a power of two");
  need(pow2(c.slots), "slots (GPUCOMM_MSG_SLOTS)", std::to_string(c.slots) + " is not a power of two");
  need(c.requests % 64 == 0, "requests (GPUCOMM_MSG_REQUESTS)",
       std::to_string(c.requests) + " is not a multiple of 64");
  need(c.unexpected % 64 == 0, "unexpected (GPUCOMM_MSG_UNEXPECTED)",
       std::to_string(c.unexpected) + " is not a multiple of 64");
  need(c.chunk_bytes % 16 == 0, "chunk_bytes (GPUCOMM_MSG_CHUNK)",
       std::to_string(c.chunk_bytes) + " is not a multiple of 16");
  need(npes < (1 << 23), "the number of PEs", std::to_string(npes) + " exceeds the wire format's 2^23 ranks");
  c.steal_ns = pick(0, false, "GPUCOMM_MSG_STEAL_US", 20, 1, 10000000, "steal") * 1000;
  // Derived sizes: the post logs hold every request (a power of two), the key table twice the
  // keys the receives and unexpected messages can have at once (it refuses new keys at 3/4 full),
  // the bins one chunk per receive and a bin's partial chunks.
  c.posts = next_pow2(c.requests);
  c.keys = next_pow2(std::max<uint64_t>(256, uint64_t(c.requests) + c.unexpected));
  c.bin_chunks = c.requests + c.requests / 8 + 1;
  return c;
}

std::string describe_config(const Config& c) {
  return "slot_bytes=" + std::to_string(c.slot_bytes) + " slots=" + std::to_string(c.slots) +
         " pool_slots=" + std::to_string(c.pool_slots) + " eager_max=" + std::to_string(c.eager_max) +
         " requests=" + std::to_string(c.requests) + " unexpected=" + std::to_string(c.unexpected) +
         " queue=" + std::to_string(c.queue_cap) + " staging_pairs=" + std::to_string(c.staging_pairs) +
         " chunk=" + std::to_string(c.chunk_bytes) + " am_per_sender=" + std::to_string(c.am_per_sender) +
         " am_max=" + std::to_string(c.am_max);
}

HeapLayout heap_layout(const Config& c) {
  HeapLayout h{};
  const auto n = static_cast<size_t>(c.npes);
  size_t at = 0;
  h.rings = at;
  at = align_up(at + n * c.slots * c.slot_bytes, 256);
  h.credits = at;
  at = align_up(at + n * sizeof(uint64_t), 256);
  h.req_words = at;
  at = align_up(at + size_t(c.requests) * 2 * sizeof(uint64_t), 256);
  h.am_credits = at;
  at = align_up(at + n * sizeof(uint64_t), 256);
  h.staging = at;
  at = align_up(at + size_t(c.staging_pairs) * 2 * c.chunk_bytes, 256);
  h.total = at;
  return h;
}

LocalLayout local_layout(const Config& c) {
  LocalLayout l{};
  const auto n = static_cast<size_t>(c.npes);
  size_t at = 0;
  auto take = [&](size_t& field, size_t bytes) {
    field = at;
    at = align_up(at + bytes, 256);
  };
  take(l.peers, n * sizeof(PeerState));
  take(l.pool, n * c.pool_slots * c.eager_max);
  take(l.reqs, size_t(c.requests) * sizeof(Req));
  take(l.req_bits, size_t(c.requests) / 8);
  take(l.comps, size_t(c.requests) * kCompWords * sizeof(uint64_t));
  take(l.unexp, size_t(c.unexpected) * sizeof(Unexp));
  take(l.unexp_bits, size_t(c.unexpected) / 8);
  take(l.umq_links, size_t(c.unexpected) * 8 * sizeof(uint16_t));
  take(l.posts, size_t(c.posts) * kPostWords * sizeof(uint64_t));
  take(l.fast, size_t(c.posts) * kFastWords * sizeof(uint64_t));
  take(l.home, size_t(home_map(c).total) * sizeof(uint64_t));
  take(l.bins, size_t(c.bin_chunks) * kBinEntries * sizeof(BinEntry));
  take(l.bin_next, size_t(c.bin_chunks) * sizeof(uint32_t));
  take(l.active, size_t(c.requests) * sizeof(uint32_t));
  take(l.comms, kMaxComms * sizeof(CommState));
  const size_t am_entries = n * 2 * c.am_per_sender;
  take(l.am, am_entries * am_entry_bytes(c));
  take(l.am_bits, n * sizeof(uint64_t));
  take(l.am_fifo, am_entries * sizeof(uint32_t));
  take(l.ctl, sizeof(Control));
  take(l.diag, sizeof(Diag));
  l.total = at;
  return l;
}

StateView carve(const Config& c, char* heap, char* local) {
  const HeapLayout h = heap_layout(c);
  const LocalLayout l = local_layout(c);
  StateView s{};
  s.cfg = c;
  s.hm = home_map(c);
  s.rings = heap + h.rings;
  s.credits = reinterpret_cast<uint64_t*>(heap + h.credits);
  s.req_words = reinterpret_cast<uint64_t*>(heap + h.req_words);
  s.am_credits = reinterpret_cast<uint64_t*>(heap + h.am_credits);
  s.staging = heap + h.staging;
  s.peers = reinterpret_cast<PeerState*>(local + l.peers);
  s.pool = local + l.pool;
  s.reqs = reinterpret_cast<Req*>(local + l.reqs);
  s.req_bits = reinterpret_cast<uint64_t*>(local + l.req_bits);
  s.comps = reinterpret_cast<uint64_t*>(local + l.comps);
  s.unexp = reinterpret_cast<Unexp*>(local + l.unexp);
  s.unexp_bits = reinterpret_cast<uint64_t*>(local + l.unexp_bits);
  s.umq_links = reinterpret_cast<uint16_t*>(local + l.umq_links);
  s.posts = reinterpret_cast<uint64_t*>(local + l.posts);
  s.fast = reinterpret_cast<uint64_t*>(local + l.fast);
  s.home = reinterpret_cast<uint64_t*>(local + l.home);
  s.bins = reinterpret_cast<BinEntry*>(local + l.bins);
  s.bin_next = reinterpret_cast<uint32_t*>(local + l.bin_next);
  s.active = reinterpret_cast<uint32_t*>(local + l.active);
  s.comms = reinterpret_cast<CommState*>(local + l.comms);
  s.am = local + l.am;
  s.am_bits = reinterpret_cast<uint64_t*>(local + l.am_bits);
  s.am_fifo = reinterpret_cast<uint32_t*>(local + l.am_fifo);
  s.ctl = reinterpret_cast<Control*>(local + l.ctl);
  s.diag = reinterpret_cast<Diag*>(local + l.diag);
  return s;
}

void init_bins(const Config& c, uint32_t* bin_next, uint64_t* chunk_free) {
  for (uint32_t i = 0; i < c.bin_chunks; ++i) bin_next[i] = i + 1 < c.bin_chunks ? i + 2 : 0;
  *chunk_free = 1;
}

}  // namespace gpucomm::msg::detail
