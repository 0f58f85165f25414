// A GPU PE of the partitioned point-to-point GPU tests (label gpu; docs/MESSAGING.md, "Partitioned
// communication"): `gpucomm_test_part_gpu_pe SCENARIO [--gpus K]` under `gpucomm run -n N`.
// device: each PE sends to the next PE (itself with one PE) and receives from the previous one in
//         one kernel: sender blocks fill their send partitions (16 of 4 KiB) and mark them ready
//         with msg::pready at thread, warp and block level, receiver blocks wait for the receive
//         partitions (4 of 16 KiB) with msg::wait_arrived and check every byte; several rounds,
//         the first with the host progressing while the kernel runs (the match may still be open)
// host:   the host calls on GPU PEs: pready_list from a device buffer outside the heap into a heap
//         buffer, parrived, staged receives into device memory outside the heap and into host
//         memory, and device() refusing a staged receive
// trap:   a kernel's pready of a partition outside the request traps; check_device names it
// --gpus K: print "[  SKIPPED ]" and exit 0 where fewer than K GPUs exist. Prints "PE OK".
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpucomm/gpucomm.hpp"
#include "gpucomm/messaging/partitioned.hpp"
#include "gpucomm/messaging/partitioned_device.cuh"
#include "msg_gpu_checks.cuh"
#include "msg_pe_common.hpp"
#include "pe_check.hpp"
#include "pe_main.hpp"

using namespace gpucomm;
using namespace msg_checks;

namespace {

void cuda_check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(e));
}
#define CUDA_CHECK(x) cuda_check((x), #x)

constexpr int kSendParts = 16, kRecvParts = 4, kSenders = 4, kReceivers = 4;
constexpr size_t kTotal = size_t(64) << 10;
constexpr size_t kSendBytes = kTotal / kSendParts, kRecvBytes = kTotal / kRecvParts;

// Byte g of round `key`'s message (the same pattern whatever the partitioning).
template <class C>
__device__ void fill_at(C c, char* b, size_t off, size_t n, uint32_t key) {
  for (size_t i = coop::thread_rank(c); i < n; i += coop::size(c)) b[off + i] = static_cast<char>(pat(key, off + i));
  coop::sync(c);
}
template <class C>
__device__ void check_at(C c, Report* rep, const char* b, size_t off, size_t n, uint32_t key, int part) {
  for (size_t i = coop::thread_rank(c); i < n; i += coop::size(c)) {
    const uint8_t want = pat(key, off + i);
    DCHECK(rep, static_cast<uint8_t>(b[off + i]) == want, part, 0, off + i, want);
  }
  coop::sync(c);
}

struct Args {
  msg::PartitionedHandle send, recv;
  char* src;  // the send buffer (device memory outside the heap)
  char* dst;  // the receive buffer (heap)
  uint32_t key;
  Report* rep;
};

template <class C>
__global__ void round_kernel(Args a) {
  C c;
  if (!acts(c)) return;
  const int b = static_cast<int>(blockIdx.x);
  if (b < kSenders) {
    // Partitions in descending order, spread over the sender blocks.
    for (int i = kSendParts - 1 - b; i >= 0; i -= kSenders) {
      fill_at(c, a.src, static_cast<size_t>(i) * kSendBytes, kSendBytes, a.key);
      msg::pready(c, a.send, static_cast<uint32_t>(i));
    }
  } else {
    const int j = b - kSenders;
    msg::wait_arrived(c, a.recv, static_cast<uint32_t>(j));
    if (coop::thread_rank(c) == 0) DCHECK(a.rep, msg::parrived(a.recv, static_cast<uint32_t>(j)), j, 1, 0, 0);
    check_at(c, a.rep, a.dst, static_cast<size_t>(j) * kRecvBytes, kRecvBytes, a.key, j);
  }
}

