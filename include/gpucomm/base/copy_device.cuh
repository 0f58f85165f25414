#pragma once
// The copy loop behind put and get: the group's threads move 16-byte vectors, coalesced (thread
// t takes vectors t, t+n, ...), with kUnroll loads in flight per thread before their stores.
// Misaligned heads and short tails go by narrower words.
#include <cstdint>

#include "gpucomm/base/coop.cuh"

namespace gpucomm::detail {

inline constexpr int kUnroll = 8;

template <class V>
__device__ inline void copy_units(int t, int n, V* __restrict__ d, const V* __restrict__ s, size_t count) {
  const size_t step = static_cast<size_t>(n);
  size_t i = static_cast<size_t>(t);
  for (; i + (kUnroll - 1) * step < count; i += kUnroll * step) {
    V r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = s[i + static_cast<size_t>(u) * step];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) d[i + static_cast<size_t>(u) * step] = r[u];
  }
  for (; i < count; i += step) d[i] = s[i];
}

// Fewer than 16 bytes from a 16-byte-aligned destination, by one thread: 8, 4, 2, 1.
__device__ inline void copy_small(char* d, const char* s, size_t bytes) {
  const bool same8 = ((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 7) == 0;
  size_t i = 0;
  if (same8)
    for (; i + 8 <= bytes; i += 8) *reinterpret_cast<uint64_t*>(d + i) = *reinterpret_cast<const uint64_t*>(s + i);
  if (((reinterpret_cast<uintptr_t>(d + i) | reinterpret_cast<uintptr_t>(s + i)) & 3) == 0)
    for (; i + 4 <= bytes; i += 4) *reinterpret_cast<uint32_t*>(d + i) = *reinterpret_cast<const uint32_t*>(s + i);
  for (; i < bytes; ++i) d[i] = s[i];
}

template <class Coop>
__device__ inline void copy(Coop c, void* dst, const void* src, size_t bytes) {
  const int t = coop::thread_rank(c), n = coop::size(c);
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const uintptr_t da = reinterpret_cast<uintptr_t>(d), sa = reinterpret_cast<uintptr_t>(s);
  if (((da ^ sa) & 15) == 0) {
    size_t head = (16 - (da & 15)) & 15;
    if (head > bytes) head = bytes;
    if (t == 0) copy_small(d, s, head);
    size_t vecs = (bytes - head) / 16;
    copy_units(t, n, reinterpret_cast<int4*>(d + head), reinterpret_cast<const int4*>(s + head), vecs);
    size_t done = head + vecs * 16;
    if (t == n - 1) copy_small(d + done, s + done, bytes - done);
  } else if (((da ^ sa) & 7) == 0) {
    size_t head = (8 - (da & 7)) & 7;
    if (head > bytes) head = bytes;
    if (t == 0) copy_small(d, s, head);
    size_t words = (bytes - head) / 8;
    copy_units(t, n, reinterpret_cast<uint64_t*>(d + head), reinterpret_cast<const uint64_t*>(s + head), words);
    size_t done = head + words * 8;
    if (t == n - 1) copy_small(d + done, s + done, bytes - done);
  } else if (((da ^ sa) & 3) == 0) {
    size_t head = (4 - (da & 3)) & 3;
    if (head > bytes) head = bytes;
    if (t == 0) copy_small(d, s, head);
    size_t words = (bytes - head) / 4;
    copy_units(t, n, reinterpret_cast<uint32_t*>(d + head), reinterpret_cast<const uint32_t*>(s + head), words);
    size_t done = head + words * 4;
    if (t == n - 1) copy_small(d + done, s + done, bytes - done);
  } else {
    copy_units(t, n, reinterpret_cast<unsigned char*>(d), reinterpret_cast<const unsigned char*>(s), bytes);
  }
}

}  // namespace gpucomm::detail
