#pragma once
// Unordered matching with hash tables (no ordering guarantee, no wildcards): a block matches one
// job. Per phase the targets go into a table and every probe claims one target of its key.
//
// Strategies:
//   linear_probing / double_hashing: open addressing, one slot per target (identical keys take
//     separate slots); a probe walks its key's probe sequence until an empty slot and claims
//     the first unclaimed slot of its key with an atomic exchange.
//   chained: the chained-batch table. Identical keys inside a warp are found with
//     __match_any_sync and inserted once with their count (preprocessing); a prefix sum over
//     the slots lays each key's targets out contiguously (the "chain"); probes with identical
//     keys are grouped the same way and claim a run of targets with one fetch-add.
//   automatic: measures the key multiplicity of the phase's targets (share of entries that
//     repeat a key of another lane of their warp) and picks double hashing up to
//     kOpenAddressingMaxMultiplicityPct, the chained table above.
// Tables live in dynamic shared memory (kHashSharedBytes) up to kHashSharedTargets targets and
// in the job's HashTableStorage (global memory) beyond. Only the block matching the job touches
// its table, so every access to the table is at block scope (mem::kBlock).
#include <type_traits>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/matching/compact_device.cuh"
#include "gpucomm/matching/job.hpp"
#include "gpucomm/matching/match_device.cuh"

