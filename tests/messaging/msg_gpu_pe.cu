// A GPU PE of the messaging layer's multi-process GPU tests (label gpu):
//   gpucomm_test_msg_gpu_pe SCENARIO [--gpus K] [--shared]
// device: blocks of every PE send every protocol size to the next PE at every cooperation level,
//         from heap and device buffers, and receive from the previous one;
// host:   the host API on GPU PEs: blocking calls (device and staged host buffers), non-blocking
//         calls, probes and matched probes, cancel, groups and the stream-ordered calls.
// --gpus K: print "[  SKIPPED ]" and exit 0 where fewer than K GPUs exist; --shared: every PE
// drives GPU 0 (PEs time-share one GPU). Prints "PE OK" on success.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpucomm/gpucomm.hpp"
#include "gpucomm/messaging/messaging_device.cuh"
#include "gpucomm/messaging/messenger.hpp"
#include "msg_gpu_checks.cuh"
#include "pe_check.hpp"

using namespace gpucomm;
using namespace msg_checks;

namespace {

#define CUDA_CHECK(x)                                                                                 \
  do {                                                                                                \
    cudaError_t e_ = (x);                                                                             \
    if (e_ != cudaSuccess) throw std::runtime_error(std::string(#x) + ": " + cudaGetErrorString(e_)); \
  } while (0)

struct RingArgs {
  msg::CommHandle comm;
  int pairs;  // blocks 0..pairs-1 send to the next PE, blocks pairs.. receive from the previous one
  char* src;  // [pairs][kMaxBytes]
  char* dst;
  Report* rep;
};

template <class C>
__global__ void ring_kernel(RingArgs a) {
  C c;
  if (!acts(c)) return;
  const int n = a.comm.size, me = a.comm.rank;
  const int b = static_cast<int>(blockIdx.x);
  const bool sender = b < a.pairs;
  const int pair = sender ? b : b - a.pairs;
  const int peer = sender ? (me + 1) % n : (me + n - 1) % n;
  char* src = a.src + static_cast<size_t>(pair) * kMaxBytes;
  char* dst = a.dst + static_cast<size_t>(pair) * kMaxBytes;
  for (int k = 0; k < kSizes; ++k) {
    const size_t bytes = c_sizes[k];
    const int tag = pair * 64 + k;
    const int from = sender ? me : peer;
    const uint32_t key = static_cast<uint32_t>(tag * 7919 + from * 104729) + static_cast<uint32_t>(bytes);
    if (sender) {
      fill(c, src, bytes, key);
      msg::send(c, a.comm, src, bytes, peer, tag);
    } else {
      const msg::Status st = msg::recv(c, a.comm, dst, kMaxBytes, peer, tag);
      DCHECK(a.rep, st.source == peer && st.tag == tag && st.bytes == bytes && st.error == 0, tag, st.source, st.bytes,
             st.error);
      check_bytes(c, a.rep, dst, bytes, key, tag);
    }
  }
}

int check_report(Report* rep, const char* what) {
  Report h{};
  CUDA_CHECK(cudaMemcpy(&h, rep, sizeof h, cudaMemcpyDeviceToHost));
  PE_CHECK(h.failures == 0, "%s: %llu failures, first at line %d (a=%d b=%d x=%llu y=%llu)", what, h.failures, h.line,
           h.a, h.b, h.x, h.y);
  CUDA_CHECK(cudaMemset(rep, 0, sizeof(Report)));
  return static_cast<int>(h.failures);
}

template <class C>
void ring_at_level(Runtime& rt, msg::Messenger& m, const msg::Comm& w, char* src, char* dst, Report* rep,
                   const char* what) {
  const int pairs = 2;
  RingArgs a{w.device(), pairs, src, dst, rep};
  auto s = reinterpret_cast<cudaStream_t>(rt.stream());
  ring_kernel<C><<<2 * pairs, 128, 0, s>>>(a);
  CUDA_CHECK(cudaGetLastError());
  if (cudaStreamSynchronize(s) != cudaSuccess) m.check_device();
  check_report(rep, what);
  rt.barrier_all();
}

void scenario_device(Runtime& rt) {
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  Report* rep = nullptr;
  CUDA_CHECK(cudaMalloc(&rep, sizeof(Report)));
  CUDA_CHECK(cudaMemset(rep, 0, sizeof(Report)));
  char* heap_src = static_cast<char*>(rt.malloc(2 * kMaxBytes));
  char *dev_src = nullptr, *dst = nullptr;
  CUDA_CHECK(cudaMalloc(&dev_src, 2 * kMaxBytes));
  CUDA_CHECK(cudaMalloc(&dst, 2 * kMaxBytes));
  for (char* src : {heap_src, dev_src}) {
    ring_at_level<coop::Thread>(rt, m, w, src, dst, rep, "thread");
    ring_at_level<coop::Warp>(rt, m, w, src, dst, rep, "warp");
    ring_at_level<coop::Block>(rt, m, w, src, dst, rep, "block");
  }
  (void)cudaFree(dst);
  (void)cudaFree(dev_src);
  (void)cudaFree(rep);
  rt.free(heap_src);
}

__global__ void fill_plain(char* b, size_t n, uint32_t key) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    b[i] = static_cast<char>(pat(key, i));
}

bool bytes_ok(const std::vector<char>& v, size_t n, uint32_t key) {
  for (size_t i = 0; i < n; ++i) {
    uint64_t x = (key + i) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    if (static_cast<uint8_t>(v[i]) != static_cast<uint8_t>(x ^ (x >> 17) ^ i)) return false;
  }
  return true;
}

void scenario_host(Runtime& rt) {
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  const int me = rt.rank(), n = rt.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const size_t big = 300000;
  char *dsrc = nullptr, *ddst = nullptr;
  msg::Status* dst_status = nullptr;
  CUDA_CHECK(cudaMalloc(&dsrc, big));
  CUDA_CHECK(cudaMalloc(&ddst, big));
  CUDA_CHECK(cudaMalloc(&dst_status, sizeof(msg::Status) * 2));
  std::vector<char> host(big);
  // Blocking calls: a device source, a host-memory destination (staged), and the other way round.
  for (size_t bytes : {size_t(8), size_t(1000), big}) {
    const uint32_t key = static_cast<uint32_t>(bytes + me);
    const uint32_t lkey = static_cast<uint32_t>(bytes + left);
    fill_plain<<<16, 256>>>(dsrc, bytes, key);
    CUDA_CHECK(cudaDeviceSynchronize());
    msg::Request r = w.irecv(ddst, bytes, left, 1);
    w.send(dsrc, bytes, right, 1);
    const msg::Status st = m.wait(r);
    PE_CHECK(st.source == left && st.bytes == bytes, "host API %zu bytes: status source %d bytes %llu", bytes,
             st.source, static_cast<unsigned long long>(st.bytes));
    CUDA_CHECK(cudaMemcpy(host.data(), ddst, bytes, cudaMemcpyDeviceToHost));
    PE_CHECK(bytes_ok(host, bytes, lkey), "host API %zu bytes (device buffers): bytes", bytes);
    // Host memory both ways: staged by the blocking calls (a PE alone cannot rendezvous with
    // itself in blocking calls: eager sizes only there).
    if (n == 1 && bytes > 2048) {
      rt.barrier_all();
      continue;
    }
    std::vector<char> out(host.begin(), host.begin() + static_cast<long>(bytes)), in(bytes, 0);
    if (me % 2 == 0) {
      w.send(out.data(), bytes, right, 2);
      w.recv(in.data(), bytes, left, 2);
    } else {
      w.recv(in.data(), bytes, left, 2);
      w.send(out.data(), bytes, right, 2);
    }
    const uint32_t llkey = static_cast<uint32_t>(bytes + (left + n - 1) % n);
    PE_CHECK(bytes_ok(in, bytes, n == 1 ? lkey : llkey), "host API %zu bytes (host buffers): bytes", bytes);
    rt.barrier_all();
  }
  // Probes, matched probes, cancel.
  msg::Request s = w.isend(dsrc, 64, right, 3);
  const msg::Status p = w.probe(left, 3);
  PE_CHECK(p.source == left && p.bytes == 64, "probe: source %d bytes %llu", p.source,
           static_cast<unsigned long long>(p.bytes));
  msg::Message mm = w.mprobe(left, 3);
  const msg::Status mr = w.mrecv(ddst, 64, mm);
  PE_CHECK(mr.bytes == 64 && mr.tag == 3, "mrecv: bytes %llu", static_cast<unsigned long long>(mr.bytes));
  m.wait(s);
  msg::Request never = w.irecv(ddst, 8, left, 99);
  m.cancel(never);
  PE_CHECK(m.wait(never).error == msg::kErrCancelled, "cancel");
  rt.barrier_all();
  // A group: every PE sends a rendezvous-sized message before it receives; one kernel.
  auto st = reinterpret_cast<Stream>(rt.stream());
  fill_plain<<<16, 256, 0, reinterpret_cast<cudaStream_t>(st)>>>(dsrc, big, 5u + static_cast<uint32_t>(me));
  m.group_start();
  w.send_on_stream(dsrc, big, right, 4, st);
  w.recv_on_stream(ddst, big, left, 4, st, dst_status);
  m.group_end(st);
  CUDA_CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(st)));
  msg::Status gs{};
  CUDA_CHECK(cudaMemcpy(&gs, dst_status, sizeof gs, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(host.data(), ddst, big, cudaMemcpyDeviceToHost));
  PE_CHECK(gs.bytes == big && gs.source == left, "group: status bytes %llu source %d",
           static_cast<unsigned long long>(gs.bytes), gs.source);
  PE_CHECK(bytes_ok(host, big, 5u + static_cast<uint32_t>(left)), "group: bytes");
  const msg::Counters k = w.counters();
  PE_CHECK(k.sent > 0 && k.received > 0 && k.rendezvous > 0, "counters: sent %llu received %llu rendezvous %llu",
           static_cast<unsigned long long>(k.sent), static_cast<unsigned long long>(k.received),
           static_cast<unsigned long long>(k.rendezvous));
  rt.barrier_all();
  (void)cudaFree(dst_status);
  (void)cudaFree(ddst);
  (void)cudaFree(dsrc);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "device";
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
  try {
    Runtime rt;
    if (rt.pe_kind() != PeKind::gpu) throw std::runtime_error("expected a GPU PE (GPUCOMM_DEVICE=gpu)");
    if (scenario == "device") {
      scenario_device(rt);
    } else if (scenario == "host") {
      scenario_host(rt);
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
