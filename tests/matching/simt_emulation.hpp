#pragma once
// A small SIMT emulator that runs gpucomm's header-only device code on the host, so that CI
// (which has no GPU) exercises the same engine logic as the GPU: every GPU thread of one block is
// an OS thread; warp collectives (__ballot_sync, __shfl_sync, __match_any_sync, __syncwarp) are
// rendezvous of the lanes in their mask; __syncthreads is a barrier. Lanes run independently
// between collectives, which is at least as adversarial as independent thread scheduling.
// Include it before any *_device.cuh header, in a host-only translation unit.

#define GPUCOMM_SIMT_EMULATION 1
#define __device__
#define __host__
#define __forceinline__ inline

#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace simt {

struct Dim {
  uint32_t x = 0, y = 0, z = 0;
};

struct Round {
  uint32_t arrived = 0, left = 0;
  bool done = false;
  uint64_t vals[32];
  int args[32];
  uint64_t res[32];
};

struct Warp {
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint32_t, Round> rounds;  // one pending collective per participant mask
};

struct Block {
  explicit Block(uint32_t threads) : barrier(threads), warps((threads + 31) / 32) {}
  std::barrier<> barrier;
  std::vector<Warp> warps;
  std::atomic<int> or_acc{0};  // __syncthreads_or
};

inline Block* g_block = nullptr;
inline std::atomic<uint64_t> g_launches{0};  // %gridid of the emulated launches

}  // namespace simt

inline uint64_t simt_grid_id() {
  return simt::g_launches.load();
}

inline thread_local simt::Dim threadIdx;
inline simt::Dim blockDim;

namespace simt {

// Runs body() on `threads` emulated GPU threads of one block and waits for them.
inline void launch(uint32_t threads, const std::function<void()>& body) {
  Block block(threads);
  g_block = &block;
  g_launches.fetch_add(1);
  blockDim = Dim{threads, 1, 1};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (uint32_t t = 0; t < threads; ++t) {
    pool.emplace_back([t, &body] {
      threadIdx = Dim{t, 0, 0};
      body();
    });
  }
  for (auto& th : pool) th.join();
  g_block = nullptr;
}

// All lanes of `mask` deposit (v, arg); the last one computes every lane's result with op.
inline std::atomic<uint64_t> g_collectives{0};
template <class Op>
uint64_t collective(uint32_t mask, uint64_t v, int arg, Op op) {
  const uint32_t lane = threadIdx.x & 31u;
  if (lane == 0) g_collectives.fetch_add(1);
  if (!((mask >> lane) & 1u)) throw std::logic_error("warp collective called by a lane outside its mask");
  Warp& w = g_block->warps[threadIdx.x >> 5];
  std::unique_lock<std::mutex> lk(w.mu);
  Round& r = w.rounds[mask];
  w.cv.wait(lk, [&] { return !r.done; });
  r.vals[lane] = v;
  r.args[lane] = arg;
  r.arrived |= 1u << lane;
  if (r.arrived == mask) {
    op(r, mask);
    r.done = true;
    r.left = static_cast<uint32_t>(__builtin_popcount(mask));
    w.cv.notify_all();
  } else {
    w.cv.wait(lk, [&] { return r.done; });
  }
  const uint64_t out = r.res[lane];
  if (--r.left == 0) {
    r.done = false;
    r.arrived = 0;
    w.cv.notify_all();
  }
  return out;
}

}  // namespace simt

inline uint32_t __ballot_sync(uint32_t mask, bool pred) {
  return static_cast<uint32_t>(simt::collective(mask, pred ? 1 : 0, 0, [](simt::Round& r, uint32_t m) {
    uint32_t b = 0;
    for (int l = 0; l < 32; ++l)
      if (((m >> l) & 1u) && r.vals[l]) b |= 1u << l;
    for (int l = 0; l < 32; ++l) r.res[l] = b;
  }));
}

template <class T>
inline T __shfl_sync(uint32_t mask, T v, int src) {
  static_assert(sizeof(T) == 4, "32-bit shuffles only");
  uint32_t bits;
  __builtin_memcpy(&bits, &v, 4);
  const uint64_t r = simt::collective(mask, bits, src, [](simt::Round& rd, uint32_t m) {
    for (int l = 0; l < 32; ++l) {
      if ((m >> l) & 1u) {
        const int s = rd.args[l] & 31;
        if (!((m >> s) & 1u)) throw std::logic_error("__shfl_sync from a lane outside the mask");
        rd.res[l] = rd.vals[s];
      }
    }
  });
  const uint32_t out32 = static_cast<uint32_t>(r);
  T out;
  __builtin_memcpy(&out, &out32, 4);
  return out;
}

