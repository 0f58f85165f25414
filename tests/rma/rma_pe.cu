// GPU PEs across processes, under `gpucomm run -n N`:
//   gpucomm_test_rma_pe SCENARIO [--gpus K] [--shared]
//   api       every device operation at every level, host API, registration, graph capture
//   stress M  ordering stress with at least M put-with-signal messages sent by each PE
//   timeout   rank 0 waits for a signal nobody sends; the error must name the wait, and the job fails
//             naming rank 0 (the others' waits say so)
// --gpus K: print "[  SKIPPED ]" and exit 0 where fewer than K GPUs exist.
// --shared: every PE drives GPU 0 (PEs time-share one GPU).
#include <cuda_runtime.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "pe_check.hpp"
#include "rma_host_checks.cuh"
#include "rma_stress.cuh"

using namespace gpucomm;

namespace {

uint64_t job_seed(Runtime& rt) {
  uint64_t mine = 0;
  if (const char* s = std::getenv("GPUCOMM_TEST_SEED")) {
    mine = std::strtoull(s, nullptr, 0);
  } else {
    mine = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^ 0x5DEECE66DULL;
  }
  auto all = rt.bootstrap().allgather(std::to_string(mine));
  return std::strtoull(all[0].c_str(), nullptr, 10);  // rank 0's seed for everyone
}

int scenario_api(Runtime& rt) {
  uint64_t seed = job_seed(rt);
  rma_checks::Report rep;
  {
    rma_checks::Ctx c(rt, rep, seed);
    rma_checks::check_device_api(c);
    rma_checks::check_host_api(c);
    rma_checks::check_registered(c);
    rma_checks::check_graph(c, 10);
  }
  if (rep.failures) {
    std::fprintf(stderr, "%d checks failed; replay with GPUCOMM_TEST_SEED=%llu\n", rep.failures,
                 static_cast<unsigned long long>(seed));
  }
  return rep.failures;
}

int scenario_stress(Runtime& rt, long long min_messages) {
  using namespace rma_checks;
  uint64_t seed = job_seed(rt);
  const int blocks = 32, threads = 256, channels = blocks * threads;
  const int per_channel = static_cast<int>((min_messages + channels - 1) / channels);
  const int peer = (rt.rank() + 1) % rt.size();
  auto* slots = rt.alloc<Msg>(static_cast<size_t>(channels) * static_cast<size_t>(per_channel));
  auto* sigs = static_cast<uint64_t*>(rt.calloc(static_cast<size_t>(channels), sizeof(uint64_t)));
  unsigned long long* counters = nullptr;
  Runtime& r = rt;
  auto check = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
      r.check_device();
      throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
    }
  };
  check(cudaMalloc(&counters, 3 * sizeof(unsigned long long)), "cudaMalloc");
  check(cudaMemset(counters, 0, 3 * sizeof(unsigned long long)), "cudaMemset");
  cudaStream_t send, recv;
  check(cudaStreamCreateWithFlags(&send, cudaStreamNonBlocking), "stream");
  check(cudaStreamCreateWithFlags(&recv, cudaStreamNonBlocking), "stream");
  // Load both kernels before either runs: with lazy module loading (CUDA's default), loading the
  // sender while the spinning receiver occupies the GPU can wait for the receiver to finish.
  cudaFuncAttributes attr;
  check(cudaFuncGetAttributes(&attr, k_stress_recv), "load receiver");
  check(cudaFuncGetAttributes(&attr, k_stress_send), "load sender");
  rt.barrier_all();
  auto t0 = std::chrono::steady_clock::now();
  DeviceHandle h = rt.device_handle();
  k_stress_recv<<<blocks, threads, 0, recv>>>(
      h, slots, sigs, per_channel, seed ^ static_cast<uint64_t>((rt.rank() - 1 + rt.size()) % rt.size()), counters);
  check(cudaGetLastError(), "launch receiver");
  k_stress_send<<<blocks, threads, 0, send>>>(h, slots, sigs, per_channel, peer,
                                              seed ^ static_cast<uint64_t>(rt.rank()));
  check(cudaGetLastError(), "launch sender");
  check(cudaStreamSynchronize(send), "sender");
  check(cudaStreamSynchronize(recv), "receiver");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsigned long long c[3];
  check(cudaMemcpy(c, counters, sizeof c, cudaMemcpyDeviceToHost), "counters");
  const unsigned long long sent =
      static_cast<unsigned long long>(channels) * static_cast<unsigned long long>(per_channel);
  std::printf(
      "rank %d: %llu put-with-signal messages received and checked in %.2f s (%.1f M/s): %llu ordering violations, "
      "%llu stalled channels\n",
      rt.rank(), c[1], secs, static_cast<double>(c[1]) / secs / 1e6, c[0], c[2]);
  int failures = 0;
  if (c[0] != 0) {
    ++failures, std::fprintf(stderr, "CHECK failed: %llu ordering violations (seed %llu)\n", c[0],
                             static_cast<unsigned long long>(seed));
  }
  if (c[2] != 0) ++failures, std::fprintf(stderr, "CHECK failed: %llu channels stalled\n", c[2]);
  if (c[1] != sent) ++failures, std::fprintf(stderr, "CHECK failed: checked %llu of %llu messages\n", c[1], sent);
  rt.barrier_all();
  cudaStreamDestroy(send);
  cudaStreamDestroy(recv);
  cudaFree(counters);
  rt.free(sigs);
  rt.free(slots);
  return failures;
}

