#pragma once
// Matching in O(1) per message at any queue depth (docs/MESSAGING.md, "Matching state"), written
// once over a memory backend B (the progress holder's words: b.hw / b.set_hw for the header and
// per-peer words, b.kw / b.set_kw for key slots; a GPU holder caches them in shared memory).
//
// A key is (context, source or ANY, tag or ANY). The key table (open addressing, linear probing,
// backward-shift deletion) maps each key in use to
//   - its bin of posted receives: the receives posted with exactly that key (wildcards included),
//     in post order, as a chain of chunks of kBinEntries entries; every entry carries its post's
//     take order;
//   - its list of unexpected messages: the messages that such a receive would take, in arrival
//     order (a doubly linked list through umq_links).
// A message (ctx, s, t) looks at the heads of at most four bins, (ctx, s, t), (ctx, ANY, t),
// (ctx, s, ANY) and (ctx, ANY, ANY) (only those the context has wildcard receives posted in), and
// takes the head with the smallest take order: the earliest compatible receive. A message without
// one joins the lists of the keys that could take it later: all four in mode mpi, (ctx, s, t) and
// (ctx, s, ANY) in no_any_source, (ctx, s, t) in unordered (the relaxed modes are this structure
// with fewer lists). A receive looks at the head of its own key's list (the earliest compatible
// message), or joins its key's bin.
#include <cstdint>

#include "gpucomm/messaging/layout.hpp"

namespace gpucomm::msg::bins {

// ---- keys ----

inline constexpr uint64_t kKeyValid = uint64_t(1) << 63;

GPUCOMM_MSG_FN uint64_t key_of(int32_t ctx, int32_t src, int32_t tag) {
  const uint64_t s =
      src == kAnySource ? (uint64_t(1) << 24) : (static_cast<uint64_t>(static_cast<uint32_t>(src)) & 0xffffffu);
  const uint64_t t =
      tag == kAnyTag ? (uint64_t(1) << 30) : (static_cast<uint64_t>(static_cast<uint32_t>(tag)) & 0x3fffffffu);
  return kKeyValid | ((static_cast<uint64_t>(static_cast<uint32_t>(ctx)) & 63u) << 56) | (s << 31) | t;
}
GPUCOMM_MSG_FN uint32_t key_ctx(uint64_t k) {
  return static_cast<uint32_t>((k >> 56) & 63u);
}
GPUCOMM_MSG_FN bool key_any_src(uint64_t k) {
  return ((k >> 55) & 1u) != 0;
}
GPUCOMM_MSG_FN bool key_any_tag(uint64_t k) {
  return ((k >> 30) & 1u) != 0;
}
// The slot where a key's probe sequence starts (Fibonacci hashing; `keys` is a power of two).
GPUCOMM_MSG_FN uint32_t key_home(uint64_t k, uint32_t keys) {
  const uint64_t h = k * 0x9e3779b97f4a7c15ull;
  return static_cast<uint32_t>(h >> 32) & (keys - 1);
}

// Lists of an unexpected message: the keys (with wildcards) of the receives that could take it.
enum Role : uint32_t { kRoleExact = 1, kRoleSrc = 2, kRoleTag = 4, kRoleAll = 8 };
GPUCOMM_MSG_FN uint32_t roles_of(Mode m) {
  switch (m) {
    case Mode::no_any_source:
      return kRoleExact | kRoleSrc;
    case Mode::unordered:
      return kRoleExact;
    default:
      return kRoleExact | kRoleSrc | kRoleTag | kRoleAll;
  }
}
GPUCOMM_MSG_FN uint64_t role_key(int32_t ctx, int32_t src, int32_t tag, uint32_t role_index) {
  switch (role_index) {
    case 0:
      return key_of(ctx, src, tag);
    case 1:
      return key_of(ctx, src, kAnyTag);
    case 2:
      return key_of(ctx, kAnySource, tag);
    default:
      return key_of(ctx, kAnySource, kAnyTag);
  }
}

// Wildcard receives posted per context (home::kWild + ctx): any-source, any-tag, both, 21 bits each.
GPUCOMM_MSG_FN uint64_t wild_unit(uint64_t k) {
  const bool as = key_any_src(k), at = key_any_tag(k);
  if (as && at) return uint64_t(1) << 42;
  if (as) return 1;
  if (at) return uint64_t(1) << 21;
  return 0;
}
GPUCOMM_MSG_FN bool wild_any_src(uint64_t w) {
  return (w & 0x1fffffu) != 0;
}
GPUCOMM_MSG_FN bool wild_any_tag(uint64_t w) {
  return ((w >> 21) & 0x1fffffu) != 0;
}
GPUCOMM_MSG_FN bool wild_both(uint64_t w) {
  return ((w >> 42) & 0x1fffffu) != 0;
}

// Earlier in take order (32-bit serial numbers: live receives span far less than 2^31 posts).
GPUCOMM_MSG_FN bool earlier(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) < 0;
}