namespace gpucomm::matching {

inline constexpr uint32_t kOpenAddressingMaxMultiplicityPct = 6;
inline constexpr uint32_t kHashSharedSlots = 2 * kHashSharedTargets;
inline constexpr uint32_t kHashWordsPerSlot = 7;
inline constexpr size_t kHashSharedBytes =
    (static_cast<size_t>(kHashWordsPerSlot) * kHashSharedSlots + kHashSharedTargets) * 4;

// Static shared memory of a block running match_hash (plus kHashSharedBytes dynamic).
struct HashShared {
  uint32_t taken[kBlockMaxTargets / 32];
  uint32_t sums[32];
  uint32_t dups;
  uint32_t info;
};

namespace detail {

inline constexpr uint32_t kEmpty = 0xffffffffu;  // slot never used
inline constexpr uint32_t kBusy = 0xfffffffeu;   // chained: key being written
inline constexpr uint32_t kReady = 0u;           // chained: key written
inline constexpr uint32_t kNone = 0xffffffffu;

struct TableView {
  uint32_t *owner, *kc, *ks, *kt, *count, *offset, *claim, *bucket;
  uint32_t mask;
};

__device__ __forceinline__ TableView table_view(uint32_t* words, uint32_t slots) {
  TableView t;
  t.owner = words;
  t.kc = words + slots;
  t.ks = words + size_t{2} * slots;
  t.kt = words + size_t{3} * slots;
  t.count = words + size_t{4} * slots;
  t.offset = words + size_t{5} * slots;
  t.claim = words + size_t{6} * slots;
  t.bucket = words + size_t{7} * slots;
  t.mask = slots - 1;
  return t;
}

__device__ __forceinline__ uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}
__device__ __forceinline__ uint32_t key_hash(const Envelope& e) {
  return mix32(static_cast<uint32_t>(e.comm) * 0x9e3779b1u ^ static_cast<uint32_t>(e.src) * 0x85ebca77u ^
               static_cast<uint32_t>(e.tag) * 0xc2b2ae3du);
}
__device__ __forceinline__ uint32_t key_step(const Envelope& e) {  // odd: visits every slot of a power-of-two table
  return mix32(static_cast<uint32_t>(e.tag) * 0x27d4eb2fu ^ static_cast<uint32_t>(e.src) * 0x165667b1u ^
               static_cast<uint32_t>(e.comm)) |
         1u;
}
__device__ __forceinline__ bool key_at(const TableView& t, uint32_t h, const Envelope& e) {
  return static_cast<int32_t>(mem::load<mem::kBlock>(&t.kc[h], mem::relaxed)) == e.comm &&
         static_cast<int32_t>(mem::load<mem::kBlock>(&t.ks[h], mem::relaxed)) == e.src &&
         static_cast<int32_t>(mem::load<mem::kBlock>(&t.kt[h], mem::relaxed)) == e.tag;
}
// Lanes of `active` holding the same key as this lane.
__device__ __forceinline__ uint32_t key_group(uint32_t active, const Envelope& e) {
  return __match_any_sync(active, e.comm) & __match_any_sync(active, e.src) & __match_any_sync(active, e.tag);
}

// Chained table: the slot of key e, inserting it when `insert`; kNone when absent. An inserter
// claims the slot (kEmpty -> kBusy), writes the key, then releases kReady; a reader acquires the
// owner word until it is not kBusy before it reads the key.
__device__ inline uint32_t chained_slot(const TableView& t, const Envelope& e, bool insert) {
  uint32_t h = key_hash(e) & t.mask;
  for (uint32_t n = 0; n <= t.mask; ++n, h = (h + 1) & t.mask) {
    uint32_t o = insert ? mem::compare_exchange<mem::kBlock>(&t.owner[h], kEmpty, kBusy, mem::acq_rel)
                        : mem::load<mem::kBlock>(&t.owner[h], mem::acquire);
    if (o == kEmpty) {
      if (!insert) return kNone;
      mem::store<mem::kBlock>(&t.kc[h], static_cast<uint32_t>(e.comm), mem::relaxed);
      mem::store<mem::kBlock>(&t.ks[h], static_cast<uint32_t>(e.src), mem::relaxed);
      mem::store<mem::kBlock>(&t.kt[h], static_cast<uint32_t>(e.tag), mem::relaxed);
      mem::store<mem::kBlock>(&t.owner[h], kReady, mem::release);  // the key before the ready mark
      return h;
    }
    while (o == kBusy) o = mem::load<mem::kBlock>(&t.owner[h], mem::acquire);
    if (key_at(t, h, e)) return h;
  }
  return kNone;
}

// One phase; fills result and taken like the ordered matchers. Returns kInfo* bits.
__device__ inline uint32_t hash_phase(const Envelope* probes, uint32_t np, const Envelope* targets, uint32_t nt,
                                      int32_t* result, uint32_t* taken, uint32_t* sums, uint32_t* dups, TableView t,
                                      HashStrategy strategy) {
  const uint32_t tid = threadIdx.x, nthreads = blockDim.x, lane = coop::lane_id();
  for (uint32_t h = tid; h <= t.mask; h += nthreads) {
    t.owner[h] = kEmpty;
    t.count[h] = 0;
    t.claim[h] = 0;
  }
  for (uint32_t i = tid; i < np; i += nthreads) result[i] = -1;
  for (uint32_t w = tid; w < (nt + 31) / 32; w += nthreads) taken[w] = 0;
  if (tid == 0) *dups = 0;
  __syncthreads();

  if (strategy == HashStrategy::automatic) {
    for (uint32_t start = 0; start < nt; start += nthreads) {
      const uint32_t i = start + tid;
      const bool ok = i < nt;
      const uint32_t active = __ballot_sync(0xffffffffu, ok);
      bool dup = false;
      if (ok) {
        const Envelope e = targets[i];
        dup = static_cast<uint32_t>(__ffs(key_group(active, e)) - 1) != lane;
      }
      const uint32_t d = __ballot_sync(0xffffffffu, dup);
      if (lane == 0 && d) mem::fetch_add<mem::kBlock>(dups, static_cast<uint32_t>(__popc(d)), mem::relaxed);
    }
    __syncthreads();
    strategy =
        *dups * 100u <= kOpenAddressingMaxMultiplicityPct * nt ? HashStrategy::double_hashing : HashStrategy::chained;
  }

  if (strategy != HashStrategy::chained) {
    const bool dh = strategy == HashStrategy::double_hashing;
    for (uint32_t i = tid; i < nt; i += nthreads) {
      const Envelope e = targets[i];
      const uint32_t step = dh ? key_step(e) : 1u;
      uint32_t h = key_hash(e) & t.mask;
      for (uint32_t n = 0; n <= t.mask; ++n, h = (h + step) & t.mask) {
        // A plain read first: occupied slots are skipped without a read-modify-write. The keys
        // are read only after the block barrier that ends the inserts.
        if (mem::load<mem::kBlock>(&t.owner[h], mem::relaxed) == kEmpty &&
            mem::compare_exchange<mem::kBlock>(&t.owner[h], kEmpty, i, mem::relaxed) == kEmpty) {
          t.kc[h] = static_cast<uint32_t>(e.comm);
          t.ks[h] = static_cast<uint32_t>(e.src);
          t.kt[h] = static_cast<uint32_t>(e.tag);
          break;
        }
      }
    }
    __syncthreads();
    for (uint32_t i = tid; i < np; i += nthreads) {
      const Envelope e = probes[i];
      const uint32_t step = dh ? key_step(e) : 1u;
      uint32_t h = key_hash(e) & t.mask;
      for (uint32_t n = 0; n <= t.mask; ++n, h = (h + step) & t.mask) {
        const uint32_t o = t.owner[h];
        if (o == kEmpty) break;
        if (key_at(t, h, e) && mem::load<mem::kBlock>(&t.claim[h], mem::relaxed) == 0u &&
            mem::exchange<mem::kBlock>(&t.claim[h], 1u, mem::relaxed) == 0u) {
          result[i] = static_cast<int32_t>(o);
          mem::fetch_or<mem::kBlock>(&taken[o >> 5], 1u << (o & 31), mem::relaxed);
          break;
        }
      }
    }
    __syncthreads();
    return kInfoOpenAddressing;
  }

  // Chained batch. 1: one insert per distinct key of each warp, with the key's count.
  for (uint32_t start = 0; start < nt; start += nthreads) {
    const uint32_t i = start + tid;
    const bool ok = i < nt;
    const uint32_t active = __ballot_sync(0xffffffffu, ok);
    if (ok) {
      const Envelope e = targets[i];
      const uint32_t g = key_group(active, e);
      if (static_cast<uint32_t>(__ffs(g) - 1) == lane) {
        const uint32_t h = chained_slot(t, e, true);
        mem::fetch_add<mem::kBlock>(&t.count[h], static_cast<uint32_t>(__popc(g)), mem::relaxed);
      }
    }
  }
  __syncthreads();
  // 2: each key's run of bucket entries (prefix sum over the slots).
  uint32_t base = 0;
  for (uint32_t start = 0; start <= t.mask; start += nthreads) {
    const uint32_t h = start + tid;
    const uint32_t c = h <= t.mask ? t.count[h] : 0u;
    uint32_t total;
    const uint32_t pos = exclusive_sum(coop::Block{}, c, total, sums);
    if (h <= t.mask) t.offset[h] = base + pos;
    base += total;
  }
  __syncthreads();
  // 3: targets into their key's run (claim serves as the fill counter here).
  for (uint32_t start = 0; start < nt; start += nthreads) {
    const uint32_t i = start + tid;
    const bool ok = i < nt;
    const uint32_t active = __ballot_sync(0xffffffffu, ok);
    if (ok) {
      const Envelope e = targets[i];
      const uint32_t g = key_group(active, e);
      const int leader = __ffs(g) - 1;
      uint32_t h = 0, first = 0;
      if (leader == static_cast<int>(lane)) {
        h = chained_slot(t, e, false);
        first = t.offset[h] + mem::fetch_add<mem::kBlock>(&t.claim[h], static_cast<uint32_t>(__popc(g)), mem::relaxed);
      }
      first = __shfl_sync(active, first, leader);
      t.bucket[first + __popc(g & coop::lanemask_lt())] = i;
    }
  }
  __syncthreads();
  for (uint32_t h = tid; h <= t.mask; h += nthreads) t.claim[h] = 0;
  __syncthreads();
  // 4: probes grouped by key claim a run of their key's targets with one fetch-add.
  for (uint32_t start = 0; start < np; start += nthreads) {
    const uint32_t i = start + tid;
    const bool ok = i < np;
    const uint32_t active = __ballot_sync(0xffffffffu, ok);
    if (ok) {
      const Envelope e = probes[i];
      const uint32_t g = key_group(active, e);
      const int leader = __ffs(g) - 1;
      uint32_t h = kNone, first = 0, avail = 0;
      if (leader == static_cast<int>(lane)) {
        h = chained_slot(t, e, false);
        if (h != kNone) {
          const uint32_t c0 = mem::fetch_add<mem::kBlock>(&t.claim[h], static_cast<uint32_t>(__popc(g)), mem::relaxed);
          const uint32_t n = t.count[h];
          avail = c0 < n ? n - c0 : 0u;
          first = t.offset[h] + c0;
        }
      }
      first = __shfl_sync(active, first, leader);
      avail = __shfl_sync(active, avail, leader);
      const uint32_t r = __popc(g & coop::lanemask_lt());
      if (r < avail) {
        const uint32_t o = t.bucket[first + r];
        result[i] = static_cast<int32_t>(o);
        mem::fetch_or<mem::kBlock>(&taken[o >> 5], 1u << (o & 31), mem::relaxed);
      }
    }
  }
  __syncthreads();
  return kInfoChained;
}

}  // namespace detail

