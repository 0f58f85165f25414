// A PE for the proxy layer's multi-process tests: `gpucomm_test_proxy_pe SCENARIO [ARGS]` under
// `gpucomm run`, with GPUCOMM_TRANSPORT choosing the path. `--node-per-pe` gives every PE its own
// node name, so that no heap is mapped across PEs and `auto` reaches them through UCX.
// Prints "PE OK" and exits 0 on success; on failure prints the error and exits 1.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpucomm/gpucomm.hpp"
#include "pe_check.hpp"

using namespace gpucomm;

namespace {

uint64_t seed_base() {
  return testing::pe_seed(0);
}

// Every PE sends `rounds` payloads to its right neighbour with put_signal (set = round); the
// neighbour waits for each round's signal and checks the whole payload. An acknowledgement back
// bounds how far a sender runs ahead, so a slot is never rewritten while it is being checked.
void scenario_signal_order(Runtime& rt, int rounds) {
  const int me = rt.rank(), n = rt.size(), to = (me + 1) % n, from = (me - 1 + n) % n;
  constexpr size_t kSlots = 8, kWords = 512;
  auto* slots = rt.alloc<uint64_t>(kSlots * kWords);
  auto* sig = rt.alloc<uint64_t>(1);
  auto* ack = rt.alloc<uint64_t>(1);
  *sig = 0;
  *ack = 0;
  rt.barrier_all();
  std::mt19937_64 rng(seed_base() + static_cast<uint64_t>(me));
  std::vector<uint64_t> payload(kWords);
  int violations = 0;
  for (uint64_t r = 1; r <= static_cast<uint64_t>(rounds); ++r) {
    if (r > kSlots / 2) rt.wait_until<uint64_t>(ack, Cmp::ge, r - kSlots / 2);
    // payload[0] = its length in words; payload[i] = f(round, i).
    const size_t words = 1 + rng() % (kWords - 1);
    payload[0] = words;
    for (size_t i = 1; i <= words; ++i) payload[i] = r * 0x9e3779b97f4a7c15ULL ^ i;
    rt.put_signal(slots + (r % kSlots) * kWords, payload.data(), (words + 1) * 8, sig, r, SignalOp::set, to);
    // Receive round r from the left: once its signal (or a later one) is seen, its slot is complete.
    rt.wait_until<uint64_t>(sig, Cmp::ge, r);
    const uint64_t* in = slots + (r % kSlots) * kWords;
    const size_t got = in[0];
    bool ok = got >= 1 && got < kWords;
    for (size_t i = 1; ok && i <= got; ++i) ok = in[i] == (r * 0x9e3779b97f4a7c15ULL ^ i);
    violations += ok ? 0 : 1;
    rt.signal(ack, r, SignalOp::set, from);
  }
  rt.barrier_all();
  PE_CHECK(violations == 0, "%d rounds saw their signal before their data", violations);
  rt.free(ack);
  rt.free(sig);
  rt.free(slots);
}

// Random puts, gets and atomics to every PE through whatever path the transport gives, each
// checked by its target (puts) or its origin (gets, atomics).
void scenario_mixed(Runtime& rt, int iters) {
  const int me = rt.rank(), n = rt.size();
  const size_t cap = 1 << 14;
  auto* inbox = static_cast<uint8_t*>(rt.malloc(cap * static_cast<size_t>(n)));
  auto* counters = rt.alloc<uint64_t>(2);
  auto* words32 = rt.alloc<uint32_t>(static_cast<size_t>(n));
  std::memset(counters, 0, 16);
  std::memset(words32, 0, 4 * static_cast<size_t>(n));
  rt.barrier_all();
  std::mt19937_64 rng(seed_base() ^ static_cast<uint64_t>(me) * 77);
  for (int it = 0; it < iters; ++it) {
    for (int d = 0; d < n; ++d) {
      const int pe = (me + d) % n;
      const size_t len = 1 + rng() % (cap - 1);
      std::vector<uint8_t> data(len);
      for (auto& b : data) b = static_cast<uint8_t>(rng());
      uint8_t* slot = inbox + cap * static_cast<size_t>(me);  // my slot on every PE
      rt.put(slot, data.data(), len, pe);
      std::vector<uint8_t> back(len);
      rt.get(back.data(), slot, len, pe);
      PE_CHECK(back == data, "put/get round trip to PE %d (%zu bytes), iteration %d", pe, len, it);
      rt.atomic_add<uint64_t>(&counters[0], 1, pe);
      uint32_t old = rt.atomic_fetch_xor<uint32_t>(&words32[me], static_cast<uint32_t>(it + 1), pe);
      (void)old;
    }
  }
  rt.barrier_all();
  PE_CHECK(counters[0] == static_cast<uint64_t>(iters) * static_cast<uint64_t>(n), "fetch-add total %llu",
           static_cast<unsigned long long>(counters[0]));
  uint32_t x = 0;
  for (int it = 0; it < iters; ++it) x ^= static_cast<uint32_t>(it + 1);
  for (int r = 0; r < n; ++r) PE_CHECK(words32[r] == x, "xor word of PE %d is %u, expected %u", r, words32[r], x);
  // compare-swap: exactly one PE wins each word.
  rt.barrier_all();
  uint64_t won = 0;
  for (int pe = 0; pe < n; ++pe)
    won += rt.atomic_compare_swap<uint64_t>(&counters[1], 0, static_cast<uint64_t>(me) + 1, pe) == 0;
  rt.barrier_all();
  auto wins = rt.bootstrap().allgather(std::to_string(won));
  uint64_t total = 0;
  for (auto& w : wins) total += std::stoull(w);
  PE_CHECK(total == static_cast<uint64_t>(n), "compare_swap winners %llu, expected %d",
           static_cast<unsigned long long>(total), n);
  rt.barrier_all();
  rt.free(words32);
  rt.free(counters);
  rt.free(inbox);
}

// The routes the runtime chose, against what the test expects: `expect` for every other PE,
// `self` for this PE.
void scenario_routes(Runtime& rt, const std::string& expect, const std::string& self) {
  TransportInfo info = rt.transport_info();
  std::string all;
  for (auto& r : info.routes) all += r + " ";
  std::printf("transport %s agent %s routes %s\n", info.kind.c_str(), info.agent.c_str(), all.c_str());
  for (int r = 0; r < rt.size(); ++r) {
    const std::string& want = r == rt.rank() ? self : expect;
    PE_CHECK(info.routes[static_cast<size_t>(r)] == want, "route to PE %d is %s, expected %s", r,
             info.routes[static_cast<size_t>(r)].c_str(), want.c_str());
  }
  rt.barrier_all();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool node_per_pe = false;
  for (auto it = args.begin(); it != args.end();) {
    if (*it == "--node-per-pe") {
      node_per_pe = true;
      it = args.erase(it);
    } else {
      ++it;
    }
  }
  const std::string scenario = args.size() > 0 ? args[0] : "mixed";
  const std::string arg = args.size() > 1 ? args[1] : "";
  if (node_per_pe) {
    setenv("GPUCOMM_HOSTNAME",
           ("node" + std::string(std::getenv("GPUCOMM_RANK") ? std::getenv("GPUCOMM_RANK") : "0")).c_str(), 1);
  }
  try {
    Runtime rt;
    if (scenario == "signal-order") {
      scenario_signal_order(rt, arg.empty() ? 1000 : static_cast<int>(testing::arg_int(arg.c_str(), "ROUNDS")));
    } else if (scenario == "mixed") {
      scenario_mixed(rt, arg.empty() ? 10 : static_cast<int>(testing::arg_int(arg.c_str(), "ITERS")));
    } else if (scenario == "routes") {
      scenario_routes(rt, arg, args.size() > 2 ? args[2] : arg);
    } else if (scenario == "die-in-put") {
      // The victim dies; the others keep putting to it and must fail with its name, not hang.
      const int victim = args.size() > 2 ? static_cast<int>(testing::arg_int(args[2].c_str(), "VICTIM")) : -1;
      auto* buf = rt.alloc<uint64_t>(1024);
      rt.barrier_all();
      if (rt.rank() == victim) {
        std::fflush(stdout);
        ::raise(SIGKILL);
      }
      std::vector<uint64_t> data(1024, 1);
      for (int i = 0; i < 1000000; ++i) {
        rt.put(buf, data.data(), sizeof(uint64_t) * data.size(), victim);
        usleep(1000);
      }
      PE_CHECK(false, "puts to dead rank %d kept succeeding", victim);
    } else {
      std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
      return 2;
    }
    if (testing::g_pe_failures == 0) testing::print_pe_ok(rt.rank(), rt.size(), scenario);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "PE ERROR: %s\n", e.what());
    return 1;
  }
  return testing::g_pe_failures == 0 ? 0 : 1;
}