// ---- key slots ----

// A key slot decoded: the key, the bin (chunks + 1, positions, count) and the message list.
struct Slot {
  uint64_t key;     // 0: empty
  uint32_t hc, tc;  // bin: head and tail chunk + 1 (0: no chunk)
  uint32_t hp, tp;  // bin: next entry to take in the head chunk, next free entry in the tail chunk
  uint32_t pn;      // bin: receives
  uint32_t uh, ut;  // list: first and last message + 1
  uint32_t un;      // list: messages
  BinEntry head;    // bin: its first entry (a copy: matching reads no chunk)
};

GPUCOMM_MSG_FN Slot decode_slot(uint64_t w0, uint64_t w1, uint64_t w2) {
  Slot s{};
  s.key = w0;
  s.hc = static_cast<uint32_t>(w1 & 0xfffffu);
  s.tc = static_cast<uint32_t>((w1 >> 20) & 0xfffffu);
  s.hp = static_cast<uint32_t>((w1 >> 40) & 15u);
  s.tp = static_cast<uint32_t>((w1 >> 44) & 15u);
  s.pn = static_cast<uint32_t>(w1 >> 48);
  s.uh = static_cast<uint32_t>(w2 & 0xffffu);
  s.ut = static_cast<uint32_t>((w2 >> 16) & 0xffffu);
  s.un = static_cast<uint32_t>((w2 >> 32) & 0xffffu);
  return s;
}
GPUCOMM_MSG_FN uint64_t slot_w1(const Slot& s) {
  return static_cast<uint64_t>(s.hc) | (static_cast<uint64_t>(s.tc) << 20) | (static_cast<uint64_t>(s.hp) << 40) |
         (static_cast<uint64_t>(s.tp) << 44) | (static_cast<uint64_t>(s.pn) << 48);
}
GPUCOMM_MSG_FN uint64_t slot_w2(const Slot& s) {
  return static_cast<uint64_t>(s.uh) | (static_cast<uint64_t>(s.ut) << 16) | (static_cast<uint64_t>(s.un) << 32);
}

GPUCOMM_MSG_FN BinEntry decode_head(uint64_t w3, uint64_t w4, uint64_t w5) {
  return BinEntry{static_cast<uint32_t>(w3), static_cast<uint32_t>(w3 >> 32), static_cast<uint32_t>(w4),
                  static_cast<uint32_t>(w4 >> 32), w5};
}
template <class B>
GPUCOMM_MSG_FN Slot load_slot(const B& b, uint32_t i) {
  Slot s = decode_slot(b.kw(i, 0), b.kw(i, 1), b.kw(i, 2));
  s.head = decode_head(b.kw(i, 3), b.kw(i, 4), b.kw(i, 5));
  return s;
}
template <class B>
GPUCOMM_MSG_FN void store_head(const B& b, uint32_t i, const BinEntry& e) {
  b.set_kw(i, 3, e.order | (static_cast<uint64_t>(e.stamp) << 32));
  b.set_kw(i, 4, e.slot | (static_cast<uint64_t>(e.cap) << 32));
  b.set_kw(i, 5, e.buf);
}
template <class B>
GPUCOMM_MSG_FN void store_slot(const B& b, uint32_t i, const Slot& s) {
  b.set_kw(i, 0, s.key);
  b.set_kw(i, 1, slot_w1(s));
  b.set_kw(i, 2, slot_w2(s));
}
GPUCOMM_MSG_FN bool slot_unused(const Slot& s) {
  return s.pn == 0 && s.un == 0;
}

