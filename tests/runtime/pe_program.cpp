// A PE for multi-process tests: `gpucomm_test_pe SCENARIO [ARGS]`, run under `gpucomm run` or
// mpirun. Prints "PE OK" and exits 0 on success; on failure prints the error and exits 1.
#include <cuda_runtime_api.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpucomm/gpucomm.hpp"
#include "pe_check.hpp"

using namespace gpucomm;

namespace {

uint64_t seed_for(int rank) {
  return testing::pe_seed(rank);
}

// A team as kernels see it agrees with the host Team: size, rank, world ranks both ways, and one
// slot per team shared by all its members, distinct from every other live team's.
void check_team_handle(Runtime& rt, const Team& t, const char* what) {
  const TeamHandle h = rt.device_team(t);
  validate_handle(h, what);
  PE_CHECK(h.size == t.size() && h.rank == t.rank() && h.slot == t.id(), "%s: handle size/rank/slot", what);
  for (int i = 0; i < t.size(); ++i) {
    PE_CHECK(team_world_rank(h, i) == t.world_rank(i), "%s: member %d is %d, expected %d", what, i,
             team_world_rank(h, i), t.world_rank(i));
    PE_CHECK(team_rank_of(h, t.world_rank(i)) == i, "%s: rank of world %d", what, t.world_rank(i));
  }
  for (int r = 0; r < rt.size(); ++r)
    PE_CHECK((team_rank_of(h, r) >= 0) == (t.team_rank(r) >= 0), "%s: membership of %d", what, r);
  // Every member holds the same slot (gathered over the world with the team's first member as key).
  auto all = rt.bootstrap().allgather(std::to_string(t.world_rank(0)) + ":" + std::to_string(h.slot));
  for (int r = 0; r < rt.size(); ++r) {
    if (t.team_rank(r) >= 0) {
      PE_CHECK(all[static_cast<size_t>(r)] == all[static_cast<size_t>(rt.rank())], "%s: slot %s on rank %d, %s here",
               what, all[static_cast<size_t>(r)].c_str(), r, all[static_cast<size_t>(rt.rank())].c_str());
    }
  }
  // A handle made against other headers is refused.
  bool refused = false;
  try {
    rt.device_team_checked(t, kHandleVersion + 1, sizeof(TeamHandle));
  } catch (const Error& e) {
    refused = e.code() == Errc::invalid_argument &&
              std::string(e.what()).find("rebuild it against this library's headers") != std::string::npos;
  }
  PE_CHECK(refused, "%s: a TeamHandle of another version was not refused", what);
}

void check_device_teams(Runtime& rt, const Team& half) {
  check_team_handle(rt, rt.world(), "world");
  check_team_handle(rt, rt.node(), "node");
  check_team_handle(rt, half, "odd/even reversed");
  // A permutation that is no arithmetic progression for 3 PEs and more: the member table.
  const int n = rt.size();
  Team shuffled = rt.split(rt.world(), 0, (rt.rank() * 5 + 3) % n == 0 ? -1 : (rt.rank() * 7) % (n + 1));
  check_team_handle(rt, shuffled, "shuffled");
  PE_CHECK(shuffled.id() != half.id() && shuffled.id() != rt.world().id(), "live teams share slot %d", shuffled.id());
  rt.barrier(shuffled);
}

// Rank, size, teams, bootstrap collectives.
void scenario_bootstrap(Runtime& rt) {
  auto all = rt.bootstrap().allgather(std::to_string(rt.rank() * 7));
  PE_CHECK(static_cast<int>(all.size()) == rt.size(), "allgather size %zu", all.size());
  for (int r = 0; r < rt.size(); ++r)
    PE_CHECK(all[static_cast<size_t>(r)] == std::to_string(r * 7), "allgather[%d]", r);
  PE_CHECK(rt.world().size() == rt.size() && rt.world().rank() == rt.rank(), "world team");
  PE_CHECK(rt.node().size() == rt.local_size(), "node team %d vs %d", rt.node().size(), rt.local_size());
  // Odd/even split with reversed order.
  Team half = rt.split(rt.world(), rt.rank() % 2, -rt.rank());
  int expect = (rt.size() + 1 - rt.rank() % 2) / 2;
  PE_CHECK(half.size() == expect, "split size %d expected %d", half.size(), expect);
  for (int i = 1; i < half.size(); ++i) PE_CHECK(half.world_rank(i - 1) > half.world_rank(i), "split order by key");
  Team none = rt.split(rt.world(), rt.rank() == 0 ? -1 : 1, 0);
  PE_CHECK(none.valid() == (rt.rank() != 0), "negative color");
  for (int i = 0; i < 3; ++i) {
    rt.barrier(half);
    rt.barrier_all();
  }
  check_device_teams(rt, half);
  rt.bootstrap().barrier();
}

// Host-PE one-sided operations with random data; every PE checks what it received.
void scenario_rma(Runtime& rt, int iters) {
  const int me = rt.rank(), n = rt.size();
  std::mt19937_64 rng(seed_for(me));
  const size_t cap = 1 << 16;
  auto* buf = static_cast<uint8_t*>(rt.malloc(cap * static_cast<size_t>(n)));  // slot per sender
  auto* sig = rt.alloc<uint64_t>(static_cast<size_t>(n));
  auto* counter = rt.alloc<uint64_t>(1);
  auto* words = rt.alloc<int32_t>(static_cast<size_t>(n));
  std::memset(sig, 0, sizeof(uint64_t) * static_cast<size_t>(n));
  *counter = 0;
  rt.barrier_all();
  for (int it = 1; it <= iters; ++it) {
    // Each PE sends a random-length random payload to its right neighbour with a signal; the
    // payload's first 8 bytes carry a checksum of the rest.
    int to = (me + 1) % n, from = (me - 1 + n) % n;
    size_t len = 8 + rng() % (cap - 8);
    std::vector<uint8_t> data(len);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    uint64_t sum = 0;
    for (size_t i = 8; i < len; ++i) sum = sum * 131 + data[i];
    sum ^= len;
    std::memcpy(data.data(), &sum, 8);
    rt.put_signal(buf + cap * static_cast<size_t>(me), data.data(), len, &sig[me], static_cast<uint64_t>(it),
                  SignalOp::set, to);
    rt.wait_until<uint64_t>(&sig[from], Cmp::ge, static_cast<uint64_t>(it));
    const uint8_t* got = buf + cap * static_cast<size_t>(from);
    // Recover the length by trying the checksum (the sender's length is unknown here): the
    // sender also publishes it through get below.
    uint64_t their_len = 0;
    // Fetch-add on a shared counter: every PE adds its rank+1 each iteration.
    rt.atomic_add<uint64_t>(counter, static_cast<uint64_t>(me) + 1, 0);
    rt.p<int32_t>(&words[me], static_cast<int32_t>(len), to);
    rt.barrier_all();
    their_len = static_cast<uint64_t>(words[from]);
    uint64_t check = 0;
    for (size_t i = 8; i < their_len; ++i) check = check * 131 + got[i];
    check ^= their_len;
    uint64_t stored;
    std::memcpy(&stored, got, 8);
    PE_CHECK(stored == check, "iteration %d: payload from rank %d corrupted (len %llu)", it, from,
             static_cast<unsigned long long>(their_len));
    // get back what we sent, from the receiver's copy
    std::vector<uint8_t> back(len);
    rt.get(back.data(), buf + cap * static_cast<size_t>(me), len, to);
    PE_CHECK(back == data, "iteration %d: get from rank %d differs", it, to);
    rt.barrier_all();
  }
  uint64_t total = rt.atomic_fetch<uint64_t>(counter, 0);
  uint64_t expect = static_cast<uint64_t>(iters) * static_cast<uint64_t>(n) * static_cast<uint64_t>(n + 1) / 2;
  PE_CHECK(total == expect, "atomic counter %llu expected %llu", static_cast<unsigned long long>(total),
           static_cast<unsigned long long>(expect));
  rt.barrier_all();

  // Every atomic kind against a sequential model: rank r owns words[r] at PE 0 ... each PE
  // applies a deterministic sequence to its own word on PE (me+1)%n and checks the results.
  auto* aw = rt.alloc<uint64_t>(static_cast<size_t>(n));
  auto* aw32 = rt.alloc<uint32_t>(static_cast<size_t>(n));
  int tgt = (me + 1) % n;
  rt.atomic_set<uint64_t>(&aw[me], 0, tgt);
  rt.atomic_set<uint32_t>(&aw32[me], 0, tgt);
  uint64_t model = 0;
  uint32_t model32 = 0;
  for (int i = 0; i < 200; ++i) {
    uint64_t v = rng();
    uint64_t old = 0;
    switch (rng() % 7) {
      case 0:
        old = rt.atomic_fetch_add<uint64_t>(&aw[me], v, tgt);
        PE_CHECK(old == model, "fetch_add");
        model += v;
        break;
      case 1:
        old = rt.atomic_swap<uint64_t>(&aw[me], v, tgt);
        PE_CHECK(old == model, "swap");
        model = v;
        break;
      case 2:
        old = rt.atomic_fetch_and<uint64_t>(&aw[me], v, tgt);
        PE_CHECK(old == model, "fetch_and");
        model &= v;
        break;
      case 3:
        old = rt.atomic_fetch_or<uint64_t>(&aw[me], v, tgt);
        PE_CHECK(old == model, "fetch_or");
        model |= v;
        break;
      case 4:
        old = rt.atomic_fetch_xor<uint64_t>(&aw[me], v, tgt);
        PE_CHECK(old == model, "fetch_xor");
        model ^= v;
        break;
      case 5: {
        uint64_t expected = (rng() & 1) ? model : model + 1;
        old = rt.atomic_compare_swap<uint64_t>(&aw[me], expected, v, tgt);
        PE_CHECK(old == model, "compare_swap old");
        if (expected == model) model = v;
        break;
      }
      default:
        old = rt.atomic_fetch_inc<uint64_t>(&aw[me], tgt);
        PE_CHECK(old == model, "fetch_inc");
        model += 1;
        break;
    }
    uint32_t v32 = static_cast<uint32_t>(rng());
    uint32_t o32 = rt.atomic_fetch_add<uint32_t>(&aw32[me], v32, tgt);
    PE_CHECK(o32 == model32, "32-bit fetch_add");
    model32 += v32;
  }
  PE_CHECK(rt.atomic_fetch<uint64_t>(&aw[me], tgt) == model, "final 64-bit value");
  rt.barrier_all();
  rt.free(aw32);
  rt.free(aw);
  rt.free(words);
  rt.free(counter);
  rt.free(sig);
  rt.free(buf);
}

// Concurrent atomic increments from every PE on one word: no lost update.
void scenario_atomic_storm(Runtime& rt, int iters) {
  auto* w = rt.alloc<uint64_t>(1);
  if (rt.rank() == 0) *w = 0;
  rt.barrier_all();
  for (int i = 0; i < iters; ++i) rt.atomic_inc<uint64_t>(w, 0);
  rt.barrier_all();
  uint64_t v = rt.atomic_fetch<uint64_t>(w, 0);
  PE_CHECK(v == static_cast<uint64_t>(iters) * static_cast<uint64_t>(rt.size()), "storm total %llu",
           static_cast<unsigned long long>(v));
  rt.barrier_all();
  rt.free(w);
}

void die_now() {
  std::fflush(stdout);
  std::fflush(stderr);
  ::raise(SIGKILL);
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "bootstrap";
  int arg = argc > 2 ? static_cast<int>(testing::arg_int(argv[2], "ARG")) : 0;
  int victim = argc > 3 ? static_cast<int>(testing::arg_int(argv[3], "VICTIM")) : -1;
  // Death before joining: the victim never reaches the store.
  if (scenario == "die-before-init") {
    const char* rank = std::getenv("GPUCOMM_RANK");
    if (testing::arg_int(rank ? rank : "0", "GPUCOMM_RANK") == victim) die_now();
  }
  if (scenario == "gpu-init") {
    // arg: GPUs this test needs. Without them, say so in CTest's skip format.
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    if (n < std::max(1, arg)) {
      std::printf("[  SKIPPED ] needs %d GPU(s), found %d\n", std::max(1, arg), n);
      return 0;
    }
  }
  try {
    Runtime rt;
    if (scenario == "gpu-init") {
      PE_CHECK(rt.pe_kind() == PeKind::gpu, "PE kind is not gpu");
      int dev = -1;
      PE_CHECK(cudaGetDevice(&dev) == cudaSuccess && dev == rt.device_id(), "current device %d, runtime says %d", dev,
               rt.device_id());
      auto devs = rt.bootstrap().allgather(std::to_string(rt.device_id()));
      if (arg >= 2) {
        for (int r = 1; r < rt.size(); ++r)
          PE_CHECK(devs[static_cast<size_t>(r)] != devs[0], "ranks 0 and %d share a GPU", r);
      }
      rt.barrier_all();
    } else if (scenario == "bootstrap") {
      scenario_bootstrap(rt);
    } else if (scenario == "rma") {
      scenario_rma(rt, arg > 0 ? arg : 20);
    } else if (scenario == "atomic-storm") {
      scenario_atomic_storm(rt, arg > 0 ? arg : 10000);
    } else if (scenario == "die-before-init") {
      rt.barrier_all();
    } else if (scenario == "die-in-barrier") {
      // arg: iterations before the victim dies; the others wait in a host barrier.
      for (int i = 0; i < arg; ++i) rt.barrier_all();
      if (rt.rank() == victim) die_now();
      rt.barrier_all();
      PE_CHECK(false, "barrier completed although rank %d died", victim);
    } else if (scenario == "die-in-wait") {
      auto* s = rt.alloc<uint64_t>(1);
      *s = 0;
      rt.barrier_all();
      if (rt.rank() == victim) die_now();
      rt.wait_until<uint64_t>(s, Cmp::eq, 1);  // nobody will signal
    } else if (scenario == "wait-timeout") {
      auto* s = rt.alloc<uint64_t>(1);
      *s = 7;
      rt.barrier_all();
      if (rt.rank() == 0) rt.wait_until<uint64_t>(s, Cmp::ge, 9);
      // The others' barrier would time out as early: rank 0's timeout must be the first failure.
      if (rt.rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      rt.barrier_all();
    } else if (scenario == "bad-input") {
      auto* s = rt.alloc<uint64_t>(4);
      int caught = 0;
      try {
        rt.put(s, s, 8, rt.size());
      } catch (const Error& e) {
        caught += e.code() == Errc::invalid_argument;
        std::printf("%s\n", e.what());
      }
      try {
        rt.put(rt.heap().base() + rt.heap().size() - 8, s, 64, 0);
      } catch (const Error& e) {
        caught += e.code() == Errc::invalid_argument;
        std::printf("%s\n", e.what());
      }
      try {
        uint64_t x;
        rt.put(&x, s, 8, 0);
      } catch (const Error& e) {
        caught += e.code() == Errc::invalid_argument;
        std::printf("%s\n", e.what());
      }
      try {
        rt.atomic_add<uint64_t>(reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(s) + 1), 1, 0);
      } catch (const Error& e) {
        caught += e.code() == Errc::invalid_argument;
        std::printf("%s\n", e.what());
      }
      try {
        rt.malloc(size_t(1) << 50);
      } catch (const Error& e) {
        caught += e.code() == Errc::invalid_argument;
        std::printf("%s\n", e.what());
      }
      PE_CHECK(caught == 5, "caught %d of 5 bad inputs", caught);
      rt.barrier_all();
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
