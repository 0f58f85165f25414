#pragma once
// Kernels of gpucomm-bench-msg's `endpoints` section: the same measurements as the communicator's
// (ping-pong between two blocks of one PE, the unexpected path, the rate into one receiving warp,
// the rate with thousands of receives posted), through endpoints (docs/MESSAGING.md, "Endpoints"):
// block 0 owns endpoint 0, block 1 (or the receiving block) endpoint 1, each keeping its matching
// state in shared memory for the whole kernel.
#include <cstdint>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/messaging/endpoints_device.cuh"
#include "msg_kernels.cuh"

namespace msg_bench {

namespace ep = gpucomm::msg::ep;

using PingState = ep::OwnerState<4, 8, 8, 4>;

// 8-byte ping-pong between block 0 (endpoint 0) and block 1 (endpoint 1) of PE 0. Pre-posted: each
// side posts its next receive before it sends; unexpected: each side probes until the message is
// there, then posts the receive that takes it (the message was stored once, in the ring).
template <class C>
__global__ void k_ep_pingpong(ep::EndpointsHandle h, uint64_t* lines, int iters, uint64_t base, uint64_t launch,
                              bool unexpected, Fail* f) {
  C c;
  if (!acts(c)) return;
  __shared__ PingState st;
  const bool ping = blockIdx.x == 0;
  const int me = ping ? 0 : 1, other = ping ? 1 : 0;
  uint64_t* out = lines + (ping ? 0 : 32);
  uint64_t* in = lines + (ping ? 16 : 48);
  ep::open(c, h, me, st);
  uint16_t r = 0;
  const int want_tag = ping ? kPong : kPing, send_tag = ping ? kPing : kPong;
  // Both sides post before either sends: `ready` counts the sides of every launch (`launch` from 1).
  uint64_t* ready = lines + 56;
  if (!unexpected) r = ep::irecv(c, h, st, in, 8, 0, want_tag);
  if (leader(c)) mem::fetch_add<mem::kDevice>(ready, 1ull, mem::release);
  if (!group_wait(c, ready, 2 * launch, f)) return;
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (ping) {
      if (leader(c)) out[0] = v;
      ep::send(c, h, out, 8, 0, other, send_tag);
    }
    if (unexpected) {
      ep::probe(c, h, st, 0, want_tag);
      r = ep::irecv(c, h, st, in, 8, 0, want_tag);
    }
    const ep::Status s = ep::wait(c, h, st, r);
    if (leader(c)) {
      const uint64_t got = mem::load<mem::kDevice>(in, mem::relaxed);
      if (got != v || s.bytes != 8 || s.tag != want_tag) record_bad(f, static_cast<uint64_t>(i), v, got);
    }
    if (!unexpected && i < iters) r = ep::irecv(c, h, st, in, 8, 0, want_tag);
    if (!ping) {
      if (leader(c)) out[0] = v;
      ep::send(c, h, out, 8, 0, other, send_tag);
    }
  }
  ep::close(c, h, st);
}

// The latency of each call of one group messaging its own endpoint: ns[0..2] sum irecv, send
// (8 B to itself) and the wait that drains and delivers it (%globaltimer around each, leader).
template <class C>
__global__ void k_ep_steps(ep::EndpointsHandle h, uint64_t* lines, int iters, unsigned long long* ns) {
  C c;
  if (!acts(c)) return;
  __shared__ PingState st;
  ep::open(c, h, 0, st);
  unsigned long long t_irecv = 0, t_send = 0, t_wait = 0;
  for (int i = 1; i <= iters; ++i) {
    const uint64_t t0 = mem::globaltimer();
    const uint16_t r = ep::irecv(c, h, st, lines + 16, 8, 0, 1);
    const uint64_t t1 = mem::globaltimer();
    if (leader(c)) lines[0] = static_cast<uint64_t>(i);
    ep::send(c, h, lines, 8, 0, 0, 1);
    const uint64_t t2 = mem::globaltimer();
    ep::wait(c, h, st, r);
    const uint64_t t3 = mem::globaltimer();
    t_irecv += t1 - t0;
    t_send += t2 - t1;
    t_wait += t3 - t2;
  }
  ep::close(c, h, st);
  if (leader(c)) {
    ns[0] = t_irecv;
    ns[1] = t_send;
    ns[2] = t_wait;
  }
}

// The rate state: up to 4096 receives in flight (dynamic shared memory), as many bins per class as
// receives (keys rarely share a bin, so a message looks at one or two entries per bin).
template <uint32_t kRecvs>
using RateState = ep::OwnerState<kRecvs, 8, 64, kRecvs>;

struct EpRateArgs {
  ep::EndpointsHandle h;
  int senders;  // sending warps, one per block (blocks 0..senders-1); block `senders` receives on endpoint 0
  int per;      // messages per sender and round
  int rounds;
  int any_source;  // receives name ANY_SOURCE instead of PE 0
  int idle;        // receives posted once on tags no message uses (half ANY_SOURCE when any_source)
  uint64_t* sbuf;  // [senders * 16]
  uint64_t* rbuf;  // [senders * per]
  uint64_t* go;
  uint64_t go_base;
  unsigned long long* ns;  // [6]: posting time, delivery time (sums over the rounds), drain passes, records
                           // drained by them, senders' ns inside send (sum over sends), the part of the
                           // delivery time in waitall (after the drain took every message)
  Fail* f;
};

