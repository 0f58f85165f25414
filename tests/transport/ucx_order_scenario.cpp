// Data before signal under stress: every PE streams rounds to every other PE, each round a put
// of random size, fence, then the signal (atomic set, 8-byte put or posted fetch_add, by turns).
// The target polls the signals with acquire loads and checks the payload of every round it sees
// signalled; it acknowledges with an atomic set, and a sender keeps at most two rounds
// unacknowledged (two payload slots per sender). Any payload seen wrong is a violation.
#include <chrono>
#include <cstdio>
#include <vector>

#include "gpucomm/core/env.hpp"
#include "polling.hpp"
#include "ucx_scenarios.hpp"

namespace ucxtest {

namespace {
constexpr uint64_t kPayload = 128 << 10;  // bytes of one payload slot

struct Layout {
  uint64_t slots;  // [sender][2] payload slots
  uint64_t sig;    // [sender] signal words
  uint64_t ack;    // [target] acknowledgement words
  explicit Layout(int n)
      : slots(0), sig(kPayload * 2 * static_cast<uint64_t>(n)), ack(sig + 8 * static_cast<uint64_t>(n)) {}
  uint64_t slot(int sender, uint64_t round) const {
    return slots + kPayload * (2 * static_cast<uint64_t>(sender) + (round & 1));
  }
};

struct Payload {
  size_t len;
  uint64_t key;
};

Payload payload(uint64_t seed, int from, int to, uint64_t round) {
  uint64_t x = mix(seed, 77, static_cast<uint64_t>(from) << 32 | static_cast<uint64_t>(to), round);
  uint64_t cls = x % 10, y = mix(x, 1);
  size_t len = cls < 6 ? 1 + y % 256 : cls < 9 ? 257 + y % 16128 : 16385 + y % (kPayload - 16384);
  return {len, mix(x, 2)};
}
}  // namespace

void scenario_signal_order(Job& j, int rounds) {
  const Layout L(j.n);
  const size_t n = static_cast<size_t>(j.n);
  for (int p = 0; p < j.n; ++p) *j.at<uint64_t>(L.sig + 8 * static_cast<uint64_t>(p)) = 0;
  for (int p = 0; p < j.n; ++p) *j.at<uint64_t>(L.ack + 8 * static_cast<uint64_t>(p)) = 0;
  j.barrier();
  const uint64_t R = static_cast<uint64_t>(rounds);
  std::vector<uint64_t> sent(n, 0), verified(n, 0);
  std::vector<std::vector<uint8_t>> src(2 * n, std::vector<uint8_t>(kPayload));
  std::vector<uint64_t> put_done(2 * n, 1);
  uint64_t violations = 0, checked = 0, flagged = 0;
  const int64_t limit = gpucomm::env::wait_timeout_ms();
  const auto start = std::chrono::steady_clock::now();
  auto last_event = start;
  gpucomm::transport::ucx::Backoff backoff(false);
  for (uint64_t spin = 0;; ++spin) {
    j.r().progress();
    bool finished = true, event = false;
    for (int t = 0; t < j.n; ++t) {
      if (t == j.me) continue;
      const size_t ti = static_cast<size_t>(t);
      const uint64_t acked = load_acquire(j.at<uint64_t>(L.ack + 8 * ti));
      finished &= acked == R;
      if (sent[ti] == R || sent[ti] + 1 > acked + 2) continue;
      const uint64_t r = ++sent[ti];
      const Payload pl = payload(j.seed, j.me, t, r);
      auto& buf = src[2 * ti + (r & 1)];
      fill_pattern(buf.data(), pl.len, pl.key);
      uint64_t* flag = nullptr;
      if (r % 7 == 0) {
        flag = &put_done[2 * ti + (r & 1)];
        *flag = 0;
        ++flagged;
      }
      j.r().put(t, L.slot(j.me, r), buf.data(), pl.len, Completion{flag});
      j.r().fence(t);
      const uint64_t sig = L.sig + 8 * static_cast<uint64_t>(j.me);
      switch (r % 3) {
        case 0:
          j.r().atomic(t, sig, AtomicOp::set, 8, r, 0, nullptr, {});
          break;
        case 1:
          j.r().put(t, sig, &r, 8, {});
          break;  // copied: r may change after the call
        default:
          j.r().atomic(t, sig, AtomicOp::fetch_add, 8, 1, 0, nullptr, {});
          break;
      }
      event = true;
    }
    for (int s = 0; s < j.n; ++s) {
      if (s == j.me) continue;
      const size_t si = static_cast<size_t>(s);
      finished &= verified[si] == R;
      const uint64_t v = load_acquire(j.at<uint64_t>(L.sig + 8 * si));
      if (v == verified[si]) continue;
      if (v < verified[si] || v > verified[si] + 2) {
        ++violations;
        std::fprintf(stderr, "PE %d: signal from PE %d went from %llu to %llu\n", j.me, s,
                     static_cast<unsigned long long>(verified[si]), static_cast<unsigned long long>(v));
        verified[si] = v;
        continue;
      }
      for (uint64_t q = verified[si] + 1; q <= v; ++q) {
        const Payload pl = payload(j.seed, s, j.me, q);
        size_t bad = check_pattern(j.at<uint8_t>(L.slot(s, q)), pl.len, pl.key);
        ++checked;
        if (bad != pl.len && ++violations <= 10) {
          std::fprintf(stderr, "PE %d: round %llu from PE %d signalled before its data: byte %zu of %zu wrong\n", j.me,
                       static_cast<unsigned long long>(q), s, bad, pl.len);
        }
      }
      verified[si] = v;
      j.r().atomic(s, L.ack + 8 * static_cast<uint64_t>(j.me), AtomicOp::set, 8, v, 0, nullptr, {});
      event = true;
    }
    if (finished) break;
    const auto now = std::chrono::steady_clock::now();
    if (event) {
      last_event = now;
      backoff.reset();
    } else {
      backoff.idle();
      if (limit > 0 && now - last_event > std::chrono::milliseconds(limit))
        throw std::runtime_error("rank " + std::to_string(j.me) + " signal-order: no progress for GPUCOMM_TIMEOUT");
    }
  }
  j.r().flush();
  for (uint64_t f : put_done) UCX_CHECK(f == 1, "a put's completion flag is unset after flush()");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("PE %d: %llu rounds from %d PEs checked, %llu with completion flags, %llu violations, %.2f s\n", j.me,
              static_cast<unsigned long long>(checked), j.n - 1, static_cast<unsigned long long>(flagged),
              static_cast<unsigned long long>(violations), secs);
  UCX_CHECK(violations == 0, "%llu data-before-signal violations", static_cast<unsigned long long>(violations));
  j.barrier();
}

}  // namespace ucxtest
