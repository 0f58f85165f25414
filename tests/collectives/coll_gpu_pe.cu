// Collectives on GPU PEs across processes, under `gpucomm run -n N`:
//   gpucomm_test_coll_gpu_pe SCENARIO [--gpus K] [--shared]
//   api       the host API (stream-ordered) on device buffers: the reduced matrix against the reference
//   kernel    the in-kernel API at warp, block and grid level against the reference
//   graph     allreduce and allgather captured into a CUDA graph, replayed 1000 times
//   teams     collectives on two teams at once (two streams), checked
//   session   in-kernel rounds through a coll::device::Session, every rank or the even ones (the odd
//             ones call each collective on its own), against the sums
//   mismatch  rank 1 passes another reduction: the PE that sees it fails the job, every PE's kernel
//             leaves, and every error names the mismatch or the PE that failed (the job ends failed)
// --gpus K: print "[  SKIPPED ]" and exit 0 where fewer than K GPUs exist. --shared: every PE
// drives GPU 0 (PEs time-share one GPU).
#include <cuda_runtime.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "coll_kernels.cuh"

using namespace coll_check;

namespace {

void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Synchronizes `s`; a failed kernel raises the collective's record.
void sync(Collectives& coll, cudaStream_t s) {
  if (cudaStreamSynchronize(s) != cudaSuccess) coll.check_device();
}

int scenario_api(Runtime& rt) {
  Collectives coll(rt);
  const uint64_t seed = job_seed(rt);
  const auto cases =
      matrix(coll.topology(rt.world()), {DataType::f8e4m3, DataType::bf16, DataType::f32, DataType::i64}, true, 50000);
  DeviceMem mem;
  auto s = reinterpret_cast<cudaStream_t>(rt.stream());
  int printed = 0, failures = 0;
  for (size_t i = 0; i < cases.size(); ++i)
    failures += run_case(rt, coll, rt.world(), cases[i], i, seed, mem, rt.stream(), [&] { sync(coll, s); }, printed);
  std::printf("rank %d: %zu stream-ordered collectives checked\n", rt.rank(), cases.size());
  return failures;
}

int scenario_kernel(Runtime& rt) {
  Collectives coll(rt);
  return run_levels(rt, coll, job_seed(rt), 4);
}

// allreduce (sum of rank + 1 + i) and allgather captured once, replayed 1000 times; the inputs
// change between replays through a captured kernel, so every replay is checked by the last one.
__global__ void k_bump(int32_t* x, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) x[i] += 1;
}