__global__ void k_wait_forever(DeviceHandle h, uint64_t* sig) {
  device::signal_wait_until(coop::Block{}, h, sig, Cmp::ge, uint64_t(42));
}

int scenario_timeout(Runtime& rt) {
  auto* sig = static_cast<uint64_t*>(rt.calloc(8, sizeof(uint64_t)));
  int failures = 0;
  if (rt.rank() == 0) {
    auto s = reinterpret_cast<cudaStream_t>(rt.stream());
    k_wait_forever<<<1, 64, 0, s>>>(rt.device_handle(), sig + 3);
    if (cudaGetLastError() != cudaSuccess) ++failures;
    cudaError_t e = cudaStreamSynchronize(s);
    std::string msg;
    try {
      rt.check_device();
    } catch (const Error& err) {
      msg = err.what();
    }
    std::printf("rank 0: kernel ended with %s; error: %s\n", cudaGetErrorName(e), msg.c_str());
    for (const char* part : {"rank 0, block (0,0,0) thread (0,0,0)", "signal_wait_until on heap+0x18",
                             "expected value >= 42", "last seen 0", "timed out after", "GPUCOMM_TIMEOUT"}) {
      if (msg.find(part) == std::string::npos)
        ++failures, std::fprintf(stderr, "CHECK failed: '%s' missing from the error\n", part);
    }
    // Reading its own record failed the job (the others must not wait for a trapped GPU).
    if (!rt.failed()) ++failures, std::fprintf(stderr, "CHECK failed: rank 0's failure did not fail the job\n");
    return failures;
  }
  // The others learn of rank 0's failure where they wait (here: a bootstrap barrier).
  try {
    rt.bootstrap().barrier();
    ++failures, std::fprintf(stderr, "CHECK failed: rank %d: the barrier completed without rank 0\n", rt.rank());
  } catch (const Error& err) {
    const std::string m = err.what();
    std::printf("rank %d: %s\n", rt.rank(), m.c_str());
    if (err.code() != Errc::peer_failure || m.find("rank 0 aborted") == std::string::npos ||
        m.find("timed out") == std::string::npos)
      ++failures, std::fprintf(stderr, "CHECK failed: rank %d: the error does not name rank 0's timeout\n", rt.rank());
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "api";
  long long arg = 0;
  int need_gpus = 1;
  bool shared = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--gpus" && i + 1 < argc) {
      need_gpus = static_cast<int>(gpucomm::testing::arg_int(argv[++i], "--gpus"));
    } else if (a == "--shared") {
      shared = true;
    } else {
      arg = gpucomm::testing::arg_int(argv[i], "ARG");
    }
  }
  int have = 0;
  if (cudaGetDeviceCount(&have) != cudaSuccess) have = 0;
  if (have < need_gpus) {
    std::printf("[  SKIPPED ] %s needs %d GPU(s), found %d\n", scenario.c_str(), need_gpus, have);
    return 0;
  }
  if (shared) setenv("GPUCOMM_DEVICE_ID", "0", 1);
  // Only rank 0's wait should time out; the others wait for it with the default limit.
  const char* rank_env = std::getenv("GPUCOMM_RANK");
  if (scenario == "timeout" && rank_env && std::string(rank_env) == "0") setenv("GPUCOMM_TIMEOUT", "2", 1);
  int failures = 0;
  try {
    Runtime rt;
    if (rt.pe_kind() != PeKind::gpu) throw std::runtime_error("expected a GPU PE (GPUCOMM_DEVICE=gpu)");
    if (scenario == "api") {
      failures = scenario_api(rt);
    } else if (scenario == "stress") {
      failures = scenario_stress(rt, arg > 0 ? arg : 10000000);
    } else if (scenario == "timeout") {
      failures = scenario_timeout(rt);
    } else {
      std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
      return 2;
    }
    if (failures == 0) testing::print_pe_ok(rt.rank(), rt.size(), scenario + " (" + rt.describe() + ")");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "PE ERROR: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
