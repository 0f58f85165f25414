// Bad arguments, a flush that times out because the target does not progress, and a peer that
// dies while the others are communicating with it.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ucx_scenarios.hpp"

namespace ucxtest {

namespace {
template <class F>
void expect_invalid(const char* what, const std::string& arg, F&& f) {
  try {
    f();
    UCX_CHECK(false, "%s was accepted", what);
  } catch (const gpucomm::Error& e) {
    UCX_CHECK(e.code() == gpucomm::Errc::invalid_argument && std::strstr(e.what(), ("argument '" + arg + "'").c_str()),
              "%s: expected an invalid argument '%s', got: %s", what, arg.c_str(), e.what());
    std::printf("%s -> %s\n", what, e.what());
  }
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

void scenario_bad_args(Job& j) {
  const int t = (j.me + 1) % j.n;
  const uint64_t heap = j.heap_bytes;
  uint64_t word = 42, res = 0;
  auto& r = j.r();
  expect_invalid("put to PE -1", "pe", [&] { r.put(-1, 0, &word, 8, {}); });
  expect_invalid("put to PE n", "pe", [&] { r.put(j.n, 0, &word, 8, {}); });
  expect_invalid("put past the heap", "dst_offset", [&] { r.put(t, heap - 4, &word, 8, {}); });
  expect_invalid("put with a wrapping range", "dst_offset", [&] { r.put(t, ~uint64_t(0) - 3, &word, 8, {}); });
  expect_invalid("put from null", "src", [&] { r.put(t, 0, nullptr, 8, {}); });
  expect_invalid("get past the heap", "src_offset", [&] { r.get(&word, t, heap, 1, {}); });
  expect_invalid("get into null", "dst", [&] { r.get(nullptr, t, 0, 8, {}); });
  expect_invalid("get from PE n", "pe", [&] { r.get(&word, j.n, 0, 8, {}); });
  for (unsigned w : {0u, 1u, 2u, 16u}) {
    expect_invalid(("atomic of width " + std::to_string(w)).c_str(), "width",
                   [&] { r.atomic(t, 0, AtomicOp::fetch_add, w, 1, 0, &res, {}); });
  }
  expect_invalid("misaligned atomic", "offset", [&] { r.atomic(t, 4, AtomicOp::fetch_add, 8, 1, 0, &res, {}); });
  expect_invalid("atomic past the heap", "offset", [&] { r.atomic(t, heap, AtomicOp::fetch_add, 8, 1, 0, &res, {}); });
  expect_invalid("atomic op 99", "op", [&] { r.atomic(t, 0, static_cast<AtomicOp>(99), 8, 1, 0, &res, {}); });
  expect_invalid("atomic on PE -1", "pe", [&] { r.atomic(-1, 0, AtomicOp::fetch_add, 8, 1, 0, &res, {}); });
  expect_invalid("fence of PE n", "pe", [&] { r.fence(j.n); });
  // Zero bytes complete at once; the transport still works after the refusals.
  uint64_t done = 0;
  r.put(t, heap, &word, 0, Completion{&done});
  UCX_CHECK(done == 1, "an empty put did not complete at once");
  *j.at<uint64_t>(64) = 0;
  j.barrier();
  word = 0x1234 + static_cast<uint64_t>(j.me);
  r.put(t, 64, &word, 8, {});
  j.barrier();
  const int from = (j.me + j.n - 1) % j.n;
  UCX_CHECK(*j.at<uint64_t>(64) == 0x1234 + static_cast<uint64_t>(from), "put after the refusals: %llx",
            static_cast<unsigned long long>(*j.at<uint64_t>(64)));
}

// PE 1 does not progress for longer than GPUCOMM_TIMEOUT; PE 0's flush must fail in time with a
// report of what was outstanding, and succeed once PE 1 progresses again.
void scenario_flush_timeout(Job& j) {
  j.rt.bootstrap().barrier();  // not progressing: PE 1 never looks at its worker from here on
  uint64_t done = 0;
  if (j.me == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  } else if (j.me == 0) {
    std::vector<uint8_t> data(64 << 10, 7);
    j.r().put(1, 0, data.data(), data.size(), Completion{&done});
    j.r().atomic(1, 1 << 20, AtomicOp::fetch_add, 8, 1, 0, nullptr, {});
    const auto start = std::chrono::steady_clock::now();
    try {
      j.r().flush();
      UCX_CHECK(false, "flush completed although PE 1 did not progress");
    } catch (const gpucomm::Error& e) {
      const double s = seconds_since(start);
      std::printf("flush failed after %.2f s: %s\n", s, e.what());
      UCX_CHECK(e.code() == gpucomm::Errc::timeout, "not a timeout: %s", e.what());
      for (const char* part : {"rank 0 ucx flush", "timed out", "PE 1:", "put", "GPUCOMM_TIMEOUT"})
        UCX_CHECK(std::strstr(e.what(), part), "the report lacks '%s': %s", part, e.what());
      UCX_CHECK(s > 1.5 && s < 2.9, "flush gave up after %.2f s, GPUCOMM_TIMEOUT is 2", s);
    }
    UCX_CHECK(done == 0, "the put completed although PE 1 did not progress");
  }
  j.barrier();  // PE 1 progresses again here: the put completes
  if (j.me == 0) UCX_CHECK(load_acquire(&done) == 1, "the put did not complete once PE 1 progressed");
}

void scenario_peer_killed(Job& j, int victim) {
  // The completion words and sources outlive the scenario: operations still outstanding when the
  // peer died may complete (or be cancelled) while the transport closes, after this returns.
  static std::vector<uint8_t> data;
  static std::vector<uint64_t> results, done;
  data.assign(4096, static_cast<uint8_t>(j.me));
  results.assign(static_cast<size_t>(j.n), 0);
  done.assign(static_cast<size_t>(j.n), 0);
  const auto start = std::chrono::steady_clock::now();
  try {
    for (int round = 1; round < 1000000; ++round) {
      if (j.me == victim && round == 50) {
        std::fflush(stdout);
        std::fflush(stderr);
        ::raise(SIGKILL);
      }
      for (int t = 0; t < j.n; ++t) {
        if (t == j.me) continue;
        j.r().put(t, 4096 * static_cast<uint64_t>(j.me), data.data(), data.size(), {});
        j.r().fence(t);
        j.r().atomic(t, 1 << 20, AtomicOp::fetch_add, 8, 1, 0, &results[static_cast<size_t>(t)],
                     Completion{&done[static_cast<size_t>(t)]});
      }
      j.r().flush();
    }
    UCX_CHECK(false, "PE %d's death went unnoticed", victim);
  } catch (const gpucomm::Error& e) {
    std::printf("PE EXPECTED FAILURE after %.2f s: %s\n", seconds_since(start), e.what());
    UCX_CHECK(e.code() == gpucomm::Errc::peer_failure, "expected a peer failure, got: %s", e.what());
  }
}

}  // namespace ucxtest
