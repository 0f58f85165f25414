#pragma once
// Kernels of gpucomm-bench-msg. One PE messages itself: block 0 and block 1 of one kernel play the
// two sides. Every wait is bounded: the floors give up after kGiveUpNs and set Fail::gave_up; the
// messaging and one-sided calls have the runtime's GPUCOMM_TIMEOUT and trap with a record that
// Messenger::check_device() raises on the host.
#include <cstdint>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/device/gpucomm_device.cuh"
#include "gpucomm/messaging/messaging_device.cuh"

namespace msg_bench {

using namespace gpucomm;

inline constexpr uint64_t kGiveUpNs = 2000000000ull;  // a floor's side that sees nothing for 2 s stops
inline constexpr int kPing = 1, kPong = 2, kRndv = 3;

// What a kernel reports: a floor that gave up, and the payloads or statuses that were wrong.
struct Fail {
  uint32_t gave_up;
  uint32_t pad;
  unsigned long long bad;
  unsigned long long first_index, first_want, first_got;
};

__device__ inline void record_bad(Fail* f, uint64_t index, uint64_t want, uint64_t got) {
  if (mem::fetch_add<mem::kDevice>(&f->bad, 1ull, mem::relaxed) == 0) {
    f->first_index = index;
    f->first_want = want;
    f->first_got = got;
  }
}

// Which threads act for a cooperation level: thread 0, warp 0, or the whole block.
__device__ inline bool acts(coop::Thread) {
  return threadIdx.x == 0;
}
__device__ inline bool acts(coop::Warp) {
  return threadIdx.x < 32;
}
__device__ inline bool acts(coop::Block) {
  return true;
}
template <class C>
__device__ inline bool leader(C c) {
  return coop::thread_rank(c) == 0;
}

// The group's leader spins until *word >= v (acquire, device scope), then the group syncs: the
// cost a group pays to learn a flag. False for every thread once any side gave up.
template <class C>
__device__ inline bool group_wait(C c, const uint64_t* word, uint64_t v, Fail* f) {
  if (leader(c)) {
    const uint64_t start = mem::globaltimer();
    for (uint32_t n = 1; mem::load<mem::kDevice>(word, mem::acquire) < v; ++n) {
      if ((n & 1023u) == 0 && mem::globaltimer() - start > kGiveUpNs) {
        mem::store<mem::kDevice>(&f->gave_up, 1u, mem::relaxed);
        break;
      }
    }
  }
  coop::sync(c);
  return mem::load<mem::kDevice>(&f->gave_up, mem::relaxed) == 0;
}

// Floor 1: a counter passed back and forth between block 0 and block 1 through device memory
// (release store by the leader, acquire polling by the other side's leader, then a group sync).
template <class C>
__global__ void k_flag_rt(uint64_t* flags, int iters, uint64_t base, Fail* f) {
  C c;
  if (!acts(c)) return;
  uint64_t* ping = flags;
  uint64_t* pong = flags + 16;  // another 128-byte line
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (blockIdx.x == 0) {
      if (leader(c)) mem::store<mem::kDevice>(ping, v, mem::release);
      if (!group_wait(c, pong, v, f)) return;
    } else {
      if (!group_wait(c, ping, v, f)) return;
      if (leader(c)) mem::store<mem::kDevice>(pong, v, mem::release);
    }
  }
}

// Floor 2: the one-sided layer's put_signal round trip between the blocks (8 bytes, PE to itself):
// block 0 puts with signal `sig[0]`, block 1 waits for it and answers on `sig[16]`.
template <class C>
__global__ void k_put_signal_rt(DeviceHandle h, uint64_t* data, const uint64_t* src, uint64_t* sig, int iters,
                                uint64_t base) {
  C c;
  if (!acts(c)) return;
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (blockIdx.x == 0) {
      device::put_signal_nbi(c, h, data, src, 8, sig, v, SignalOp::set, 0);
      device::signal_wait_until(c, h, sig + 16, Cmp::ge, v);
    } else {
      device::signal_wait_until(c, h, sig, Cmp::ge, v);
      device::put_signal_nbi(c, h, data + 16, src, 8, sig + 16, v, SignalOp::set, 0);
    }
  }
  device::quiet(c, h);
}

// Receives one 8-byte message of `tag` into `in`: through the pre-posted request `r`, or (the
// unexpected path) by probing until the message has arrived and only then posting the receive.
template <class C>
__device__ inline void receive_one(C c, const msg::CommHandle& comm, msg::Request& r, uint64_t* in, int tag,
                                   bool unexpected, uint64_t want, Fail* f) {
  if (unexpected) {
    (void)msg::probe(c, comm, 0, tag);
    r = msg::irecv(c, comm, in, 8, 0, tag);
  }
  const msg::Status st = msg::wait(c, comm, r);
  if (leader(c)) {
    const uint64_t got = mem::load<mem::kDevice>(in, mem::relaxed);
    if (st.error != 0 || st.bytes != 8 || st.tag != tag || got != want) record_bad(f, want, want, got);
  }
  coop::sync(c);
}