int check_report(Report* rep, const char* what) {
  Report h{};
  CUDA_CHECK(cudaMemcpy(&h, rep, sizeof h, cudaMemcpyDeviceToHost));
  PE_CHECK(h.failures == 0, "%s: %llu failures, first at line %d (partition %d, %d; byte %llu, want %llu)", what,
           h.failures, h.line, h.a, h.b, h.x, h.y);
  CUDA_CHECK(cudaMemset(rep, 0, sizeof(Report)));
  return static_cast<int>(h.failures);
}

template <class C>
void rounds_at(Runtime& rt, msg::Partitioned& part, msg::PartitionedRequest& s, msg::PartitionedRequest& r, Args a,
               int threads, const char* level, uint32_t key0) {
  auto st = reinterpret_cast<cudaStream_t>(rt.stream());
  for (int round = 0; round < 3; ++round) {
    a.key = key0 + static_cast<uint32_t>(round);
    r.start();
    s.start();
    a.send = s.device();
    a.recv = r.device();
    round_kernel<C><<<kSenders + kReceivers, threads, 0, st>>>(a);
    CUDA_CHECK(cudaGetLastError());
    cudaError_t e = cudaSuccess;
    // The receiver's host matches the init calls inside its partitioned calls: progress while the
    // kernel runs (a kernel waiting for a match its host never makes would time out).
    while ((e = cudaStreamQuery(st)) == cudaErrorNotReady) part.progress();
    if (e != cudaSuccess) part.check_device();
    CUDA_CHECK(e);
    s.wait();
    r.wait();
    check_report(a.rep, level);
  }
}

void scenario_device(Runtime& rt) {
  const int n = rt.size(), me = rt.rank();
  msg::Messenger m(rt);
  msg::Partitioned part(m);
  const msg::Comm w = m.world();
  Args a{};
  CUDA_CHECK(cudaMalloc(&a.src, kTotal));
  a.dst = static_cast<char*>(rt.malloc(kTotal));
  CUDA_CHECK(cudaMalloc(&a.rep, sizeof(Report)));
  CUDA_CHECK(cudaMemset(a.rep, 0, sizeof(Report)));
  msg::PartitionedRequest s = part.psend_init(w, a.src, kSendParts, kSendBytes, (me + 1) % n, 3);
  msg::PartitionedRequest r = part.precv_init(w, a.dst, kRecvParts, kRecvBytes, (me + n - 1) % n, 3);
  rounds_at<coop::Thread>(rt, part, s, r, a, 32, "thread", 100);
  rounds_at<coop::Warp>(rt, part, s, r, a, 32, "warp", 200);
  rounds_at<coop::Block>(rt, part, s, r, a, 256, "block", 300);
  s.free();
  r.free();
  rt.barrier_all();
  rt.free(a.dst);
  (void)cudaFree(a.rep);
  (void)cudaFree(a.src);
}

