// GPU PEs with a proxy in the path, under `gpucomm run -n N` with GPUCOMM_TRANSPORT forced:
//   gpucomm_test_proxy_gpu_pe SCENARIO [N] [--gpus K] [--shared]
//   stress N     ordering stress: N put-with-signal messages per PE through the proxy, every
//                payload checked by the receiver against the signal it saw
//   stress8 N    the same with 8-byte messages (their payload travels inside the descriptor)
//   pstorm N     every thread puts N values with p() (8, 4 and 2 bytes) to a few words of its own,
//                each word many times; after quiet every word holds its last value
//   fault        a descriptor outside the heap: the agent fails the queue, the device wait that
//                follows fails with a record naming the queue, the ticket and the fault, and reading
//                the record fails the job (the job ends failed, naming rank 0)
//   no-agent     a queue nobody serves: the device wait for completion times out and says so (the
//                job ends failed)
//   routes NAME  every PE is reached by route NAME (copy-engine, sm-agent, ucx)
// --gpus K: print "[  SKIPPED ]" and exit 0 where fewer than K GPUs exist.
// --shared: every PE drives GPU 0.
#include <cuda_runtime.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "gpucomm/device/gpucomm_device.cuh"
#include "gpucomm/gpucomm.hpp"
#include "gpucomm/proxy/queue.hpp"
#include "pe_check.hpp"

using namespace gpucomm;