// 8-byte ping-pong through the messaging layer: block 0 sends kPing and receives kPong, block 1
// the other way round. Pre-posted: each side's receive is posted before the peer can send
// (block 0 posts before its send, block 1 posts the first one before block 0 starts and each
// next one before its answer). `lines`: out/in words of block 0 and 1, then the `ready` word.
template <class C>
__global__ void k_msg_pingpong(msg::CommHandle comm, uint64_t* lines, int iters, uint64_t base, bool unexpected,
                               Fail* f) {
  C c;
  if (!acts(c)) return;
  const bool ping = blockIdx.x == 0;
  uint64_t* out = lines + (ping ? 0 : 32);
  uint64_t* in = lines + (ping ? 16 : 48);
  msg::Request r{};
  // Pre-posted: block 1 posts its first receive, then tells block 0 (`ready`) that it may start.
  uint64_t* ready = lines + 56;
  if (!unexpected) {
    if (!ping) {
      r = msg::irecv(c, comm, in, 8, 0, kPing);
      if (leader(c)) mem::store<mem::kDevice>(ready, base + 1, mem::release);
    } else if (!group_wait(c, ready, base + 1, f)) {
      return;
    }
  }
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (ping) {
      if (!unexpected) r = msg::irecv(c, comm, in, 8, 0, kPong);
      if (leader(c)) out[0] = v;
      coop::sync(c);
      msg::send(c, comm, out, 8, 0, kPing);
      receive_one(c, comm, r, in, kPong, unexpected, v, f);
    } else {
      receive_one(c, comm, r, in, kPing, unexpected, v, f);
      if (!unexpected && i < iters) r = msg::irecv(c, comm, in, 8, 0, kPing);
      if (leader(c)) out[0] = v;
      coop::sync(c);
      msg::send(c, comm, out, 8, 0, kPong);
    }
  }
}

// Rendezvous: block 0 sends `reps` messages of `bytes` from the heap (zero-copy get), block 1
// receives them; one block each side.
__global__ void __launch_bounds__(512)
    k_rendezvous(msg::CommHandle comm, const char* src, char* dst, size_t bytes, int reps, Fail* f) {
  const coop::Block c;
  for (int r = 0; r < reps; ++r) {
    if (blockIdx.x == 0) {
      msg::send(c, comm, src, bytes, 0, kRndv);
    } else {
      const msg::Status st = msg::recv(c, comm, dst, bytes, 0, kRndv);
      if (leader(c) && (st.error != 0 || st.bytes != bytes)) record_bad(f, static_cast<uint64_t>(r), bytes, st.bytes);
    }
  }
}

// The reference: one block puts the same bytes between the same heap buffers, `reps` times, each
// completed (quiet) before the next like a blocking send.
__global__ void __launch_bounds__(512) k_put_reps(DeviceHandle h, char* dst, const char* src, size_t bytes, int reps) {
  const coop::Block c;
  for (int r = 0; r < reps; ++r) {
    device::put_nbi(c, h, dst, src, bytes, 0);
    device::quiet(c, h);
  }
}

struct RateArgs {
  msg::CommHandle comm;
  int senders;  // sending warps, one per block (blocks 0..senders-1); block `senders` receives
  int per;      // messages per sender and round
  int rounds;
  int any_source;  // receives name ANY_SOURCE (mpi mode) instead of rank 0
  uint64_t* sbuf;  // [senders * 16]: each sender's source word on a line of its own
  uint64_t* rbuf;  // [senders * per]: one word per posted receive
  msg::Request* reqs;
  uint64_t* go;  // the round the senders may start (device memory, increasing across launches)
  uint64_t go_base;
  unsigned long long* ns;  // [2]: receiver's posting time, delivery time (sums over the rounds)
  Fail* f;
};

// Message rate into one receiving warp (one block, one SM). Each round the receiver posts one
// receive per message (message k of sender s has tag s), releases the senders (release store of
// `go`), and waits for every receive; then it checks every payload ((s << 32) | message index).
__global__ void k_rate(RateArgs a) {
  const coop::Warp c;
  if (threadIdx.x >= 32) return;
  const int w = a.senders * a.per;
  if (static_cast<int>(blockIdx.x) < a.senders) {
    const int s = static_cast<int>(blockIdx.x);
    uint64_t* out = a.sbuf + static_cast<size_t>(s) * 16;
    for (int round = 0; round < a.rounds; ++round) {
      if (!group_wait(c, a.go, a.go_base + static_cast<uint64_t>(round) + 1, a.f)) return;
      for (int k = 0; k < a.per; ++k) {
        if (leader(c)) out[0] = (static_cast<uint64_t>(s) << 32) | static_cast<uint64_t>(round * a.per + k);
        coop::sync(c);
        msg::send(c, a.comm, out, 8, 0, s);
      }
    }
    return;
  }
  unsigned long long posting = 0, delivery = 0;
  const int source = a.any_source ? msg::kAnySource : 0;
  for (int round = 0; round < a.rounds; ++round) {
    const uint64_t t0 = mem::globaltimer();
    for (int j = 0; j < w; ++j) a.reqs[j] = msg::irecv(c, a.comm, &a.rbuf[j], 8, source, j % a.senders);
    const uint64_t t1 = mem::globaltimer();
    if (leader(c)) mem::store<mem::kDevice>(a.go, a.go_base + static_cast<uint64_t>(round) + 1, mem::release);
    for (int j = 0; j < w; ++j) (void)msg::wait(c, a.comm, a.reqs[j]);
    const uint64_t t2 = mem::globaltimer();
    posting += t1 - t0;
    delivery += t2 - t1;
    for (int j = static_cast<int>(coop::thread_rank(c)); j < w; j += 32) {
      const uint64_t want =
          (static_cast<uint64_t>(j % a.senders) << 32) | static_cast<uint64_t>(round * a.per + j / a.senders);
      const uint64_t got = mem::load<mem::kDevice>(&a.rbuf[j], mem::relaxed);
      if (got != want) record_bad(a.f, static_cast<uint64_t>(round) * w + j, want, got);
    }
    coop::sync(c);
  }
  if (leader(c)) {
    a.ns[0] = posting;
    a.ns[1] = delivery;
  }
}

}  // namespace msg_bench
