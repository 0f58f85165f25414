#pragma once
// Kernels of gpucomm-bench-rma. Ping-pong kernels run `iters` round trips between PE 0 and PE 1
// (one thread or one block on each side); bandwidth kernels move `bytes` `reps` times, split
// over the grid's groups at the chosen cooperation level.
#include "gpucomm/device/gpucomm_device.cuh"

namespace bench {

using namespace gpucomm;

// p ping-pong on an int: the value itself is the flag. `base` keeps values rising across trials.
__global__ void k_p_pingpong(DeviceHandle h, int* flag, int iters, int base) {
  const int peer = 1 - h.rank;
  for (int i = 1; i <= iters; ++i) {
    const int v = base + i;
    if (h.rank == 0) {
      device::p(h, flag, v, peer);
      device::wait_until(coop::Thread{}, h, flag, Cmp::ge, v);
    } else {
      device::wait_until(coop::Thread{}, h, flag, Cmp::ge, v);
      device::p(h, flag, v, peer);
    }
  }
}

// Ping-pong of `bytes` with put_signal (fused) or put + quiet + signal (separate), at level Coop.
template <class Coop, bool Fused>
__global__ void k_put_pingpong(DeviceHandle h, char* buf, const char* src, size_t bytes, uint64_t* sig, int iters,
                               uint64_t base) {
  Coop c;
  const int peer = 1 - h.rank;
  auto send = [&](uint64_t v) {
    if constexpr (Fused) {
      device::put_signal_nbi(c, h, buf, src, bytes, sig, v, SignalOp::set, peer);
    } else {
      device::put_nbi(c, h, buf, src, bytes, peer);
      device::quiet(c);
      if (coop::thread_rank(c) == 0) device::signal(h, sig, v, SignalOp::set, peer);
    }
  };
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (h.rank == 0) {
      send(v);
      device::signal_wait_until(c, h, sig, Cmp::ge, v);
    } else {
      device::signal_wait_until(c, h, sig, Cmp::ge, v);
      send(v);
    }
  }
}

// Round-trip latency of g (8 bytes) and of fetch_add, from PE 0; the result feeds the next
// address so the loads cannot overlap.
__global__ void k_g_latency(DeviceHandle h, uint64_t* words, int iters, uint64_t* sink) {
  uint64_t acc = 0;
  for (int i = 0; i < iters; ++i) acc += device::g(h, &words[acc & 7], 1 - h.rank);
  *sink = acc;
}
__global__ void k_atomic_latency(DeviceHandle h, uint64_t* word, int iters, uint64_t* sink) {
  uint64_t acc = 0;
  for (int i = 0; i < iters; ++i) acc += device::atomic_fetch_add(h, word, uint64_t(1), 1 - h.rank);
  *sink = acc;
}
// Block-level get latency for `bytes`.
__global__ void k_get_latency(DeviceHandle h, char* dst, const char* src, size_t bytes, int iters) {
  for (int i = 0; i < iters; ++i) device::get(coop::Block{}, h, dst, src, bytes, 1 - h.rank);
}

// Bandwidth: the grid's groups (threads, warps or blocks) each move a contiguous chunk.
template <class Coop>
__global__ void __launch_bounds__(512)
    k_bandwidth(DeviceHandle h, char* remote_sym, char* local, size_t bytes, int reps, int peer, int is_get) {
  Coop c;
  const int per_block = blockDim.x / coop::size(c);
  const size_t groups = static_cast<size_t>(gridDim.x) * static_cast<size_t>(per_block);
  const size_t group = static_cast<size_t>(blockIdx.x) * static_cast<size_t>(per_block) +
                       static_cast<size_t>(threadIdx.x / static_cast<unsigned>(coop::size(c)));
  size_t chunk = (bytes + groups - 1) / groups;
  chunk = (chunk + 15) & ~size_t(15);
  const size_t begin = group * chunk;
  if (begin < bytes) {
    const size_t len = bytes - begin < chunk ? bytes - begin : chunk;
    for (int r = 0; r < reps; ++r) {
      if (is_get) {
        device::get_nbi(c, h, local + begin, remote_sym + begin, len, peer);
      } else {
        device::put_nbi(c, h, remote_sym + begin, local + begin, len, peer);
      }
    }
  }
  device::quiet(c);
}

// Message rate: every thread issues `per_thread` 8-byte p to distinct words.
__global__ void __launch_bounds__(512) k_msg_rate(DeviceHandle h, uint64_t* words, int per_thread, int peer) {
  const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t n = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int i = 0; i < per_thread; ++i)
    device::p(h, &words[(t + static_cast<size_t>(i) * n) % (size_t(1) << 20)], static_cast<uint64_t>(i), peer);
  device::quiet(coop::Thread{});
}

template <int Kind>
__global__ void k_barrier_loop(DeviceHandle h, int iters) {
  for (int i = 0; i < iters; ++i) {
    if constexpr (Kind == 0) {
      device::barrier_all(coop::Thread{}, h);
    } else {
      device::barrier_master(coop::Thread{}, h);
    }
  }
}

}  // namespace bench