// Index of the slot holding key `k`, or -1. kPeek: for lanes that look up in parallel, reads
// without filling the holder's cache.
template <bool kPeek = false, class B>
GPUCOMM_MSG_FN int32_t find(const B& b, const StateView& s, uint64_t k) {
  const uint32_t mask = s.cfg.keys - 1;
  for (uint32_t i = key_home(k, s.cfg.keys), n = 0; n < s.cfg.keys; i = (i + 1) & mask, ++n) {
    uint64_t w = 0;
    if constexpr (kPeek) {
      w = b.kw_peek(i, 0);
    } else {
      w = b.kw(i, 0);
    }
    if (w == k) return static_cast<int32_t>(i);
    if (w == 0) return -1;
  }
  return -1;
}
template <class B>
GPUCOMM_MSG_FN int32_t find_peek(const B& b, const StateView& s, uint64_t k) {
  return find<true>(b, s, k);
}

// ---- chunks of the bins ----

GPUCOMM_MSG_FN BinEntry* entry_at(const StateView& s, uint32_t chunk1, uint32_t pos) {
  return &s.bins[static_cast<size_t>(chunk1 - 1) * kBinEntries + pos];
}
template <class B>
GPUCOMM_MSG_FN uint32_t chunk_take_free(const B& b, const StateView& s) {
  const auto c = static_cast<uint32_t>(b.hw(home::kChunkFree));
  if (c != 0) b.set_hw(home::kChunkFree, s.bin_next[c - 1]);
  return c;
}
template <class B>
GPUCOMM_MSG_FN void chunk_give(const B& b, const StateView& s, uint32_t c) {
  s.bin_next[c - 1] = static_cast<uint32_t>(b.hw(home::kChunkFree));
  b.set_hw(home::kChunkFree, c);
}

// Removes slot i (backward-shift deletion: the later members of its probe run move up, so lookups
// need no tombstones), giving back the chunk an empty bin kept. Slot indices held by the caller
// are invalid afterwards.
template <class B>
GPUCOMM_MSG_OUTLINE void remove_slot(const B& b, const StateView& s, uint32_t i) {
  const uint64_t w1 = b.kw(i, 1);
  const auto hc = static_cast<uint32_t>(w1 & 0xfffffu);
  if (hc != 0) chunk_give(b, s, hc);
  const uint32_t mask = s.cfg.keys - 1;
  uint32_t hole = i;
  for (uint32_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    const uint64_t k = b.kw(j, 0);
    if (k == 0) break;
    const uint32_t h = key_home(k, s.cfg.keys);
    // The entry at j may fill the hole when its home does not lie cyclically in (hole, j].
    const bool stays = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
    if (stays) continue;
    for (uint32_t w = 0; w < home::kKeyWords; ++w) b.set_kw(hole, w, b.kw(j, w));
    hole = j;
  }
  for (uint32_t w = 0; w < home::kKeyWords; ++w) b.set_kw(hole, w, 0);
  b.set_hw(home::kKeysLive, b.hw(home::kKeysLive) - 1);
}

// Keys whose bin and list ran empty stay in the table (the same key usually comes back: no churn
// of slots and chunks per message); this gives their slots and chunks back, when the table or the
// chunk pool runs short. O(keys), and rare.
template <class B>
GPUCOMM_MSG_OUTLINE void reclaim(const B& b, const StateView& s) {
  for (uint32_t i = 0; i < s.cfg.keys;) {
    const uint64_t k = b.kw(i, 0);
    const uint64_t w1 = b.kw(i, 1), w2 = b.kw(i, 2);
    if (k != 0 && (w1 >> 48) == 0 && ((w2 >> 32) & 0xffffu) == 0) {
      remove_slot(b, s, i);  // another key may have moved into i: look at it again
    } else {
      ++i;
    }
  }
}

