#pragma once
// Ordering stress: every thread of the sender grid is a channel that sends `per_channel`
// 16-byte messages to its own fresh slots on the peer, each with put_signal (set, value =
// message count). Receiver threads poll their channel's signal and check every message up to
// the value seen: a message whose payload is not there while its signal (or a later one) is
// visible is an ordering violation.
#include "rma_checks.cuh"

namespace rma_checks {

struct alignas(16) Msg {
  uint64_t seq;
  uint64_t check;
};

__host__ __device__ inline uint64_t msg_check(uint64_t seed, uint64_t channel, uint64_t seq) {
  uint64_t x = seed ^ (channel * 0x9E3779B97F4A7C15ull) ^ (seq * 0xC2B2AE3D27D4EB4Full);
  x ^= x >> 31, x *= 0x7FB5D5A2B1D3C3E5ull, x ^= x >> 29;
  return x;
}

__global__ void k_stress_send(DeviceHandle h, Msg* slots, uint64_t* sigs, int per_channel, int pe, uint64_t seed) {
  const uint64_t ch = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  Msg* mine = slots + ch * static_cast<uint64_t>(per_channel);
  for (int i = 0; i < per_channel; ++i) {
    Msg m{static_cast<uint64_t>(i), msg_check(seed, ch, static_cast<uint64_t>(i))};
    device::put_signal_nbi(coop::Thread{}, h, &mine[i], &m, sizeof m, &sigs[ch], static_cast<uint64_t>(i) + 1,
                           SignalOp::set, pe);
  }
}

// counters[0]: violations, [1]: messages checked, [2]: channels that stalled past the timeout
__global__ void k_stress_recv(DeviceHandle h, const Msg* slots, uint64_t* sigs, int per_channel, uint64_t seed,
                              unsigned long long* counters) {
  const uint64_t ch = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const Msg* mine = slots + ch * static_cast<uint64_t>(per_channel);
  uint64_t checked = 0, bad = 0;
  uint64_t last_progress = mem::globaltimer();
  while (checked < static_cast<uint64_t>(per_channel)) {
    uint64_t seen = mem::load<mem::kSystem>(&sigs[ch], mem::acquire);
    if (seen > checked) {
      for (; checked < seen; ++checked) {
        const volatile Msg* m = &mine[checked];
        if (m->seq != checked || m->check != msg_check(seed, ch, checked)) ++bad;
      }
      last_progress = mem::globaltimer();
    } else if (h.timeout_ns && mem::globaltimer() - last_progress > h.timeout_ns) {
      atomicAdd(&counters[2], 1ull);
      break;
    }
  }
  atomicAdd(&counters[0], static_cast<unsigned long long>(bad));
  atomicAdd(&counters[1], static_cast<unsigned long long>(checked));
}

}  // namespace rma_checks