inline uint32_t __shfl_up_sync(uint32_t mask, uint32_t v, unsigned d) {
  return static_cast<uint32_t>(simt::collective(mask, v, static_cast<int>(d), [](simt::Round& rd, uint32_t m) {
    for (int l = 0; l < 32; ++l)
      if ((m >> l) & 1u) rd.res[l] = l >= rd.args[l] ? rd.vals[l - rd.args[l]] : rd.vals[l];
  }));
}

template <class T>
inline uint32_t __match_any_sync(uint32_t mask, T v) {
  static_assert(sizeof(T) == 4, "32-bit values only");
  uint32_t bits;
  __builtin_memcpy(&bits, &v, 4);
  return static_cast<uint32_t>(simt::collective(mask, bits, 0, [](simt::Round& rd, uint32_t m) {
    for (int l = 0; l < 32; ++l) {
      if (!((m >> l) & 1u)) continue;
      uint32_t g = 0;
      for (int k = 0; k < 32; ++k)
        if (((m >> k) & 1u) && rd.vals[k] == rd.vals[l]) g |= 1u << k;
      rd.res[l] = g;
    }
  }));
}

inline void __syncwarp(uint32_t mask = 0xffffffffu) {
  simt::collective(mask, 0, 0, [](simt::Round&, uint32_t) {});
}
inline void __syncthreads() {
  simt::g_block->barrier.arrive_and_wait();
}
inline int __any_sync(uint32_t mask, int pred) {
  return __ballot_sync(mask, pred != 0) != 0 ? 1 : 0;
}
// A barrier that also ORs every thread's predicate: a second barrier makes the sum complete
// before anyone reads it, a third keeps the next call's contributions out until all read it.
inline int __syncthreads_or(int pred) {
  simt::Block& b = *simt::g_block;
  b.barrier.arrive_and_wait();
  if (pred) b.or_acc.fetch_or(1);
  b.barrier.arrive_and_wait();
  const int r = b.or_acc.load();
  b.barrier.arrive_and_wait();
  if (threadIdx.x == 0) b.or_acc.store(0);
  return r;
}
inline int __ffs(uint32_t x) {
  return __builtin_ffs(static_cast<int>(x));
}
inline int __ffs(int x) {
  return __builtin_ffs(x);
}
inline int __popc(uint32_t x) {
  return __builtin_popcount(x);
}

inline void __nanosleep(unsigned) {
  std::this_thread::yield();
}

namespace simt {
inline unsigned long long now_ns() {
  return static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
}  // namespace simt

// The part of libcu++ the queue uses, over std::atomic_ref (scopes do not matter on the host).
namespace cuda {
enum thread_scope { thread_scope_system, thread_scope_device, thread_scope_block, thread_scope_thread };
namespace std {
using ::std::memory_order;
using ::std::memory_order_acq_rel;
using ::std::memory_order_acquire;
using ::std::memory_order_relaxed;
using ::std::memory_order_release;
using ::std::memory_order_seq_cst;
}  // namespace std
using ::std::memory_order;
inline constexpr memory_order memory_order_relaxed = ::std::memory_order_relaxed;
inline constexpr memory_order memory_order_acquire = ::std::memory_order_acquire;
inline constexpr memory_order memory_order_release = ::std::memory_order_release;
inline constexpr memory_order memory_order_acq_rel = ::std::memory_order_acq_rel;
inline constexpr memory_order memory_order_seq_cst = ::std::memory_order_seq_cst;
template <class T, thread_scope S>
struct atomic_ref : ::std::atomic_ref<T> {
  explicit atomic_ref(T& v) : ::std::atomic_ref<T>(v) {}
  // fetch_max is C++26 in std::atomic_ref; libcu++ has it.
  T fetch_max(T v, memory_order o) const {
    T cur = this->load(::std::memory_order_relaxed);
    while (cur < v && !this->compare_exchange_weak(cur, v, o, ::std::memory_order_relaxed)) {
    }
    return cur;
  }
};
inline void atomic_thread_fence(::std::memory_order o, thread_scope) {
  ::std::atomic_thread_fence(o);
}
}  // namespace cuda