int scenario_graph(Runtime& rt) {
  Collectives coll(rt);
  const int n = rt.size(), me = rt.rank();
  const size_t count = 4099, replays = 1000;
  cudaStream_t s;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  int32_t *x = nullptr, *y = nullptr, *g = nullptr;
  cuda(cudaMalloc(&x, count * 4), "cudaMalloc");
  cuda(cudaMalloc(&y, count * 4), "cudaMalloc");
  cuda(cudaMalloc(&g, count * 4 * static_cast<size_t>(n)), "cudaMalloc");
  std::vector<int32_t> init(count);
  for (size_t i = 0; i < count; ++i) init[i] = me + 1 + static_cast<int32_t>(i);
  cuda(cudaMemcpy(x, init.data(), count * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  coll.prepare(rt.world());  // preparing talks to the other PEs: not inside a capture
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture");
  k_bump<<<8, 256, 0, s>>>(x, count);
  coll.allreduce(x, y, count, DataType::i32, RedOp::sum, rt.world(), s);
  coll.allgather(x, g, count, DataType::i32, rt.world(), s);
  cuda(cudaStreamEndCapture(s, &graph), "end capture");
  cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  for (size_t r = 0; r < replays; ++r) cuda(cudaGraphLaunch(exec, s), "graph launch");
  sync(coll, s);
  std::vector<int32_t> got(count), gathered(count * static_cast<size_t>(n));
  cuda(cudaMemcpy(got.data(), y, count * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cuda(cudaMemcpy(gathered.data(), g, gathered.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  int failures = 0;
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < n; ++r) want += r + 1 + static_cast<int32_t>(i) + static_cast<int32_t>(replays);
    if (got[i] != want && failures++ < 5)
      std::fprintf(stderr, "CHECK failed: allreduce[%zu] = %d, expected %d\n", i, got[i], want);
    for (int r = 0; r < n; ++r) {
      const int32_t w = r + 1 + static_cast<int32_t>(i) + static_cast<int32_t>(replays);
      const int32_t v = gathered[static_cast<size_t>(r) * count + i];
      if (v != w && failures++ < 5)
        std::fprintf(stderr, "CHECK failed: allgather[%d][%zu] = %d, expected %d\n", r, i, v, w);
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(x);
  cudaFree(y);
  cudaFree(g);
  cudaStreamDestroy(s);
  std::printf("rank %d: %zu graph replays of allreduce + allgather checked\n", me, replays);
  return failures;
}

// Two teams with the same members (two slots, two workspaces) on two streams at once.
int scenario_teams(Runtime& rt) {
  Collectives coll(rt);
  const int n = rt.size(), me = rt.rank();
  Team a = rt.split(rt.world(), 0, me), b = rt.split(rt.world(), 0, -me);
  coll.prepare(a);
  coll.prepare(b);
  cudaStream_t sa, sb;
  cuda(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking), "stream");
  cuda(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking), "stream");
  const size_t count = 1000;
  float *x = nullptr, *y = nullptr, *z = nullptr;
  cuda(cudaMalloc(&x, count * 4), "cudaMalloc");
  cuda(cudaMalloc(&y, count * 4), "cudaMalloc");
  cuda(cudaMalloc(&z, count * 4 * static_cast<size_t>(n)), "cudaMalloc");
  std::vector<float> init(count, static_cast<float>(me + 1));
  cuda(cudaMemcpy(x, init.data(), count * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  for (int i = 0; i < 50; ++i) {
    coll.allreduce(x, y, count, DataType::f32, RedOp::sum, a, sa);
    coll.allgather(x, z, count, DataType::f32, b, sb);
  }
  sync(coll, sa);
  sync(coll, sb);
  std::vector<float> got(count), gathered(count * static_cast<size_t>(n));
  cuda(cudaMemcpy(got.data(), y, count * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cuda(cudaMemcpy(gathered.data(), z, gathered.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  int failures = 0;
  const int ranks_sum = n * (n + 1) / 2;  // of the inputs rank + 1
  const float sum = static_cast<float>(ranks_sum);
  for (size_t i = 0; i < count; ++i) {
    if (got[i] != sum) ++failures;
    for (int r = 0; r < n; ++r) {
      // Team b orders the members by -rank: its block j comes from world rank n - 1 - j.
      if (gathered[static_cast<size_t>(r) * count + i] != static_cast<float>(n - r)) ++failures;
    }
  }
  if (failures) std::fprintf(stderr, "CHECK failed: rank %d: %d wrong elements on the two teams\n", me, failures);
  cudaFree(x);
  cudaFree(y);
  cudaFree(z);
  cudaStreamDestroy(sa);
  cudaStreamDestroy(sb);
  return failures;
}

// The PE whose kernel sees the other's arguments traps; when its host reads the record it fails
// the job, so the other PE's kernel leaves within a second even if it never sees the mismatch
// itself (two PEs time-sharing a GPU may miss each other's last push). Every PE then checks that
// its error is the mismatch or the job's failure naming the other PE, and that the job's failure is
// the mismatch. The job ends failed: the test expects that (tests/support/expect_failed_job.py).
int scenario_mismatch(Runtime& rt) {
  Collectives coll(rt);
  float* x = nullptr;
  constexpr size_t kBytes = 64 * sizeof(float);
  cuda(cudaMalloc(&x, kBytes), "cudaMalloc");
  cuda(cudaMemset(x, 0, kBytes), "cudaMemset");
  auto s = reinterpret_cast<cudaStream_t>(rt.stream());
  CollOptions o;
  o.algorithm = Algorithm::oneshot;
  const int me = rt.rank(), other = 1 - rt.rank();
  coll.allreduce(x, x, 64, DataType::f32, RedOp::sum, rt.world(), s, o);
  coll.allreduce(x, x, 64, DataType::f32, me == 1 ? RedOp::max : RedOp::sum, rt.world(), s, o);
  const auto t0 = std::chrono::steady_clock::now();
  const auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // Polled rather than synchronized, so that a kernel still running long after the job failed
  // says so (the launcher stops this PE a few seconds after the failure).
  cudaError_t e = cudaStreamQuery(s);
  for (bool told = false; e == cudaErrorNotReady; e = cudaStreamQuery(s)) {
    if (!told && since() > 2.0) {
      told = true;
      std::printf("rank %d: the kernel still runs %.1f s after the calls; the job %s\n", me, since(),
                  rt.failed() ? ("failed: " + rt.failure()).c_str() : "has not failed");
      std::fflush(stdout);
    }
    usleep(1000);
  }
  const double secs = since();
  std::string msg;
  Errc code = Errc::internal;
  try {
    coll.check_device();
  } catch (const Error& err) {
    msg = err.what();
    code = err.code();
  }
  std::printf("rank %d: kernel ended with %s after %.3f s; error: %s\n", me, cudaGetErrorName(e), secs, msg.c_str());
  int failures = 0;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) ++failures, std::fprintf(stderr, "CHECK failed: rank %d: %s\n", me, what.c_str());
  };
  for (const char* part : {"collective allreduce on team 0", "sequence 2"})
    expect(msg.find(part) != std::string::npos, std::string("'") + part + "' missing from the error");
  const bool saw_it = code == Errc::invalid_argument && msg.find("reduction differs") != std::string::npos;
  const bool told = code == Errc::peer_failure &&
                    msg.find("the job failed elsewhere: rank " + std::to_string(other)) != std::string::npos;
  expect(saw_it || told,
         "the error is neither the mismatch nor the job's failure naming rank " + std::to_string(other) + ": " + msg);
  // Whoever failed first, the job failed, and its record is a PE's mismatch.
  expect(rt.failed(), "the job has not failed");
  expect(rt.failure().find("reduction differs") != std::string::npos,
         "the job's failure is not the mismatch: " + rt.failure());
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "api";
  int need_gpus = 1;
  bool shared = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gpus" && i + 1 < argc) {
      need_gpus = static_cast<int>(gpucomm::testing::arg_int(argv[++i], "--gpus"));
    } else if (a == "--shared") {
      shared = true;
    }
  }
  int have = 0;
  if (cudaGetDeviceCount(&have) != cudaSuccess) have = 0;
  if (have < need_gpus) {
    std::printf("[  SKIPPED ] %s needs %d GPU(s), found %d\n", scenario.c_str(), need_gpus, have);
    return 0;
  }
  if (shared) setenv("GPUCOMM_DEVICE_ID", "0", 1);
  int failures = 0;
  try {
    Runtime rt;
    if (rt.pe_kind() != PeKind::gpu) throw std::runtime_error("expected a GPU PE (GPUCOMM_DEVICE=gpu)");
    if (scenario == "api") {
      failures = scenario_api(rt);
    } else if (scenario == "kernel") {
      failures = scenario_kernel(rt);
    } else if (scenario == "graph") {
      failures = scenario_graph(rt);
    } else if (scenario == "teams") {
      failures = scenario_teams(rt);
    } else if (scenario == "session") {
      Collectives coll(rt);
      failures = run_session(rt, coll, job_seed(rt));
    } else if (scenario == "mismatch") {
      failures = scenario_mismatch(rt);
    } else {
      std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
      return 2;
    }
    if (failures == 0) testing::print_pe_ok(rt.rank(), rt.size(), scenario);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "PE ERROR: %s\n", e.what());
    return 1;
  }
  if (scenario == "mismatch") std::printf("the runtime is torn down\n");  // how long a failed job's teardown takes
  return failures == 0 ? 0 : 1;
}
