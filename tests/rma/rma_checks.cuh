#pragma once
// Device-API checks shared by the single-PE GoogleTest and the multi-PE launch program. Every PE
// sends to its right neighbour and checks what its left neighbour sent (a PE alone sends to
// itself). Data is random (seeded per rank from a job-wide seed), outputs are poisoned first,
// and each failure is printed with the operation, level, size and first differing byte.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpucomm/device/gpucomm_device.cuh"
#include "gpucomm/gpucomm.hpp"

namespace rma_checks {

using namespace gpucomm;

#define RMA_CUDA(call)                                                                                   \
  do {                                                                                                   \
    cudaError_t e_ = (call);                                                                             \
    if (e_ != cudaSuccess) {                                                                             \
      rt.check_device();                                                                                 \
      throw std::runtime_error(std::string(#call) + " failed: " + cudaGetErrorString(e_) + " at line " + \
                               std::to_string(__LINE__));                                                \
    }                                                                                                    \
  } while (0)
#define RMA_LAUNCHED() RMA_CUDA(cudaGetLastError())

struct Report {
  int failures = 0;
  void fail(const std::string& what) {
    ++failures;
    if (failures <= 40) std::fprintf(stderr, "CHECK failed: %s\n", what.c_str());
  }
};

inline std::vector<uint8_t> random_bytes(uint64_t seed, size_t n) {
  std::mt19937_64 g(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(g());
  return v;
}

constexpr uint8_t kPoison = 0xA5;

template <class Coop>
const char* coop_name();
template <>
inline const char* coop_name<coop::Thread>() {
  return "thread";
}
template <>
inline const char* coop_name<coop::Warp>() {
  return "warp";
}
template <>
inline const char* coop_name<coop::Block>() {
  return "block";
}
template <class Coop>
int coop_threads();
template <>
inline int coop_threads<coop::Thread>() {
  return 1;
}
template <>
inline int coop_threads<coop::Warp>() {
  return 32;
}
template <>
inline int coop_threads<coop::Block>() {
  return 256;
}

// ---- kernels ----
template <class Coop>
__global__ void k_put(DeviceHandle h, char* dst, const char* src, size_t bytes, int pe, int nbi) {
  Coop c;
  if (nbi) {
    device::put_nbi(c, h, dst, src, bytes, pe);
    device::quiet(c, h);
  } else {
    device::put(c, h, dst, src, bytes, pe);
  }
}
template <class Coop>
__global__ void k_get(DeviceHandle h, char* dst, const char* src, size_t bytes, int pe, int nbi) {
  Coop c;
  if (nbi) {
    device::get_nbi(c, h, dst, src, bytes, pe);
    device::quiet(c, h);  // a get through a proxy completes with quiet
  } else {
    device::get(c, h, dst, src, bytes, pe);
  }
}
template <class Coop>
__global__ void k_put_signal(DeviceHandle h, char* dst, const char* src, size_t bytes, uint64_t* sig, uint64_t v,
                             SignalOp op, int pe) {
  device::put_signal(Coop{}, h, dst, src, bytes, sig, v, op, pe);
}
// Waits for the signal, then copies what arrived into `out` (poison there means the data was
// not visible when the signal was).
template <class Coop>
__global__ void k_wait_copy(DeviceHandle h, uint64_t* sig, uint64_t v, const char* slot, char* out, size_t bytes,
                            uint64_t* seen) {
  Coop c;
  uint64_t s = device::signal_wait_until(c, h, sig, Cmp::ge, v);
  detail::copy(c, out, slot, bytes);
  if (coop::thread_rank(c) == 0) *seen = s;
}
__global__ void k_scalars(DeviceHandle h, int32_t* w32, uint64_t* w64, double* wd, int pe, int32_t a, uint64_t b,
                          double d, uint64_t* out) {
  device::p(h, w32, a, pe);
  device::p(h, w64, b, pe);
  device::p(h, wd, d, pe);
  device::quiet(coop::Thread{}, h);
  out[0] = static_cast<uint64_t>(static_cast<uint32_t>(device::g(h, w32, pe)));
  out[1] = device::g(h, w64, pe);
  double back = device::g(h, wd, pe);
  memcpy(&out[2], &back, 8);
  // ptr(): a direct store, then a direct load
  uint64_t* direct = device::ptr(h, w64 + 1, pe);
  out[3] = direct ? 1 : 0;
  if (direct) {
    *reinterpret_cast<volatile uint64_t*>(direct) = b ^ 0xFFFF;
    __threadfence_system();
    out[4] = *reinterpret_cast<volatile uint64_t*>(direct);
  }
  out[5] = device::ptr(h, w64, h.size) == nullptr ? 1 : 0;
}
// Sets the six compare words on `pe` (each to a value only its comparison accepts).
__global__ void k_set_cmp_words(DeviceHandle h, int64_t* w64, int32_t* w32, uint32_t* u32, int pe) {
  const int64_t target[6] = {7, 5, 200, 150, 50, 60};
  for (int i = 0; i < 6; ++i) {
    device::p(h, &w64[i], target[i], pe);
    device::p(h, &w32[i], static_cast<int32_t>(target[i]), pe);
    device::p(h, &u32[i], static_cast<uint32_t>(target[i]), pe);
  }
  device::quiet(coop::Thread{}, h);
}
template <class Coop>
__global__ void k_wait_cmp_words(DeviceHandle h, int64_t* w64, int32_t* w32, uint32_t* u32, uint64_t* out) {
  Coop c;
  const Cmp cmps[6] = {Cmp::eq, Cmp::ne, Cmp::gt, Cmp::ge, Cmp::lt, Cmp::le};
  const int64_t arg[6] = {7, 100, 150, 150, 60, 60};
  for (int i = 0; i < 6; ++i) {
    int64_t a = device::wait_until(c, h, &w64[i], cmps[i], arg[i]);
    int32_t b = device::wait_until(c, h, &w32[i], cmps[i], static_cast<int32_t>(arg[i]));
    uint32_t d = device::wait_until(c, h, &u32[i], cmps[i], static_cast<uint32_t>(arg[i]));
    bool t =
        device::test(h, &w64[i], cmps[i], arg[i]) && device::test(h, &u32[i], cmps[i], static_cast<uint32_t>(arg[i]));
    if (coop::thread_rank(c) == 0) {
      out[i] =
          static_cast<uint64_t>(a) ^ (static_cast<uint64_t>(b) << 20) ^ (static_cast<uint64_t>(d) << 40) ^ (t ? 0 : 1);
    }
  }
  // signal_wait_until with every comparison on the signal word out[7] set by the sender
}
// Every atomic on `pe`'s copy of word[me], at device or system scope, against a sequential model.
template <mem::Scope S, class T>
__global__ void k_atomics(DeviceHandle h, T* word, int pe, uint64_t seed, uint64_t* mismatches) {
  T model = 0;
  device::atomic_set<S>(h, word, T(0), pe);
  uint64_t x = seed | 1;
  uint64_t bad = 0;
  for (int i = 0; i < 400; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    T v = static_cast<T>(x >> 3);
    T old = 0;
    switch (x % 9) {
      case 0:
        old = device::atomic_fetch_add<S>(h, word, v, pe);
        bad += old != model;
        model = static_cast<T>(model + v);
        break;
      case 1:
        old = device::atomic_swap<S>(h, word, v, pe);
        bad += old != model;
        model = v;
        break;
      case 2:
        old = device::atomic_fetch_and<S>(h, word, v, pe);
        bad += old != model;
        model &= v;
        break;
      case 3:
        old = device::atomic_fetch_or<S>(h, word, v, pe);
        bad += old != model;
        model |= v;
        break;
      case 4:
        old = device::atomic_fetch_xor<S>(h, word, v, pe);
        bad += old != model;
        model ^= v;
        break;
      case 5: {
        T expected = (x & 64) ? model : static_cast<T>(model + 1);
        old = device::atomic_compare_swap<S>(h, word, expected, v, pe);
        bad += old != model;
        if (expected == model) model = v;
        break;
      }
      case 6:
        old = device::atomic_fetch_inc<S>(h, word, pe);
        bad += old != model;
        model = static_cast<T>(model + 1);
        break;
      case 7:
        device::atomic_add<S>(h, word, v, pe);
        model = static_cast<T>(model + v);
        break;
      default:
        device::atomic_inc<S>(h, word, pe);
        model = static_cast<T>(model + 1);
        break;
    }
    bad += device::atomic_fetch<S>(h, word, pe) != model;
  }
  *mismatches = bad;
}
// Contention: every thread of the grid increments the counter on `pe`.
__global__ void k_atomic_storm(DeviceHandle h, uint64_t* counter, int pe, int iters) {
  for (int i = 0; i < iters; ++i) device::atomic_inc(h, counter, pe);
}
// Barriers: before each barrier every PE writes the round into its slot on the right
// neighbour; after it, the slot written by the left neighbour must hold that round.
template <class Coop>
__global__ void k_barriers(DeviceHandle h, TeamHandle t, uint64_t* slots, int rounds, int kind, uint64_t* errors) {
  Coop c;
  const int me = team_world_rank(t, t.rank);
  const int right = team_world_rank(t, (t.rank + 1) % t.size),
            left = team_world_rank(t, (t.rank - 1 + t.size) % t.size);
  auto barrier = [&] {
    if (kind == 0) {
      device::barrier_master(c, h);
    } else if (kind == 1) {
      device::barrier_dissemination(c, h);
    } else if (kind == 2) {
      device::barrier_all(c, h);
    } else {
      device::barrier(c, h, t);
    }
  };
  uint64_t bad = 0;
  for (int r = 1; r <= rounds; ++r) {
    if (coop::thread_rank(c) == 0) device::p(h, &slots[me], static_cast<uint64_t>(r), right);
    barrier();
    const uint64_t seen = mem::load<mem::kSystem>(&slots[left], mem::relaxed);
    if (coop::thread_rank(c) == 0 && seen != static_cast<uint64_t>(r)) ++bad;
    barrier();  // nobody overwrites the slot before everyone read it
  }
  if (coop::thread_rank(c) == 0) *errors = bad;
}
// Writes through a registered buffer's table into `pe`'s buffer.
__global__ void k_registered(void* const* table, int pe, uint64_t value, size_t words) {
  auto* dst = static_cast<volatile uint64_t*>(table[pe]);
  for (size_t i = threadIdx.x; i < words; i += blockDim.x) dst[i] = value + i;
  __threadfence_system();
}

}  // namespace rma_checks
