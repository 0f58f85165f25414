#pragma once
// Kernels of gpucomm-bench-proxy. They use the device API as applications do; whether an
// operation is a store or a descriptor for an agent is the runtime's transport (GPUCOMM_TRANSPORT).
// Sources are global memory: an agent reads them after the post.
#include "gpucomm/device/gpucomm_device.cuh"

namespace proxy_bench {

using namespace gpucomm;

// put_signal round trips. With 2 PEs: ping-pong between PE 0 and PE 1 (time / 2 per one-way
// trip); with 1 PE: to itself, waiting for its own signal (one descriptor round trip per
// iteration: post, agent, data, signal, observed).
template <class Coop>
__global__ void k_put_signal_trips(DeviceHandle h, char* buf, const char* src, size_t bytes, uint64_t* sig, int iters,
                                   uint64_t base) {
  Coop c;
  const int peer = h.size == 1 ? 0 : 1 - h.rank;
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (h.rank == 0) {
      device::put_signal_nbi(c, h, buf, src, bytes, sig, v, SignalOp::set, peer);
      device::signal_wait_until(c, h, sig, Cmp::ge, v);
    } else {
      device::signal_wait_until(c, h, sig, Cmp::ge, v);
      device::put_signal_nbi(c, h, buf, src, bytes, sig, v, SignalOp::set, peer);
    }
  }
  device::quiet(c, h);
}

// Bandwidth: the grid's blocks split `bytes` and put their share `reps` times, then quiet.
__global__ void k_put_bw(DeviceHandle h, char* dst, const char* src, size_t bytes, int reps, int pe) {
  const size_t per = ((bytes + gridDim.x - 1) / gridDim.x + 15) & ~size_t(15);
  const size_t begin = static_cast<size_t>(blockIdx.x) * per;
  const size_t len = begin >= bytes ? 0 : (bytes - begin < per ? bytes - begin : per);
  for (int r = 0; r < reps; ++r)
    if (len) device::put_nbi(coop::Block{}, h, dst + begin, src + begin, len, pe);
  device::quiet(coop::Block{}, h);
}

// Words of the message-rate kernel: every put of a trial goes to a word of its own (modulo this).
inline constexpr size_t kRateWords = size_t(1) << 20;

// Message rate: every thread puts `per_thread` 8-byte values (p) to `pe`, sweep i of the grid to
// words [i * threads, (i + 1) * threads) (no agent can merge two writes of one word).
__global__ void k_msg_rate(DeviceHandle h, uint64_t* words, int per_thread, int pe) {
  const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t t = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  for (int i = 0; i < per_thread; ++i)
    device::p(h, &words[(static_cast<uint64_t>(i) * threads + t) & (kRateWords - 1)], static_cast<uint64_t>(i), pe);
  device::quiet(coop::Thread{}, h);
}

}  // namespace proxy_bench