namespace {

int g_failures = 0;
void fail(const std::string& what) {
  ++g_failures;
  std::fprintf(stderr, "CHECK failed: %s\n", what.c_str());
}
void cuda_ok(Runtime& rt, cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  rt.check_device();
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

__host__ __device__ uint64_t msg_check(uint64_t seed, uint64_t ch, uint64_t seq) {
  uint64_t x = seed ^ (ch * 0x9E3779B97F4A7C15ull) ^ (seq * 0xC2B2AE3D27D4EB4Full);
  x ^= x >> 31, x *= 0x7FB5D5A2B1D3C3E5ull, x ^= x >> 29;
  return x;
}

// 16-byte messages (a put with its data in memory) and 8-byte ones (inline in the descriptor).
struct alignas(16) Msg {
  uint64_t seq;
  uint64_t check;
  __host__ __device__ static Msg make(uint64_t seed, uint64_t ch, uint64_t seq) {
    return Msg{seq, msg_check(seed, ch, seq)};
  }
  __device__ bool valid(uint64_t seed, uint64_t ch, uint64_t seq) const {
    const volatile Msg* m = this;
    return m->seq == seq && m->check == msg_check(seed, ch, seq);
  }
};
struct Msg8 {
  uint64_t check;
  __host__ __device__ static Msg8 make(uint64_t seed, uint64_t ch, uint64_t seq) {
    return Msg8{msg_check(seed, ch, seq)};
  }
  __device__ bool valid(uint64_t seed, uint64_t ch, uint64_t seq) const {
    const volatile Msg8* m = this;
    return m->check == msg_check(seed, ch, seq);
  }
};

// Sources live in global memory: the agent (copy engine, SM copies, UCX) reads them after the
// post, so they cannot be a thread's registers or stack.
template <class M>
__global__ void k_fill(M* src, int per_channel, uint64_t seed) {
  const uint64_t ch = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  for (int i = 0; i < per_channel; ++i) src[ch * per_channel + i] = M::make(seed, ch, static_cast<uint64_t>(i));
}
template <class M>
__global__ void k_send(DeviceHandle h, M* slots, const M* src, uint64_t* sigs, int per_channel, int pe) {
  const uint64_t ch = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  for (int i = 0; i < per_channel; ++i) {
    device::put_signal_nbi(coop::Thread{}, h, &slots[ch * per_channel + i], &src[ch * per_channel + i], sizeof(M),
                           &sigs[ch], static_cast<uint64_t>(i) + 1, SignalOp::set, pe);
  }
  device::quiet(coop::Thread{}, h);
}
// counters: [0] violations, [1] checked, [2] stalled channels
template <class M>
__global__ void k_recv(DeviceHandle h, const M* slots, uint64_t* sigs, int per_channel, uint64_t seed,
                       unsigned long long* counters) {
  const uint64_t ch = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  uint64_t checked = 0, bad = 0, last = mem::globaltimer();
  while (checked < static_cast<uint64_t>(per_channel)) {
    const uint64_t seen = mem::load<mem::kSystem>(&sigs[ch], mem::acquire);
    if (seen > checked) {
      for (; checked < seen; ++checked)
        if (!slots[ch * per_channel + checked].valid(seed, ch, checked)) ++bad;
      last = mem::globaltimer();
    } else if (h.timeout_ns && mem::globaltimer() - last > h.timeout_ns) {
      atomicAdd(&counters[2], 1ull);
      break;
    }
  }
  atomicAdd(&counters[0], static_cast<unsigned long long>(bad));
  atomicAdd(&counters[1], static_cast<unsigned long long>(checked));
}

template <class M>
void scenario_stress(Runtime& rt, long long messages) {
  const int blocks = 32, threads = 128, channels = blocks * threads;
  const int per = static_cast<int>((messages + channels - 1) / channels);
  const int peer = (rt.rank() + 1) % rt.size(), left = (rt.rank() - 1 + rt.size()) % rt.size();
  const uint64_t seed = std::strtoull(
      rt.bootstrap().allgather(std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()))[0].c_str(),
      nullptr, 10);
  auto* slots = rt.alloc<M>(static_cast<size_t>(channels) * per);
  auto* sigs = static_cast<uint64_t*>(rt.calloc(channels, sizeof(uint64_t)));
  auto* src = rt.alloc<M>(static_cast<size_t>(channels) * per);
  unsigned long long* counters = nullptr;
  cuda_ok(rt, cudaMalloc(&counters, 3 * sizeof(unsigned long long)), "cudaMalloc");
  cuda_ok(rt, cudaMemset(counters, 0, 3 * sizeof(unsigned long long)), "cudaMemset");
  cudaStream_t send, recv;
  cuda_ok(rt, cudaStreamCreateWithFlags(&send, cudaStreamNonBlocking), "stream");
  cuda_ok(rt, cudaStreamCreateWithFlags(&recv, cudaStreamNonBlocking), "stream");
  k_fill<M><<<blocks, threads, 0, send>>>(src, per, seed ^ static_cast<uint64_t>(rt.rank()));
  cuda_ok(rt, cudaStreamSynchronize(send), "fill");
  cudaFuncAttributes attr;
  cuda_ok(rt, cudaFuncGetAttributes(&attr, k_recv<M>), "load receiver");
  cuda_ok(rt, cudaFuncGetAttributes(&attr, k_send<M>), "load sender");
  rt.barrier_all();
  const DeviceHandle h = rt.device_handle();
  const auto t0 = std::chrono::steady_clock::now();
  k_recv<M><<<blocks, threads, 0, recv>>>(h, slots, sigs, per, seed ^ static_cast<uint64_t>(left), counters);
  k_send<M><<<blocks, threads, 0, send>>>(h, slots, src, sigs, per, peer);
  cuda_ok(rt, cudaGetLastError(), "launch");
  cuda_ok(rt, cudaStreamSynchronize(send), "sender");
  cuda_ok(rt, cudaStreamSynchronize(recv), "receiver");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unsigned long long c[3];
  cuda_ok(rt, cudaMemcpy(c, counters, sizeof c, cudaMemcpyDeviceToHost), "counters");
  const auto sent = static_cast<unsigned long long>(channels) * static_cast<unsigned long long>(per);
  const TransportInfo info = rt.transport_info();
  std::printf(
      "rank %d (%s, agent %s): %llu put-with-signal messages of %zu bytes checked in %.2f s (%.2f M/s): %llu "
      "violations, %llu stalled channels\n",
      rt.rank(), info.kind.c_str(), info.agent.c_str(), c[1], sizeof(M), secs, static_cast<double>(c[1]) / secs / 1e6,
      c[0], c[2]);
  if (c[0]) fail(std::to_string(c[0]) + " ordering violations (seed " + std::to_string(seed) + ")");
  if (c[2]) fail(std::to_string(c[2]) + " channels stalled");
  if (c[1] != sent) fail("checked " + std::to_string(c[1]) + " of " + std::to_string(sent) + " messages");
  rt.barrier_all();
  cudaStreamDestroy(send);
  cudaStreamDestroy(recv);
  cudaFree(counters);
  rt.free(src);
  rt.free(sigs);
  rt.free(slots);
}

// p() storm: thread t puts `per` values to kWordsPerThread words of its own (each word many times),
// 8, 4 or 2 bytes wide by t % 3, to PE `pe`.
constexpr int kWordsPerThread = 4;
__host__ __device__ uint64_t storm_value(uint64_t t, uint64_t i) {
  return msg_check(0x5EEDull, t, i);
}
__global__ void k_pstorm(DeviceHandle h, uint64_t* w8, uint32_t* w4, uint16_t* w2, int per, int pe) {
  const uint64_t t = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  for (int i = 0; i < per; ++i) {
    const uint64_t at = t * kWordsPerThread + static_cast<uint64_t>(i % kWordsPerThread);
    const uint64_t v = storm_value(t, static_cast<uint64_t>(i));
    if (t % 3 == 0) {
      device::p(h, &w8[at], v, pe);
    } else if (t % 3 == 1) {
      device::p(h, &w4[at], static_cast<uint32_t>(v), pe);
    } else {
      device::p(h, &w2[at], static_cast<uint16_t>(v), pe);
    }
  }
  device::quiet(coop::Thread{}, h);
}

void scenario_pstorm(Runtime& rt, long long per_thread) {
  const int blocks = 64, threads = 256;
  const auto n = static_cast<size_t>(blocks) * threads * kWordsPerThread;
  const int per = static_cast<int>(per_thread);
  auto* w8 = static_cast<uint64_t*>(rt.calloc(n, sizeof(uint64_t)));
  auto* w4 = static_cast<uint32_t*>(rt.calloc(n, sizeof(uint32_t)));
  auto* w2 = static_cast<uint16_t*>(rt.calloc(n, sizeof(uint16_t)));
  rt.barrier_all();
  const int peer = (rt.rank() + 1) % rt.size();
  auto s = reinterpret_cast<cudaStream_t>(rt.stream());
  const auto t0 = std::chrono::steady_clock::now();
  k_pstorm<<<blocks, threads, 0, s>>>(rt.device_handle(), w8, w4, w2, per, peer);
  cuda_ok(rt, cudaGetLastError(), "launch");
  cuda_ok(rt, cudaStreamSynchronize(s), "p storm");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rt.barrier_all();  // every PE's puts into this PE are complete (each quieted before the barrier)
  std::vector<uint64_t> h8(n);
  std::vector<uint32_t> h4(n);
  std::vector<uint16_t> h2(n);
  cuda_ok(rt, cudaMemcpy(h8.data(), w8, n * 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cuda_ok(rt, cudaMemcpy(h4.data(), w4, n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cuda_ok(rt, cudaMemcpy(h2.data(), w2, n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  uint64_t wrong = 0;
  for (uint64_t t = 0; t < static_cast<uint64_t>(blocks) * threads; ++t) {
    for (int j = 0; j < kWordsPerThread && j < per; ++j) {
      const int last = ((per - 1 - j) / kWordsPerThread) * kWordsPerThread + j;  // the last i with i % K == j
      const uint64_t v = storm_value(t, static_cast<uint64_t>(last));
      const size_t at = t * kWordsPerThread + static_cast<size_t>(j);
      if (t % 3 == 0   ? h8[at] != v
          : t % 3 == 1 ? h4[at] != static_cast<uint32_t>(v)
                       : h2[at] != static_cast<uint16_t>(v))
        ++wrong;
    }
  }
  const TransportInfo info = rt.transport_info();
  std::printf("rank %d (%s, agent %s): %lld p() per thread, %.2f M puts/s, %llu words wrong\n", rt.rank(),
              info.kind.c_str(), info.agent.c_str(), per_thread,
              static_cast<double>(blocks) * threads * per / secs / 1e6, static_cast<unsigned long long>(wrong));
  if (wrong) fail(std::to_string(wrong) + " words do not hold their last value");
  rt.barrier_all();
  rt.free(w2);
  rt.free(w4);
  rt.free(w8);
}

// A descriptor the agent must reject, then a blocking wait on it.
__global__ void k_bad_descriptor(DeviceHandle h, int pe) {
  const proxy::QueueView& q = proxy::queue_of(h);
  proxy::Descriptor d{};
  d.opcode = proxy::Opcode::put;
  d.pe = pe;
  d.remote = static_cast<int64_t>(h.heap_size) - 8;  // 64 bytes from 8 bytes before the end
  d.local = reinterpret_cast<uint64_t>(h.heap_base);
  d.bytes = 64;
  const uint64_t t = proxy::post(h, q, d);
  proxy::wait_ticket(h, q, t, DeviceOp::put, pe);
}

void expect_parts(const std::string& msg, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (msg.find(p) == std::string::npos) fail(std::string("'") + p + "' missing from the error: " + msg);
}

void scenario_fault(Runtime& rt) {
  if (rt.rank() == 0) {
    auto s = reinterpret_cast<cudaStream_t>(rt.stream());
    k_bad_descriptor<<<1, 1, 0, s>>>(rt.device_handle(), rt.size() - 1);
    const cudaError_t e = cudaStreamSynchronize(s);
    std::string msg;
    try {
      rt.check_device();
    } catch (const Error& err) {
      msg = err.what();
    }
    std::printf("rank 0: kernel ended with %s; error: %s\n", cudaGetErrorName(e), msg.c_str());
    expect_parts(msg, {"rank 0, block (0,0,0) thread (0,0,0)", "put to PE", "proxy queue", "failed at ticket",
                       "address outside the symmetric heap"});
    // Reading its own record failed the job (nobody may wait for a GPU that trapped).
    if (!rt.failed()) fail("rank 0's failure did not fail the job");
    return;
  }
  try {
    rt.bootstrap().barrier();  // the others learn of rank 0's failure where they wait
    fail("the barrier completed without rank 0");
  } catch (const Error& err) {
    if (err.code() != Errc::peer_failure || std::string(err.what()).find("rank 0 aborted") == std::string::npos)
      fail(std::string("the error does not name rank 0: ") + err.what());
  }
}

__global__ void k_blocking_put(DeviceHandle h, uint64_t* buf) {
  device::put(coop::Warp{}, h, buf, buf + 4, 16, h.rank);
}

void scenario_no_agent(Runtime& rt) {
  // A queue for GPU producers that no agent serves, in a copy of the handle.
  proxy::Queue q(proxy::QueueConfig{proxy::Side::gpu, proxy::Side::cpu, proxy::Placement::host, 4, 0}, 77);
  proxy::QueueView* table = nullptr;
  cuda_ok(rt, cudaMalloc(&table, sizeof(proxy::QueueView)), "cudaMalloc");
  const proxy::QueueView v = q.producer_view();
  cuda_ok(rt, cudaMemcpy(table, &v, sizeof v, cudaMemcpyHostToDevice), "cudaMemcpy");
  DeviceHandle h = rt.device_handle();
  h.transport = TransportKind::proxy_cpu;
  h.num_queues = 1;
  h.queues = table;
  auto* buf = rt.alloc<uint64_t>(8);
  auto s = reinterpret_cast<cudaStream_t>(rt.stream());
  // A blocking put waits for its completion, which never comes.
  k_blocking_put<<<1, 32, 0, s>>>(h, buf);
  const cudaError_t e = cudaStreamSynchronize(s);
  std::string msg;
  try {
    rt.check_device();
  } catch (const Error& err) {
    msg = err.what();
  }
  std::printf("rank %d: kernel ended with %s; error: %s\n", rt.rank(), cudaGetErrorName(e), msg.c_str());
  expect_parts(msg, {"put to PE", "proxy queue 77", "the agent completed 0 entries, waiting for 1", "timed out after",
                     "is the proxy running?"});
  if (!rt.failed()) fail("the device failure did not fail the job");
  cudaFree(table);
}

void scenario_routes(Runtime& rt, const std::string& expect) {
  const TransportInfo info = rt.transport_info();
  for (int r = 0; r < rt.size(); ++r) {
    if (info.routes[static_cast<size_t>(r)] != expect)
      fail("route to PE " + std::to_string(r) + " is " + info.routes[static_cast<size_t>(r)]);
  }
  std::printf("rank %d: transport %s, agent %s, %d device queues\n", rt.rank(), info.kind.c_str(), info.agent.c_str(),
              info.device_queues);
  rt.barrier_all();
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "stress";
  std::string arg;
  int need_gpus = 1;
  bool shared = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--gpus" && i + 1 < argc) {
      need_gpus = static_cast<int>(gpucomm::testing::arg_int(argv[++i], "--gpus"));
    } else if (a == "--shared") {
      shared = true;
    } else {
      arg = a;
    }
  }
  int have = 0;
  if (cudaGetDeviceCount(&have) != cudaSuccess) have = 0;
  if (have < need_gpus) {
    std::printf("[  SKIPPED ] %s needs %d GPU(s), found %d\n", scenario.c_str(), need_gpus, have);
    return 0;
  }
  if (shared) setenv("GPUCOMM_DEVICE_ID", "0", 1);
  if (scenario == "no-agent") setenv("GPUCOMM_TIMEOUT", "2", 1);
  try {
    Runtime rt;
    if (rt.pe_kind() != PeKind::gpu) throw std::runtime_error("expected a GPU PE (GPUCOMM_DEVICE=gpu)");
    if (scenario == "stress" || scenario == "stress8") {
      const long long n = arg.empty() ? 100000 : gpucomm::testing::arg_int(arg.c_str(), "MESSAGES");
      if (scenario == "stress") {
        scenario_stress<Msg>(rt, n);
      } else {
        scenario_stress<Msg8>(rt, n);
      }
    } else if (scenario == "pstorm") {
      scenario_pstorm(rt, arg.empty() ? 64 : gpucomm::testing::arg_int(arg.c_str(), "PER_THREAD"));
    } else if (scenario == "fault") {
      scenario_fault(rt);
    } else if (scenario == "no-agent") {
      scenario_no_agent(rt);
    } else if (scenario == "routes") {
      scenario_routes(rt, arg);
    } else {
      std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
      return 2;
    }
    if (g_failures == 0) testing::print_pe_ok(rt.rank(), rt.size(), scenario);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "PE ERROR: %s\n", e.what());
    return 1;
  }
  return g_failures == 0 ? 0 : 1;
}
