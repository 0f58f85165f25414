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

// Latency breakdown of one group alone (no other block competes for the progress lock): per
// iteration it posts a receive (irecv), sends itself the matching 8-byte message (LL) and waits
// (the round that takes the submission, drains the message, matches and completes it).
// ns[0..2] sum the time of the three calls (%globaltimer, read by the leader around each).
template <class C>
__global__ void k_msg_steps(msg::CommHandle comm, uint64_t* lines, int iters, uint64_t base, unsigned long long* ns,
                            Fail* f) {
  C c;
  if (!acts(c)) return;
  uint64_t* out = lines;
  uint64_t* in = lines + 16;
  unsigned long long sum[3] = {0, 0, 0};
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (leader(c)) out[0] = v;
    coop::sync(c);
    const uint64_t t0 = mem::globaltimer();
    msg::Request r = msg::irecv(c, comm, in, 8, 0, kPing);
    const uint64_t t1 = mem::globaltimer();
    msg::send(c, comm, out, 8, 0, kPing);
    const uint64_t t2 = mem::globaltimer();
    const msg::Status st = msg::wait(c, comm, r);
    const uint64_t t3 = mem::globaltimer();
    sum[0] += t1 - t0;
    sum[1] += t2 - t1;
    sum[2] += t3 - t2;
    if (leader(c)) {
      const uint64_t got = mem::load<mem::kDevice>(in, mem::relaxed);
      if (st.error != 0 || st.bytes != 8 || got != v) record_bad(f, v, v, got);
    }
  }
  if (leader(c))
    for (int k = 0; k < 3; ++k) ns[k] = sum[k];
}

// The protocol's pieces timed one by one in one thread (the leader of a thread-level group that
// holds progress), ns summed into ns[0..kPieces): what the calls above are made of. Per iteration:
// a receive posted through the fast-post log, the 8-byte send to it (ticket and credit, the LL
// record), taking progress, one round (the post taken, the message drained, matched and delivered
// into the holder's registers), parking, and the completion record a waiter of another group polls.
inline constexpr int kPieces = 14;
inline const char* const kPieceNames[kPieces] = {
    "fast_post",  "ticket_credit", "write_ll",   "hold_cas",  "round_1msg", "park_fenced", "idle_round",
    "park_clean", "record_poll",   "timer_only", "tail_load", "slot_read",  "hold_park",   "take_posts_0"};
__global__ void k_msg_pieces(msg::CommHandle comm, uint64_t* lines, int iters, unsigned long long* ns) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  const coop::Thread c;
  const msg::StateView& s = comm.state;
  const msg::dev::DeviceBackend b(comm.dev, s);
  unsigned long long sum[kPieces] = {};
  uint64_t* out = lines;
  uint64_t* in = lines + 16;
  uint64_t sink = 0;
  auto lap = [&](int k, uint64_t& t) {
    const uint64_t now = mem::globaltimer();
    sum[k] += now - t;
    t = now;
  };
  for (int i = 0; i < iters; ++i) {
    out[0] = static_cast<uint64_t>(i);
    uint64_t t = mem::globaltimer();
    msg::proto::Started r{};
    const msg::proto::RecvArgs ra{in, 8, 0, kPing, comm.ctx, static_cast<uint32_t>(comm.mode), nullptr};
    if (!b.fast_post(c, msg::proto::recv_post(ra, 0), r))
      r = msg::proto::post_with_slot(b, s, msg::proto::recv_post(ra, 0));
    lap(0, t);
    const uint64_t tk = b.fadd(&s.peers[0].next_ticket, 1, msg::Ord::relaxed);
    const bool free = msg::proto::slots_free(b, s, 0, tk, 1);
    lap(1, t);
    msg::proto::SendArgs a{out, 8, 0, 0, kPing, comm.ctx, comm.rank, 0, nullptr, static_cast<uint32_t>(comm.mode)};
    const msg::proto::SendPlan p{msg::kWireLL, 1, 0, 0};
    msg::proto::write_ll(b, c, s, tk, msg::proto::header_of(a, p, 0, 0), out, msg::proto::peer_ring(b, s, 0));
    lap(2, t);
    b.fast_release(c);
    while (!msg::proto::try_hold(b, s, true)) {
    }
    lap(3, t);
    b.set_own(r.id - 1, r.stamp);
    for (int k = 0; k < 64 && !b.own_ready(); ++k) (void)msg::proto::round(b, c, s);
    lap(4, t);
    msg::proto::park(b, s, true);
    lap(5, t);
    const msg::proto::Completion cp = b.own_completion();
    b.set_own(0xffffffffu, 0);
    msg::Request q{r.id, r.stamp};
    (void)msg::proto::finish(b, c, s, q, cp, msg::DiagOp::wait);
    t = mem::globaltimer();
    while (!msg::proto::try_hold(b, s, true)) {
    }
    (void)msg::proto::round(b, c, s);
    lap(6, t);
    msg::proto::park(b, s, false);
    lap(7, t);
    msg::proto::Completion poll{};
    sink += msg::proto::comp_read(b, s, 0, 0x12345u, poll) ? 1 : 0;
    lap(8, t);
    lap(9, t);  // a lap with nothing in it: the timer's own cost
    sink += b.ld(&s.ctl->post_tail, msg::Ord::relaxed);
    lap(10, t);
    sink += msg::proto::read_slot(b, s, 0, tk + 1).ok;
    lap(11, t);
    while (!msg::proto::try_hold(b, s, true)) {
    }
    msg::proto::park(b, s, false);
    lap(12, t);
    while (!msg::proto::try_hold(b, s, true)) {
    }
    t = mem::globaltimer();
    sink += msg::proto::take_posts(b, s) ? 1 : 0;
    lap(13, t);
    msg::proto::park(b, s, false);
    if (!free) break;
  }
  if (sink == 0xfeedfacecafebeefull) ns[kPieces] = sink;
  for (int k = 0; k < kPieces; ++k) ns[k] = sum[k];
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
    msg::waitall(c, a.comm, a.reqs, w);
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

// The depth section's idle receives: one warp posts `n` receives on tags no message uses (tag_base
// upward), every other one with ANY_SOURCE when `any_half`; then hands the fast-post role back
// (the kernel ends without a wait). k_cancel_idle cancels and completes them.
__global__ void k_post_idle(msg::CommHandle comm, int n, int any_half, int tag_base, uint64_t* buf,
                            msg::Request* reqs) {
  const coop::Warp c;
  if (threadIdx.x >= 32) return;
  for (int j = 0; j < n; ++j) {
    const int src = any_half && (j & 1) ? msg::kAnySource : 0;
    reqs[j] = msg::irecv(c, comm, buf, 8, src, tag_base + j);
  }
  msg::release_progress(c, comm);
}
__global__ void k_cancel_idle(msg::CommHandle comm, int n, msg::Request* reqs, Fail* f) {
  const coop::Warp c;
  if (threadIdx.x >= 32) return;
  for (int j = 0; j < n; ++j) {
    msg::cancel(c, comm, reqs[j]);
    const msg::Status st = msg::wait(c, comm, reqs[j]);
    if (leader(c) && st.error != msg::kErrCancelled)
      record_bad(f, static_cast<uint64_t>(j), msg::kErrCancelled, st.error);
  }
  msg::release_progress(c, comm);
}

}  // namespace msg_bench
