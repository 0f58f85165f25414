// soak SECONDS: every PE sends checksummed messages of random length to its right neighbour
// (put_signal, acknowledged before the slot is reused) and adds 1 to a counter on a random PE,
// for SECONDS; then every message received is checked and every increment accounted for.
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fault_pe.hpp"
#include "gpucomm/gpucomm.hpp"

namespace faultpe {
namespace {

using gpucomm::Cmp;
using gpucomm::Runtime;
using gpucomm::SignalOp;

constexpr size_t kSlot = 4096;

uint64_t checksum(const uint8_t* p, size_t n, uint64_t seq) {
  uint64_t h = 1469598103934665603ULL ^ seq;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

struct Counts {
  uint64_t sent = 0, received = 0, corrupted = 0, increments = 0;
};

int soak(Runtime& rt, int seconds) {
  const int me = rt.rank(), n = rt.size();
  const int right = (me + 1) % n, left = (me - 1 + n) % n;
  auto* slot = static_cast<uint8_t*>(rt.malloc(kSlot));
  auto* sig = rt.alloc<uint64_t>(1);   // message sequence number, set by the left neighbour
  auto* ack = rt.alloc<uint64_t>(1);   // last sequence the right neighbour consumed
  auto* ctr = rt.alloc<uint64_t>(1);   // increments received from everybody
  auto* stop = rt.alloc<uint64_t>(1);  // set by rank 0 when the time is up
  rt.barrier_all();
  std::mt19937_64 rng(static_cast<uint64_t>(me) * 7919 + static_cast<uint64_t>(faultpe::now_ns()));
  std::vector<uint64_t> added(static_cast<size_t>(n), 0);
  std::vector<uint8_t> msg(kSlot);
  Counts c;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (uint64_t seq = 1;; ++seq) {
    // Send message `seq` once the right neighbour consumed `seq - 1`.
    if (seq > 1) rt.wait_until<uint64_t>(ack, Cmp::ge, seq - 1);
    const size_t len = 16 + rng() % (kSlot - 16);
    for (size_t i = 16; i < len; ++i) msg[i] = static_cast<uint8_t>(rng());
    const uint64_t sum = checksum(msg.data() + 16, len - 16, seq), len64 = len;
    std::memcpy(msg.data(), &sum, 8);
    std::memcpy(msg.data() + 8, &len64, 8);
    rt.put_signal(slot, msg.data(), len, sig, seq, SignalOp::set, right);
    ++c.sent;
    // Receive message `seq` from the left, check it, acknowledge it.
    rt.wait_until<uint64_t>(sig, Cmp::ge, seq);
    uint64_t got_sum = 0, got_len = 0;
    std::memcpy(&got_sum, slot, 8);
    std::memcpy(&got_len, slot + 8, 8);
    const bool ok = got_len >= 16 && got_len <= kSlot && checksum(slot + 16, got_len - 16, seq) == got_sum;
    ++c.received;
    c.corrupted += !ok;
    rt.signal(ack, seq, SignalOp::set, left);
    // Increments on a random PE.
    const int target = static_cast<int>(rng() % static_cast<uint64_t>(n));
    rt.atomic_add<uint64_t>(ctr, 1, target);
    ++added[static_cast<size_t>(target)];
    ++c.increments;
    if (seq % 256 == 0) {  // everybody leaves at the same sequence number
      if (me == 0 && std::chrono::steady_clock::now() >= end)
        for (int p = 0; p < n; ++p) rt.atomic_set<uint64_t>(stop, 1, p);
      rt.barrier_all();
      if (rt.signal_fetch(stop) != 0) break;
    }
  }
  rt.barrier_all();
  // Account: increments every PE made to this one, messages the left neighbour sent.
  std::string mine(reinterpret_cast<const char*>(added.data()), added.size() * 8);
  auto all = rt.bootstrap().allgather(mine + std::string(reinterpret_cast<const char*>(&c), sizeof c));
  uint64_t expected_here = 0, left_sent = 0;
  for (int p = 0; p < n; ++p) {
    uint64_t v = 0;
    std::memcpy(&v, all[static_cast<size_t>(p)].data() + 8 * static_cast<size_t>(me), 8);
    expected_here += v;
    if (p == left) {
      Counts lc;
      std::memcpy(&lc, all[static_cast<size_t>(p)].data() + 8 * static_cast<size_t>(n), sizeof lc);
      left_sent = lc.sent;
    }
  }
  const uint64_t seen_here = rt.atomic_fetch<uint64_t>(ctr, me);
  const uint64_t lost = (left_sent - c.received) + (expected_here - seen_here) + c.corrupted;
  say("RESULT rank %d messages=%llu increments=%llu corrupted=%llu lost=%llu", me,
      static_cast<unsigned long long>(c.received), static_cast<unsigned long long>(c.increments),
      static_cast<unsigned long long>(c.corrupted), static_cast<unsigned long long>(lost));
  rt.barrier_all();
  return lost == 0 ? 0 : kCheckFailed;
}

}  // namespace

int run_soak(const std::string& scenario, int seconds) {
  if (scenario != "soak") return -1;
  return with_runtime([&](Runtime& rt) { return soak(rt, seconds > 0 ? seconds : 5); });
}

}  // namespace faultpe