// Unordered matching of one job by a block. `table_smem` is kHashSharedBytes of shared memory.
// Jobs with a wildcard get kStatusWildcard, jobs whose phases exceed both the shared table and
// the job's table get kStatusNoTable; both are left unchanged.
__device__ inline void match_hash(coop::Block b, const MatchJob& job, HashShared& s, uint32_t* table_smem,
                                  HashStrategy strategy = HashStrategy::automatic) {
  const auto wild = [](const Envelope& e) { return has_wildcard(e); };
  const uint32_t prq_n = *job.prq_size, umq_n = *job.umq_size;
  const bool any =
      detail::any_entry(b, job.prq, prq_n, s, wild) || detail::any_entry(b, job.recvs, job.n_recvs, s, wild);
  const uint32_t most = prq_n > umq_n + job.n_msgs ? prq_n : umq_n + job.n_msgs;
  const bool table_ok =
      most <= kHashSharedTargets || (job.table.words && job.table.slots >= 2 * most && job.table.bucket_cap >= most &&
                                     (job.table.slots & (job.table.slots - 1)) == 0);
  if (any || !table_ok) {
    if (threadIdx.x == 0) {
      mem::fetch_or<mem::kDevice>(job.status, any ? kStatusWildcard : kStatusNoTable, mem::relaxed);
      *job.n_matches = 0;
    }
    __syncthreads();
    return;
  }
  if (threadIdx.x == 0) s.info = 0;
  __syncthreads();
  detail::run_batch(
      b, job, s, false, kBlockMaxTargets,
      [&](auto, const Envelope* p, uint32_t np, const Envelope* t, uint32_t nt, int32_t* r, uint32_t* taken) {
        // Shared tables are sized to the phase: clearing costs as much as the slots.
        uint32_t slots = 64;
        while (slots < 2 * nt) slots <<= 1;
        const detail::TableView view = nt <= kHashSharedTargets ? detail::table_view(table_smem, slots)
                                                                : detail::table_view(job.table.words, job.table.slots);
        const uint32_t info = detail::hash_phase(p, np, t, nt, r, taken, s.sums, &s.dups, view, strategy);
        if (threadIdx.x == 0) s.info |= info;
      });
  if (threadIdx.x == 0 && s.info) mem::fetch_or<mem::kDevice>(job.status, s.info, mem::relaxed);
  __syncthreads();
}

}  // namespace gpucomm::matching