void scenario_host(Runtime& rt) {
  const int n = rt.size(), me = rt.rank(), right = (me + 1) % n, left = (me + n - 1) % n;
  msg::Messenger m(rt);
  msg::Partitioned part(m);
  const msg::Comm w = m.world();
  char* src = nullptr;
  char* dev_out = nullptr;  // device memory outside the heap: a staged receive
  CUDA_CHECK(cudaMalloc(&src, kTotal));
  CUDA_CHECK(cudaMalloc(&dev_out, kTotal));
  char* heap_in = static_cast<char*>(rt.malloc(kTotal));
  std::vector<char> host_in(kTotal), back(kTotal);
  std::vector<char> want(kTotal);
  msgtest::fill(want.data(), kTotal, 7);  // the kernels' pattern
  CUDA_CHECK(cudaMemcpy(src, want.data(), kTotal, cudaMemcpyHostToDevice));
  struct Case {
    const char* what;
    char* dst;
    bool on_device;
  };
  for (const Case& k : {Case{"heap", heap_in, true}, Case{"device memory (staged)", dev_out, true},
                        Case{"host memory (staged)", host_in.data(), false}}) {
    msg::PartitionedRequest s = part.psend_init(w, src, kSendParts, kSendBytes, right, 4);
    msg::PartitionedRequest r = part.precv_init(w, k.dst, kRecvParts, kRecvBytes, left, 4);
    PE_CHECK(r.staged() == (k.dst != heap_in), "%s: staged() is %d", k.what, r.staged());
    if (r.staged()) {
      try {
        (void)r.device();
        PE_CHECK(false, "%s: device() accepted a staged receive", k.what);
      } catch (const Error& e) {
        PE_CHECK(e.code() == Errc::invalid_argument, "%s: device(): %s", k.what, e.what());
      }
    }
    r.start();
    s.start();
    std::vector<int> order(kSendParts);
    for (int i = 0; i < kSendParts; ++i) order[static_cast<size_t>(i)] = kSendParts - 1 - i;
    s.pready_list(order);
    for (int j = 0; j < kRecvParts; ++j)
      while (!r.parrived(j)) part.progress();
    s.wait();
    r.wait();
    if (k.on_device) {
      CUDA_CHECK(cudaMemcpy(back.data(), k.dst, kTotal, cudaMemcpyDeviceToHost));
    } else {
      back = host_in;
    }
    PE_CHECK(back == want, "%s: the received bytes differ", k.what);
    s.free();
    r.free();
  }
  rt.barrier_all();
  rt.free(heap_in);
  (void)cudaFree(dev_out);
  (void)cudaFree(src);
}

__global__ void bad_partition_kernel(msg::PartitionedHandle h) {
  msg::pready(coop::Thread{}, h, 99);
}

void scenario_trap(Runtime& rt) {
  msg::Messenger m(rt);
  msg::Partitioned part(m);
  const msg::Comm w = m.world();
  char* buf = static_cast<char*>(rt.malloc(kTotal));
  msg::PartitionedRequest s = part.psend_init(w, buf, kSendParts, kSendBytes, rt.rank(), 5);
  s.start();
  bad_partition_kernel<<<1, 1, 0, reinterpret_cast<cudaStream_t>(rt.stream())>>>(s.device());
  const cudaError_t e = cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(rt.stream()));
  PE_CHECK(e != cudaSuccess, "the kernel did not trap");
  try {
    part.check_device();
    PE_CHECK(false, "check_device raised nothing");
  } catch (const Error& err) {
    const std::string text = err.what();
    PE_CHECK(err.code() == Errc::invalid_argument && text.find("pready of partition 99") != std::string::npos &&
                 text.find("outside 0..15") != std::string::npos && text.find("tag 5") != std::string::npos,
             "check_device: %s", err.what());
  }
  testing::print_pe_ok(rt.rank(), rt.size(), "trap");
  std::_Exit(testing::g_pe_failures == 0 ? 0 : 1);  // the context is gone: no collective teardown
}

// A scenario that needs a GPU PE.
testing::Scenario on_gpu(void (*f)(Runtime&)) {
  return [f](Runtime& rt) {
    if (rt.pe_kind() != PeKind::gpu) throw std::runtime_error("expected a GPU PE (GPUCOMM_DEVICE=gpu)");
    f(rt);
  };
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "device";
  int need_gpus = 1;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--gpus") need_gpus = static_cast<int>(testing::arg_int(argv[i + 1], "--gpus"));
  int have = 0;
  if (cudaGetDeviceCount(&have) != cudaSuccess) have = 0;
  if (have < need_gpus) {
    std::printf("[  SKIPPED ] %s needs %d GPU(s), found %d\n", scenario.c_str(), need_gpus, have);
    return 0;
  }
  return testing::run_scenario(
      scenario,
      {{"device", on_gpu(scenario_device)}, {"host", on_gpu(scenario_host)}, {"trap", on_gpu(scenario_trap)}});
}