template <class B>
GPUCOMM_MSG_FN uint32_t chunk_take(const B& b, const StateView& s) {
  uint32_t c = chunk_take_free(b, s);
  if (c == 0) {
    reclaim(b, s);
    c = chunk_take_free(b, s);
  }
  return c;
}

// Index of the slot of `k`, added (empty) when missing; -1 when the table is three quarters full
// of keys in use.
template <class B>
GPUCOMM_MSG_FN int32_t find_or_add(const B& b, const StateView& s, uint64_t k) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint32_t mask = s.cfg.keys - 1;
    for (uint32_t i = key_home(k, s.cfg.keys), n = 0; n < s.cfg.keys; i = (i + 1) & mask, ++n) {
      const uint64_t w = b.kw(i, 0);
      if (w == k) return static_cast<int32_t>(i);
      if (w != 0) continue;
      const uint64_t live = b.hw(home::kKeysLive);
      if (live * 4 >= static_cast<uint64_t>(s.cfg.keys) * 3) break;  // reclaim, then once more
      b.set_hw(home::kKeysLive, live + 1);
      b.set_kw(i, 0, k);
      for (uint32_t q = 1; q < home::kKeyWords; ++q) b.set_kw(i, q, 0);
      return static_cast<int32_t>(i);
    }
    if (attempt == 0) reclaim(b, s);
  }
  return -1;
}

// ---- bins of posted receives ----

// Appends `e` to the bin of slot `sl` (decoded in `x`, updated and stored). An empty bin keeps its
// chunk; the first entry is also the slot's copy of the head. False when no chunk is free (the
// pool holds one per receive beside the bins' partial chunks, so only a broken count gets there).
template <class B>
GPUCOMM_MSG_FN bool bin_push(const B& b, const StateView& s, uint32_t sl, Slot& x, const BinEntry& e) {
  if (x.pn == 0 && x.hc != 0) {
    x.hp = x.tp = 0;  // the resident chunk of an empty bin
  } else if (x.tc == 0 || x.tp == kBinEntries) {
    const uint32_t c = chunk_take(b, s);
    if (c == 0) return false;
    s.bin_next[c - 1] = 0;
    if (x.tc == 0) {
      x.hc = c;
      x.hp = 0;
    } else {
      s.bin_next[x.tc - 1] = c;
    }
    x.tc = c;
    x.tp = 0;
  }
  *entry_at(s, x.tc, x.tp) = e;
  x.tp += 1;
  x.pn += 1;
  store_slot(b, sl, x);
  if (x.pn == 1) store_head(b, sl, e);
  return true;
}

// The entry `r` places after the head of a bin (r < x.pn).
GPUCOMM_MSG_FN BinEntry& bin_nth(const StateView& s, const Slot& x, uint32_t r) {
  uint32_t c = x.hc;
  uint32_t pos = x.hp + r;
  while (pos >= kBinEntries) {
    c = s.bin_next[c - 1];
    pos -= kBinEntries;
  }
  return *entry_at(s, c, pos);
}

// Takes the first `n` entries of a bin (n <= x.pn): gives back the chunks they leave behind (an
// empty bin keeps its head chunk) and copies the new head. Stores the slot.
// `next`: the new head when the caller read it already (or null).
template <class B>
GPUCOMM_MSG_FN void bin_pop(const B& b, const StateView& s, uint32_t sl, Slot& x, uint32_t n,
                            const BinEntry* next = nullptr) {
  x.pn -= n;
  x.hp += n;
  while (x.hp >= kBinEntries && x.hc != x.tc) {
    const uint32_t next = s.bin_next[x.hc - 1];
    chunk_give(b, s, x.hc);
    x.hc = next;
    x.hp -= kBinEntries;
  }
  if (x.pn == 0) x.hp = x.tp = 0;
  store_slot(b, sl, x);
  if (x.pn != 0) store_head(b, sl, next ? *next : bin_nth(s, x, 0));
}

