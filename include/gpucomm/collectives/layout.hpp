#pragma once
// What kernels need to run collectives on a team: gpucomm::coll::CollHandle, a versioned POD
// passed by value (Collectives::handle(team)), the layout of a team's workspace in the symmetric
// heap, the signature words of the argument check, and the CollDiag failure record. Plain C++:
// host and device code include it. Protocols: docs/COLLECTIVES.md, "The workspace and the
// protocols".
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpucomm/base/handle.hpp"
#include "gpucomm/base/hd.hpp"
#include "gpucomm/collectives/types.hpp"

namespace gpucomm::coll {

inline constexpr uint32_t kCollMagic = 0x4c4c4f43u;  // "COLL" in memory order
// Bumped whenever CollHandle, the workspace layout or CollDiag change layout or meaning.
inline constexpr uint16_t kCollVersion = 2;
// Channels a workspace may have (GPUCOMM_COLL_MAX_CTAS is clamped to it).
inline constexpr int kMaxChannels = 64;
// Auto-selection rules per operation carried in the handle (size ranges of the cost model).
inline constexpr int kAutoRules = 6;
inline constexpr int kNumOps = static_cast<int>(CollOp::last) + 1;

// CollHandle::flags
inline constexpr uint32_t kCollAllDirect = 1;  // every member is mapped here: LL words may be used
// A one-member team runs the protocol of the one-shot, LL and barrier algorithms with itself as its
// peer (GPUCOMM_COLL_FORCE_PROTOCOL: the protocol's cost measured on one GPU).
inline constexpr uint32_t kCollForceProtocol = 2;
// The calls kCollForceProtocol applies to: the barrier, and the unrooted operations of the one-shot
// and LL algorithms (a rooted one-shot call at one member would be its own root and receiver).
GPUCOMM_HD constexpr bool force_applies(CollOp op, Algorithm a) {
  if (op == CollOp::barrier) return true;
  if (op == CollOp::broadcast || op == CollOp::reduce || op == CollOp::alltoallv) return false;
  return a == Algorithm::oneshot || a == Algorithm::oneshot_ll;
}

// The failure record of a collective on a GPU PE: written once by the first failing thread, in
// host-mapped memory, before the kernel leaves through the device failure record
// (gpucomm/base/handle_device.cuh); Collectives::check_device() reads it.
struct CollDiag {
  static constexpr uint32_t kEmpty = 0, kWriting = 1, kReady = 2;
  enum Kind : uint32_t { none = 0, timeout = 1, mismatch = 2, aborted = 3, bad_argument = 4, count_mismatch = 5 };
  uint32_t state;
  uint32_t kind;
  int32_t team_slot, team_size, team_rank, world_rank;
  uint32_t op, algorithm, channel, reserved;
  uint64_t seq;    // collectives done on this channel before this one
  uint64_t epoch;  // the round
  int32_t peer;    // team rank waited for / whose arguments differ (-1: none)
  int32_t peer_world;
  uint32_t sig_mine, sig_theirs;
  uint64_t seen;      // last value seen in the awaited word
  uint64_t expected;  // what was awaited (or this PE's count)
  uint64_t elapsed_ns;
  uint64_t missing[16];  // team ranks that had not arrived (bit i: rank i, the first 1024)
  uint64_t count;        // this PE's count, root and channels (what the signature hashes)
  int32_t root;
  uint32_t channels;
};

// A team as the collectives see it. Fields below `bytes` change only with kCollVersion.
struct CollHandle {
  uint32_t magic;    // kCollMagic
  uint16_t version;  // kCollVersion
  uint16_t bytes;    // sizeof(CollHandle)
  TeamHandle team;
  char* ws;  // this PE's team workspace (a symmetric address: the same offset on every member)
  uint32_t channels;
  uint32_t flags;           // kCollAllDirect
  uint64_t slot_bytes;      // per source and parity: the region each peer writes into
  uint64_t ring_bytes;      // per parity: the region only the ring predecessor writes into
  uint64_t ll_bytes;        // per source and parity: LL words (8 bytes each, 4 of payload)
  uint64_t channel_offset;  // of channel 0 from ws
  uint64_t channel_stride;
  uint32_t nodes;             // nodes the team spans
  uint32_t per_node;          // members per node when every node has the same number, else 0
  const int32_t* node_table;  // [nodes][per_node] team ranks (nullptr when per_node == 0)
  int32_t node_index;         // this PE's node (row of node_table)
  int32_t local_index;        // this PE's column of node_table
  CollDiag* diag;             // host-mapped (GPU PEs), nullptr on host PEs
  // Algorithm::automatic: for operation o, the first rule with bytes <= auto_upto[o][i] wins
  // (the last rule of each operation has UINT64_MAX).
  uint64_t auto_upto[kNumOps][kAutoRules];
  uint8_t auto_algo[kNumOps][kAutoRules];
  uint8_t auto_channels[kNumOps][kAutoRules];  // channels of host-API calls for that range
};

static_assert(std::is_trivially_copyable_v<CollHandle> && std::is_standard_layout_v<CollHandle>,
              "CollHandle is passed to kernels by value");
static_assert(offsetof(CollHandle, bytes) == 6, "the version fields lead the handle in every version");

// Raises Errc::invalid_argument naming `what` when the magic, version or size is not this library's.
void validate_handle(const CollHandle& h, const char* what);

// ---- workspace layout ----
// Workspace (the same symmetric range on every member):
//   [0, 128)                grid barrier: count (u32), generation (u32)
//   [128, 128 + 4 n)        node table (int32), padded to 128
//   channel c at channel_offset + c * channel_stride:
//     local words: epoch, seq, lane (u64), then sent[2][n] (u64)   written and read by this PE only
//     flags[2][n]            flags[p][i] written by team rank i only
//     acks[n]                acks[i] written by team rank i only
//     scratch[2][n * slot_bytes + ring_bytes]   slot i written by team rank i; the ring region by
//                                               the ring predecessor of this channel
//     ll[2][n * ll_bytes]    LL slot i written by team rank i
GPUCOMM_HD constexpr uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

struct ChannelLayout {
  uint64_t local, flags, acks, scratch, ll, stride;  // offsets inside a channel, and its size
  uint64_t scratch_parity;                           // bytes of one parity of scratch
  uint64_t ll_parity;
};

GPUCOMM_HD constexpr ChannelLayout channel_layout(int n, uint64_t slot_bytes, uint64_t ring_bytes, uint64_t ll_bytes) {
  ChannelLayout l{};
  const uint64_t un = static_cast<uint64_t>(n);
  l.local = 0;
  l.flags = align_up(8 * (3 + 2 * un), 128);
  l.acks = l.flags + align_up(un * 16, 128);
  l.scratch = l.acks + align_up(8 * un, 128);
  l.scratch_parity = un * slot_bytes + ring_bytes;
  l.ll = l.scratch + 2 * l.scratch_parity;
  l.ll_parity = un * ll_bytes;
  l.stride = align_up(l.ll + 2 * l.ll_parity, 256);
  return l;
}
GPUCOMM_HD constexpr uint64_t workspace_header_bytes(int n) {
  return 128 + align_up(4 * static_cast<uint64_t>(n), 128);
}

// ---- signatures ----
// A flag word is signature << 32 | stamp, where stamp = (epoch mod 2^20) << 12 | step. Readers
// wait until the stamp has reached theirs (a 32-bit serial comparison: within one round a writer
// may be steps ahead), then compare signatures. The signature: operation (4 bits), type (4),
// reduction (3), algorithm (4), then a 17-bit hash of count, root and channels.
GPUCOMM_HD constexpr uint32_t stamp_of(uint64_t epoch, uint32_t step) {
  return static_cast<uint32_t>((epoch & 0xfffffu) << 12) | (step & 0xfffu);
}
// Whether `seen` has reached `want` (both stamps; serial arithmetic).
GPUCOMM_HD constexpr bool stamp_reached(uint32_t seen, uint32_t want) {
  return static_cast<int32_t>(seen - want) >= 0;
}
GPUCOMM_HD constexpr uint64_t flag_word(uint32_t sig, uint64_t epoch, uint32_t step) {
  return static_cast<uint64_t>(sig) << 32 | stamp_of(epoch, step);
}
// LL words: upper half 0x80000000 | (epoch & 0x7fffffff) (never 0), lower half the payload.
GPUCOMM_HD constexpr uint32_t ll_flag(uint64_t epoch) {
  return 0x80000000u | static_cast<uint32_t>(epoch & 0x7fffffffu);
}
GPUCOMM_HD constexpr uint64_t ll_word(uint32_t flag, uint32_t payload) {
  return static_cast<uint64_t>(flag) << 32 | payload;
}

GPUCOMM_HD constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}
GPUCOMM_HD constexpr uint32_t signature(CollOp op, DataType dt, RedOp red, Algorithm algo, uint64_t count, int root,
                                        uint32_t channels) {
  const uint64_t h =
      mix64(count * 0x9e3779b97f4a7c15ull ^ mix64(static_cast<uint64_t>(static_cast<uint32_t>(root)) << 20 ^ channels));
  return (static_cast<uint32_t>(op) & 0xfu) | (static_cast<uint32_t>(dt) & 0xfu) << 4 |
         (static_cast<uint32_t>(red) & 0x7u) << 8 | (static_cast<uint32_t>(algo) & 0xfu) << 11 |
         static_cast<uint32_t>(h & 0x1ffffu) << 15;
}
GPUCOMM_HD constexpr CollOp sig_op(uint32_t s) {
  return static_cast<CollOp>(s & 0xfu);
}
GPUCOMM_HD constexpr DataType sig_type(uint32_t s) {
  return static_cast<DataType>((s >> 4) & 0xfu);
}
GPUCOMM_HD constexpr RedOp sig_redop(uint32_t s) {
  return static_cast<RedOp>((s >> 8) & 0x7u);
}
GPUCOMM_HD constexpr Algorithm sig_algorithm(uint32_t s) {
  return static_cast<Algorithm>((s >> 11) & 0xfu);
}

}  // namespace gpucomm::coll
