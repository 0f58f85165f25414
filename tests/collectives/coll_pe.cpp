// Collectives across real processes (host-memory PEs, `gpucomm run -n N`), against the CPU
// reference, bit for bit:
//   gpucomm_test_coll_pe matrix [--reduced] [--nodes K]   every operation x type x algorithm (counts 0,
//                                                         1, odd, unaligned, large; in and out of place)
//   gpucomm_test_coll_pe teams                            collectives on two split teams and the world, interleaved
//   gpucomm_test_coll_pe mismatch                         rank 1 passes another reduction: every PE gets the error
//   gpucomm_test_coll_pe timeout                          rank 0 skips a collective: the others time out naming it
//   gpucomm_test_coll_pe raise                            the last rank raises inside an alltoallv: the job fails,
//                                                         the others leave at once naming it
// --nodes K: PE r acts as node r / (N / K) (GPUCOMM_HOSTNAME), so the hierarchical form runs across
// "nodes" through the proxy (UCX). Prints "PE OK" on success; exit status 1 on failures.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "coll_check.hpp"

namespace {

using namespace coll_check;

int scenario_matrix(Runtime& rt, bool reduced) {
  Collectives coll(rt);
  const Team& world = rt.world();
  const uint64_t seed = job_seed(rt);
  const TopoSummary t = coll.topology(world);
  const std::vector<DataType> types =
      reduced ? std::vector<DataType>{DataType::f8e5m2, DataType::bf16, DataType::f32, DataType::i64} : all_types();
  const auto cases = matrix(t, types, reduced, reduced ? 700 : 1500);
  HostMem mem;
  int printed = 0, failures = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < cases.size(); ++i) {
    try {
      failures += run_case(rt, coll, world, cases[i], i, seed, mem, nullptr, [] {}, printed);
    } catch (const Error& e) {
      std::fprintf(stderr, "CHECK failed: rank %d: %s: %s\n", rt.rank(), describe(cases[i], 0).c_str(), e.what());
      return 1;  // the PEs are out of step now
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rt.rank() == 0) {
    std::printf("%zu collectives on %d PEs (%s, %d nodes) checked against the reference in %.2f s, seed %llu\n",
                cases.size(), rt.size(), link_class_name(t.intra), t.nodes, secs,
                static_cast<unsigned long long>(seed));
  }
  return failures;
}

// Collectives on two split teams (odd and even ranks) and the world, interleaved.
int scenario_teams(Runtime& rt) {
  Collectives coll(rt);
  const uint64_t seed = job_seed(rt);
  Team half = rt.split(rt.world(), rt.rank() % 2, rt.size() - rt.rank());  // reversed order
  const TopoSummary t = coll.topology(half);
  HostMem mem;
  int printed = 0, failures = 0;
  for (int it = 0; it < 30; ++it) {
    const Team& team = it % 3 == 2 ? rt.world() : half;
    Case c{};
    c.op = it % 2 ? CollOp::allreduce : CollOp::allgather;
    const auto algos = algorithms_of(c.op, t);
    c.algo = algos[static_cast<size_t>(it) % algos.size()];
    c.dt = it % 4 ? DataType::f32 : DataType::i32;
    c.redop = RedOp::sum;
    c.count = 100 + static_cast<uint64_t>(it);
    failures += run_case(rt, coll, team, c, static_cast<size_t>(it), seed, mem, nullptr, [] {}, printed);
  }
  coll.barrier(rt.world());
  if (rt.rank() == 0) std::printf("30 collectives on split teams and the world checked\n");
  return failures;
}

int scenario_mismatch(Runtime& rt) {
  Collectives coll(rt);
  std::vector<float> x(64, 1.0f), y(64);
  coll.allreduce(x.data(), y.data(), 64, DataType::f32, RedOp::sum, rt.world());  // a good one first
  bool caught = false;
  try {
    const RedOp op = rt.rank() == 1 ? RedOp::max : RedOp::sum;
    CollOptions o;
    o.algorithm = Algorithm::oneshot;
    coll.allreduce(x.data(), y.data(), 64, DataType::f32, op, rt.world(), nullptr, o);
  } catch (const Error& e) {
    const std::string w = e.what();
    std::printf("rank %d: %s\n", rt.rank(), e.what());
    caught = e.code() == Errc::invalid_argument && w.find("reduction differs") != std::string::npos &&
             w.find("allreduce") != std::string::npos && w.find("sequence 2") != std::string::npos;
  }
  PE_CHECK(caught, "rank %d: the mismatch was not reported as expected", rt.rank());
  return 0;
}

// On the LL lane: rank 1 calls the barrier while the others call an LL allreduce at the same lane
// epoch; the header words carry the signatures, so every PE names the operation that differs.
int scenario_mismatch_lane(Runtime& rt) {
  Collectives coll(rt);
  std::vector<float> x(2, 1.0f), y(2);
  CollOptions o;
  o.algorithm = Algorithm::oneshot_ll;
  coll.allreduce(x.data(), y.data(), 2, DataType::f32, RedOp::sum, rt.world(), nullptr, o);  // a good one first
  PE_CHECK(y[0] == static_cast<float>(rt.size()), "rank %d: the first allreduce gave %g", rt.rank(), y[0]);
  bool caught = false;
  try {
    if (rt.rank() == 1) {
      coll.barrier(rt.world(), nullptr, o);
    } else {
      coll.allreduce(x.data(), y.data(), 2, DataType::f32, RedOp::sum, rt.world(), nullptr, o);
    }
  } catch (const Error& e) {
    const std::string w = e.what();
    std::printf("rank %d: %s\n", rt.rank(), e.what());
    caught = e.code() == Errc::invalid_argument && w.find("operation differs") != std::string::npos &&
             w.find("sequence 2") != std::string::npos;
  }
  PE_CHECK(caught, "rank %d: the mismatch on the lane was not reported as expected", rt.rank());
  return 0;
}

// Only the channel count differs (rank 1 asks for 2 channels): the signature's hash of (count, root,
// channels) differs, and the message names both channel counts (found by trying every count).
int scenario_mismatch_channels(Runtime& rt) {
  Collectives coll(rt);
  std::vector<float> x(64, 1.0f), y(64);
  bool caught = false;
  try {
    CollOptions o;
    o.algorithm = Algorithm::oneshot;
    o.channels = rt.rank() == 1 ? 2 : 1;
    coll.allreduce(x.data(), y.data(), 64, DataType::f32, RedOp::sum, rt.world(), nullptr, o);
  } catch (const Error& e) {
    const std::string w = e.what();
    std::printf("rank %d: %s\n", rt.rank(), e.what());
    const std::string want =
        rt.rank() == 1 ? "channel count differs (2 here, 1 there" : "channel count differs (1 here, 2 there";
    caught = e.code() == Errc::invalid_argument && w.find(want) != std::string::npos;
  }
  PE_CHECK(caught, "rank %d: the channel counts were not named", rt.rank());
  return 0;
}

int scenario_timeout(Runtime& rt) {
  Collectives coll(rt);
  std::vector<int32_t> x(8, 1), y(8);
  coll.allreduce(x.data(), y.data(), 8, DataType::i32, RedOp::sum, rt.world());
  if (rt.rank() == 0) {
    // Skips the second allreduce; waits until the others timed out (GPUCOMM_TIMEOUT=3) before
    // its own barrier wait begins.
    std::printf("rank 0 skips the second allreduce\n");
    sleep(2);
    return 0;
  }
  bool caught = false;
  try {
    CollOptions o;
    o.algorithm = Algorithm::oneshot;
    coll.allreduce(x.data(), y.data(), 8, DataType::i32, RedOp::sum, rt.world(), nullptr, o);
  } catch (const Error& e) {
    const std::string w = e.what();
    std::printf("rank %d: %s\n", rt.rank(), e.what());
    caught = e.code() == Errc::timeout && w.find("team rank 0 ") != std::string::npos &&
             w.find("sequence 2") != std::string::npos && w.find("team 0") != std::string::npos;
  }
  PE_CHECK(caught, "rank %d: the timeout did not name the missing PE", rt.rank());
  return 0;
}

// Set by the raise scenario's last rank when the error it raised was the expected one (main then
// reports success although the error left the runtime).
bool g_raised_as_expected = false;

// The last rank expects two elements from its successor in an alltoallv, which sends one: only the
// last rank's check sees it and raises inside the collective, while the others go on to wait for
// its data. The error leaves the Collectives and the runtime (nothing waits for anybody while it
// unwinds; the runtime aborts the job), and the others' waits leave at once naming the last rank.
// The job ends failed (tests/support/expect_failed_job.py checks that).
int scenario_raise(Runtime& rt) {
  Collectives coll(rt);
  const int n = rt.size(), me = rt.rank(), victim = n - 1;
  const auto un = static_cast<size_t>(n);
  std::vector<uint64_t> send_counts(un, 1), displs(un), recv_counts(un, 1);
  for (size_t i = 0; i < un; ++i) displs[i] = i;
  std::vector<int32_t> in(un, me), out(un + 1);
  auto call = [&] {
    coll.alltoallv(in.data(), send_counts.data(), displs.data(), out.data(), recv_counts.data(), displs.data(),
                   DataType::i32, rt.world());
  };
  call();  // a good one first
  if (me == victim) recv_counts[static_cast<size_t>((me + 1) % n)] = 2;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    call();
    PE_CHECK(false, "rank %d: the second alltoallv did not fail", me);
  } catch (const Error& e) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string w = e.what();
    std::printf("rank %d after %.3f s: %s\n", me, secs, e.what());
    if (me == victim) {
      g_raised_as_expected = e.code() == Errc::invalid_argument && w.find("recv_counts[") != std::string::npos;
      PE_CHECK(g_raised_as_expected, "rank %d: the count mismatch was not reported as expected", me);
      throw;
    } else {
      // The job's timeout is 60 s: leaving within 10 s means the failure, not a timeout, ended the wait.
      PE_CHECK(e.code() == Errc::peer_failure &&
                   w.find("rank " + std::to_string(victim) + " aborted") != std::string::npos &&
                   w.find("collective alltoallv") != std::string::npos && secs < 10.0,
               "rank %d: the wait did not leave promptly naming rank %d", me, victim);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool reduced = false;
  int nodes = 0;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--reduced") {
      reduced = true;
    } else if (args[i] == "--nodes" && i + 1 < args.size()) {
      nodes = static_cast<int>(testing::arg_int(args[++i].c_str(), "--nodes"));
    } else {
      rest.push_back(args[i]);
    }
  }
  const std::string scenario = rest.empty() ? "matrix" : rest[0];
  if (nodes > 0) {
    const char* r = std::getenv("GPUCOMM_RANK");
    const char* s = std::getenv("GPUCOMM_SIZE");
    const int64_t rank = testing::arg_int(r ? r : "0", "GPUCOMM_RANK"),
                  size = testing::arg_int(s ? s : "1", "GPUCOMM_SIZE");
    const int64_t per = std::max<int64_t>(1, size / nodes);
    setenv("GPUCOMM_HOSTNAME", ("node" + std::to_string(rank / per)).c_str(), 1);
  }
  int rc = 0;
  try {
    Runtime rt;
    if (scenario == "matrix") {
      rc = scenario_matrix(rt, reduced);
    } else if (scenario == "teams") {
      rc = scenario_teams(rt);
    } else if (scenario == "mismatch") {
      rc = scenario_mismatch(rt);
    } else if (scenario == "mismatch_channels") {
      rc = scenario_mismatch_channels(rt);
    } else if (scenario == "mismatch_lane") {
      rc = scenario_mismatch_lane(rt);
    } else if (scenario == "timeout") {
      rc = scenario_timeout(rt);
    } else if (scenario == "raise") {
      rc = scenario_raise(rt);
    } else {
      std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
      return 2;
    }
    if (!rt.failed()) rt.barrier_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (!g_raised_as_expected) return 1;
  }
  if (rc || testing::g_pe_failures) {
    std::fprintf(stderr, "%d checks failed\n", rc + testing::g_pe_failures);
    return 1;
  }
  testing::print_pe_ok();
  return 0;
}