// Removes the entry of request `slot` with `stamp` from a bin (cancel): the earlier entries move
// back by one. False when it is not there.
template <class B>
GPUCOMM_MSG_OUTLINE bool bin_remove(const B& b, const StateView& s, uint32_t sl, Slot& x, uint32_t slot,
                                    uint32_t stamp) {
  uint32_t at = x.pn;
  for (uint32_t r = 0; r < x.pn; ++r) {
    const BinEntry& e = bin_nth(s, x, r);
    if (e.slot == slot && e.stamp == stamp) {
      at = r;
      break;
    }
  }
  if (at == x.pn) return false;
  for (uint32_t r = at; r > 0; --r) bin_nth(s, x, r) = bin_nth(s, x, r - 1);
  bin_pop(b, s, sl, x, 1);
  return true;
}

// ---- lists of unexpected messages ----

GPUCOMM_MSG_FN uint16_t* links(const StateView& s, uint32_t u) {
  return s.umq_links + static_cast<size_t>(u) * 8;
}

// Links unexpected entry `u` (envelope and roles in s.unexp[u]) at the end of its lists. False
// (nothing linked) when the key table has no room for a key it needs.
template <class B>
GPUCOMM_MSG_OUTLINE bool umq_push(const B& b, const StateView& s, uint32_t u) {
  const Unexp& e = s.unexp[u];
  // The keys first (adding one may reclaim, which moves slots): then look them up again.
  for (uint32_t r = 0; r < 4; ++r) {
    if (((e.roles >> r) & 1u) == 0) continue;
    if (find_or_add(b, s, role_key(e.env.comm, e.env.src, e.env.tag, r)) < 0) return false;
  }
  uint16_t* l = links(s, u);
  for (uint32_t r = 0; r < 4; ++r) {
    if (((e.roles >> r) & 1u) == 0) continue;
    const auto sl = static_cast<uint32_t>(find(b, s, role_key(e.env.comm, e.env.src, e.env.tag, r)));
    Slot x = decode_slot(b.kw(sl, 0), b.kw(sl, 1), b.kw(sl, 2));
    l[size_t{2} * r] = static_cast<uint16_t>(x.ut);
    l[(size_t{2} * r) + 1] = 0;
    if (x.ut != 0) {
      links(s, x.ut - 1)[(size_t{2} * r) + 1] = static_cast<uint16_t>(u + 1);
    } else {
      x.uh = u + 1;
    }
    x.ut = u + 1;
    x.un += 1;
    b.set_kw(sl, 2, slot_w2(x));
  }
  return true;
}

// Unlinks unexpected entry `u` from all its lists (their keys stay: see reclaim).
template <class B>
GPUCOMM_MSG_OUTLINE void umq_unlink(const B& b, const StateView& s, uint32_t u) {
  const Unexp& e = s.unexp[u];
  uint16_t* l = links(s, u);
  for (uint32_t r = 0; r < 4; ++r) {
    if (((e.roles >> r) & 1u) == 0) continue;
    const int32_t at = find(b, s, role_key(e.env.comm, e.env.src, e.env.tag, r));
    if (at < 0) continue;  // cannot happen while the lists are intact
    const auto sl = static_cast<uint32_t>(at);
    Slot x = decode_slot(b.kw(sl, 0), b.kw(sl, 1), b.kw(sl, 2));
    const uint32_t prev = l[size_t{2} * r], next = l[(size_t{2} * r) + 1];
    if (prev != 0) {
      links(s, prev - 1)[(size_t{2} * r) + 1] = static_cast<uint16_t>(next);
    } else {
      x.uh = next;
    }
    if (next != 0) {
      links(s, next - 1)[size_t{2} * r] = static_cast<uint16_t>(prev);
    } else {
      x.ut = prev;
    }
    x.un -= 1;
    b.set_kw(sl, 2, slot_w2(x));
  }
}

// The earliest unexpected message a receive with key `k` takes (its entry), or -1. Leaves it there.
template <class B>
GPUCOMM_MSG_FN int32_t umq_front(const B& b, const StateView& s, uint64_t k) {
  const int32_t at = find(b, s, k);
  if (at < 0) return -1;
  const auto uh = static_cast<uint32_t>(b.kw(static_cast<uint32_t>(at), 2) & 0xffffu);
  return uh == 0 ? -1 : static_cast<int32_t>(uh - 1);
}

// ---- matching ----