// Message rate into one receiving warp: k_rate's protocol (receive j has tag j % senders; each
// round the receiver posts the window, releases the senders and waits for every receive, then
// checks every payload), with the receiver's matching state in its shared memory.
template <uint32_t kRecvs>
__global__ void k_ep_rate(EpRateArgs a) {
  const coop::Warp c;
  if (threadIdx.x >= 32) return;
  const int w = a.senders * a.per;
  if (static_cast<int>(blockIdx.x) < a.senders) {
    const int s = static_cast<int>(blockIdx.x);
    uint64_t* out = a.sbuf + static_cast<size_t>(s) * 16;
    for (int round = 0; round < a.rounds; ++round) {
      if (!group_wait(c, a.go, a.go_base + static_cast<uint64_t>(round) + 1, a.f)) return;
      unsigned long long in_send = 0;
      for (int k = 0; k < a.per; ++k) {
        if (leader(c)) out[0] = (static_cast<uint64_t>(s) << 32) | static_cast<uint64_t>(round * a.per + k);
        const uint64_t t0 = mem::globaltimer();
        ep::send(c, a.h, out, 8, 0, 0, s);
        in_send += mem::globaltimer() - t0;
      }
      if (leader(c)) atomicAdd(&a.ns[4], in_send);
    }
    return;
  }
  extern __shared__ unsigned char smem[];
  auto& st = *reinterpret_cast<RateState<kRecvs>*>(smem);
  __shared__ uint16_t ids[1024];
  __shared__ uint16_t idle_ids[4096 - 768];
  ep::open(c, a.h, 0, st);
  if (leader(c)) a.ns[4] = 0;
  for (int j = 0; j < a.idle; ++j) {
    const int src = a.any_source && (j & 1) ? ep::kAnySource : 0;
    idle_ids[j] = ep::irecv(c, a.h, st, a.rbuf + w, 8, src, 1000 + j);
  }
  unsigned long long posting = 0, delivery = 0, passes = 0, records = 0, completing = 0;
  const int source = a.any_source ? ep::kAnySource : 0;
  for (int round = 0; round < a.rounds; ++round) {
    const uint64_t t0 = mem::globaltimer();
    // The warp posts 32 receives per call (lane i: receive j0 + i), in the order j.
    for (int j0 = 0; j0 < w; j0 += 32) {
      const int j = j0 + static_cast<int>(coop::lane_id());
      const auto n = static_cast<uint32_t>(w - j0 < 32 ? w - j0 : 32);
      const uint16_t id = ep::irecv_lanes(c, a.h, st, n, &a.rbuf[j < w ? j : 0], 8, source, j % a.senders);
      if (j < w) ids[j] = id;
    }
    __syncwarp();
    const uint64_t t1 = mem::globaltimer();
    if (leader(c)) mem::store<mem::kDevice>(a.go, a.go_base + static_cast<uint64_t>(round) + 1, mem::release);
    // Drain until every message of the window was taken (passes and records counted), then the
    // waits find their receives done.
    for (uint32_t got = 0; got < static_cast<uint32_t>(w);) {
      const uint32_t n = ep::progress(c, a.h, st);
      got += n;
      passes += 1;
      records += n;
    }
    const uint64_t t_drained = mem::globaltimer();
    ep::waitall(c, a.h, st, ids, static_cast<uint32_t>(w), nullptr);
    const uint64_t t2 = mem::globaltimer();
    posting += t1 - t0;
    delivery += t2 - t1;
    completing += t2 - t_drained;
    for (int j = static_cast<int>(coop::thread_rank(c)); j < w; j += 32) {
      const uint64_t want =
          (static_cast<uint64_t>(j % a.senders) << 32) | static_cast<uint64_t>(round * a.per + j / a.senders);
      const uint64_t got = mem::load<mem::kDevice>(&a.rbuf[j], mem::relaxed);
      if (got != want) record_bad(a.f, static_cast<uint64_t>(round) * w + j, want, got);
    }
    coop::sync(c);
  }
  for (int j = 0; j < a.idle; ++j) {
    ep::cancel(c, a.h, st, idle_ids[j]);
    const ep::Status s = ep::wait(c, a.h, st, idle_ids[j]);
    if (leader(c) && s.error != ep::kErrCancelled) record_bad(a.f, 1u << 30, ep::kErrCancelled, s.error);
  }
  ep::close(c, a.h, st);
  if (leader(c)) {
    a.ns[0] = posting;
    a.ns[1] = delivery;
    a.ns[2] = passes;
    a.ns[3] = records;
    a.ns[5] = completing;
  }
}

}  // namespace msg_bench