// Candidates of a message: the slots of the keys that could hold a compatible receive.
struct Candidates {
  int32_t slot[4];
  uint32_t n;
};

template <class B>
GPUCOMM_MSG_FN Candidates candidates(const B& b, const StateView& s, int32_t ctx, int32_t src, int32_t tag) {
  Candidates c{{-1, -1, -1, -1}, 0};
  const uint64_t w = b.hw(home::kWild + static_cast<uint32_t>(ctx));
  c.slot[c.n++] = find(b, s, key_of(ctx, src, tag));
  if (wild_any_src(w)) c.slot[c.n++] = find(b, s, key_of(ctx, kAnySource, tag));
  if (wild_any_tag(w)) c.slot[c.n++] = find(b, s, key_of(ctx, src, kAnyTag));
  if (wild_both(w)) c.slot[c.n++] = find(b, s, key_of(ctx, kAnySource, kAnyTag));
  return c;
}

// Counts of posted receives (PE, context, wildcard kind) after `n` left or joined key `k`'s bin.
template <class B>
GPUCOMM_MSG_FN void count_posted(const B& b, uint64_t k, int64_t n) {
  const uint32_t ctx = key_ctx(k);
  b.set_hw(home::kPrqN, b.hw(home::kPrqN) + static_cast<uint64_t>(n));
  b.set_hw(home::kCommPrq + ctx, b.hw(home::kCommPrq + ctx) + static_cast<uint64_t>(n));
  const uint64_t unit = wild_unit(k);
  if (unit) b.set_hw(home::kWild + ctx, b.hw(home::kWild + ctx) + unit * static_cast<uint64_t>(n));
}

// A message (ctx, src, tag) against the posted receives: takes the earliest compatible one into
// `out` and returns true, or returns false (the caller keeps the message as unexpected).
template <class B>
GPUCOMM_MSG_FN bool match_message(const B& b, const StateView& s, int32_t ctx, int32_t src, int32_t tag,
                                  BinEntry& out) {
  const Candidates c = candidates(b, s, ctx, src, tag);
  int32_t best = -1;
  Slot bx{};
  for (uint32_t i = 0; i < c.n; ++i) {
    if (c.slot[i] < 0) continue;
    const Slot x = load_slot(b, static_cast<uint32_t>(c.slot[i]));
    if (x.pn == 0) continue;
    if (best < 0 || earlier(x.head.order, bx.head.order)) {
      best = c.slot[i];
      bx = x;
    }
  }
  if (best < 0) return false;
  out = bx.head;
  const uint64_t k = bx.key;
  bin_pop(b, s, static_cast<uint32_t>(best), bx, 1);
  count_posted(b, k, -1);
  return true;
}

// A receive with key `k` against the unexpected messages: the earliest compatible one (unlinked
// from all its lists), or -1.
template <class B>
GPUCOMM_MSG_FN int32_t match_receive(const B& b, const StateView& s, uint64_t k) {
  const int32_t u = umq_front(b, s, k);
  if (u >= 0) umq_unlink(b, s, static_cast<uint32_t>(u));
  return u;
}

// Appends a receive with key `k` to its bin. False when the key table or the chunks have no room.
template <class B>
GPUCOMM_MSG_FN bool post_receive(const B& b, const StateView& s, uint64_t k, const BinEntry& e) {
  const int32_t at = find_or_add(b, s, k);
  if (at < 0) return false;
  Slot x = load_slot(b, static_cast<uint32_t>(at));
  if (!bin_push(b, s, static_cast<uint32_t>(at), x, e)) return false;
  count_posted(b, k, 1);
  return true;
}

// Removes a posted receive (cancel). False when it is not in its bin (matched already).
template <class B>
GPUCOMM_MSG_OUTLINE bool cancel_receive(const B& b, const StateView& s, uint64_t k, uint32_t slot, uint32_t stamp) {
  const int32_t at = find(b, s, k);
  if (at < 0) return false;
  Slot x = load_slot(b, static_cast<uint32_t>(at));
  if (!bin_remove(b, s, static_cast<uint32_t>(at), x, slot, stamp)) return false;
  count_posted(b, k, -1);
  return true;
}

}  // namespace gpucomm::msg::bins
