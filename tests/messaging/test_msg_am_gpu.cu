// Active messages and the service block on one GPU: a PE's blocks send requests to the PE itself
// at every cooperation level; handlers (functors of this file) check each payload, count it and
// answer with am_reply; the answers are counted by the senders' own polls. Then the same with a
// service block launched beside the kernel running the handlers.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cuda_assert.hpp"
#include "gpucomm/gpucomm.hpp"
#include "gpucomm/messaging/am_device.cuh"
#include "gpucomm/messaging/messenger.hpp"
#include "msg_gpu_checks.cuh"
#include "test_support.hpp"

namespace {

using namespace gpucomm;
using namespace msg_checks;

constexpr uint32_t kAsk = 3, kReply = 7;
constexpr int kPerSender = 40;
// How long the kernel's blocks watch the counters before they report what is missing (longer than
// the protocol's own GPUCOMM_TIMEOUT below, so a stuck send reports itself first).
constexpr uint64_t kWatchLimitNs = 40ull * 1000 * 1000 * 1000;
// Payload sizes: LL (<= 20 B) and the eager format over several slots.
__constant__ uint32_t c_am_sizes[4] = {4, 20, 100, 256};

struct AmState {
  unsigned long long asked;       // kAsk messages handled
  unsigned long long replied;     // kReply messages handled
  unsigned long long sum;         // of the kAsk payloads' first words
  uint32_t reply_word[64];        // per block: the word a handler replies with (global memory)
  unsigned long long sent_by[8];  // per sender block: requests whose am_request returned
  Report rep;
};

// Checks an ask (its pattern keyed by the first word) and replies with the first word.
struct Handlers {
  msg::CommHandle comm;
  AmState* st;
  template <class C>
  __device__ void operator()(C c, const msg::AmMessage& m) const {
    const auto* p = static_cast<const uint32_t*>(m.payload);
    const uint32_t key = p[0];
    if (m.id == kAsk) {
      const auto* bytes = static_cast<const char*>(m.payload);
      for (uint64_t i = 4 + coop::thread_rank(c); i < m.bytes; i += coop::size(c))
        DCHECK(&st->rep, static_cast<uint8_t>(bytes[i]) == pat(key, i), static_cast<int>(m.id), m.source, i, key);
      coop::sync(c);
      if (coop::thread_rank(c) == 0) {
        atomicAdd(&st->asked, 1ull);
        atomicAdd(&st->sum, static_cast<unsigned long long>(key));
      }
      uint32_t* word = &st->reply_word[blockIdx.x % 64];
      if (coop::thread_rank(c) == 0) *word = key;
      coop::sync(c);
      msg::am_reply(c, comm, m, kReply, word, 4);
    } else {
      DCHECK(&st->rep, m.id == kReply && m.bytes == 4, static_cast<int>(m.id), m.source, m.bytes, 0);
      if (coop::thread_rank(c) == 0) atomicAdd(&st->replied, 1ull);
    }
  }
};

// Blocks 0..senders-1 send kPerSender asks each and poll until their replies came; the other
// blocks poll until every ask was handled.
template <class C>
__global__ void am_kernel(msg::CommHandle comm, AmState* st, char* bufs, int senders, bool service) {
  C c;
  if (!acts(c)) return;
  Handlers h{comm, st};
  const auto b = static_cast<int>(blockIdx.x);
  const unsigned long long total = static_cast<unsigned long long>(senders) * kPerSender;
  if (b < senders) {
    char* buf = bufs + static_cast<size_t>(b) * 1024;
    for (int k = 0; k < kPerSender; ++k) {
      const uint32_t size = c_am_sizes[k % 4];
      const uint32_t key = static_cast<uint32_t>(b * 1000 + k);
      fill(c, buf, size, key);
      if (coop::thread_rank(c) == 0) *reinterpret_cast<uint32_t*>(buf) = key;
      coop::sync(c);
      if (service) {
        msg::am_request(c, comm, 0, kAsk, buf, size);  // the service block runs the handlers
      } else {
        msg::am_request(c, comm, 0, kAsk, buf, size, h);  // polls while it waits for a credit
        (void)msg::am_poll(c, comm, h);
      }
      if (coop::thread_rank(c) == 0) atomicAdd(&st->sent_by[b], 1ull);
    }
  }
  // Everyone polls until all asks and replies were handled (the service block does it when
  // launched: the kernel then only watches the counters).
  const uint64_t start = mem::globaltimer();
  for (;;) {
    const unsigned long long asked = mem::load<mem::kDevice>(&st->asked, mem::acquire);
    const unsigned long long replied = mem::load<mem::kDevice>(&st->replied, mem::acquire);
    if (asked >= total && replied >= total) break;
    if (mem::globaltimer() - start > kWatchLimitNs) {  // a hang becomes a failure naming the counts
      if (coop::thread_rank(c) == 0) report(&st->rep, __LINE__, b, -1, asked, replied);
      break;
    }
    if (!service) (void)msg::am_poll(c, comm, h);
  }
}

struct MsgAmGpu : ::testing::Test {
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no GPU on this machine";
    setenv("GPUCOMM_DEVICE", "gpu", 1);
    setenv("GPUCOMM_TIMEOUT", "20", 0);
  }
};

template <class C>
void run_level(Runtime& rt, msg::Messenger& m, const msg::Comm& w, bool service, int threads) {
  AmState* st = nullptr;
  char* bufs = nullptr;
  uint32_t* stop = nullptr;
  const int senders = 3;
  CUDA_OK(cudaMalloc(&st, sizeof(AmState)));
  CUDA_OK(cudaMemset(st, 0, sizeof(AmState)));
  CUDA_OK(cudaMalloc(&bufs, static_cast<size_t>(senders) * 1024));
  uint32_t* stop_host = nullptr;
  CUDA_OK(cudaHostAlloc(&stop_host, sizeof(uint32_t), cudaHostAllocMapped));
  *stop_host = 0;
  CUDA_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&stop), stop_host, 0));
  cudaStream_t ks = nullptr, ss = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&ss, cudaStreamNonBlocking));
  const msg::CommHandle h = w.device();
  if (service) {
    // The kernel is loaded before the service block runs: its lazy load would wait for the
    // service block, which waits for the kernel (msg::load_kernels).
    CUDA_OK(msg::load_kernels(am_kernel<C>));
    CUDA_OK(msg::launch_am_service(h, Handlers{h, st}, stop, ss));
  }
  am_kernel<C><<<senders + 2, threads, 0, ks>>>(h, st, bufs, senders, service);
  CUDA_OK(cudaGetLastError());
  const cudaError_t e = cudaStreamSynchronize(ks);
  __atomic_store_n(stop_host, 1u, __ATOMIC_RELEASE);
  if (service) (void)cudaStreamSynchronize(ss);
  if (const std::string why = kernel_failure(e, m); !why.empty()) FAIL() << "kernel failed: " << why;
  AmState got{};
  CUDA_OK(cudaMemcpy(&got, st, sizeof got, cudaMemcpyDeviceToHost));
  const unsigned long long total = static_cast<unsigned long long>(senders) * kPerSender;
  unsigned long long want_sum = 0;
  for (int b = 0; b < senders; ++b)
    for (int k = 0; k < kPerSender; ++k) want_sum += static_cast<unsigned long long>(b * 1000 + k);
  EXPECT_EQ(got.rep.failures, 0u) << "first failure at line " << got.rep.line << ": a " << got.rep.a << ", b "
                                  << got.rep.b << ", x " << got.rep.x << ", y " << got.rep.y
                                  << " (requests returned per sender: " << got.sent_by[0] << ", " << got.sent_by[1]
                                  << ", " << got.sent_by[2] << "; active messages handled: " << w.counters().active
                                  << ")";
  EXPECT_EQ(got.asked, total);
  EXPECT_EQ(got.replied, total);
  EXPECT_EQ(got.sum, want_sum);
  (void)cudaStreamDestroy(ks);
  (void)cudaStreamDestroy(ss);
  (void)cudaFreeHost(stop_host);
  (void)cudaFree(bufs);
  (void)cudaFree(st);
  (void)rt;
}

TEST_F(MsgAmGpu, HandlersAndRepliesEveryLevel) {
  Runtime rt;
  msg::Messenger m(rt);
  const uint32_t ids[] = {kAsk, kReply};
  m.register_am(ids);
  msg::Comm w = m.world();
  run_level<coop::Thread>(rt, m, w, false, 32);
  run_level<coop::Warp>(rt, m, w, false, 32);
  run_level<coop::Block>(rt, m, w, false, 128);
  const msg::Counters k = w.counters();
  EXPECT_EQ(k.active, 2u * 3 * 3 * kPerSender);
}

TEST_F(MsgAmGpu, ServiceBlockHandlesThem) {
  Runtime rt;
  msg::Messenger m(rt);
  const uint32_t ids[] = {kAsk, kReply};
  m.register_am(ids);
  msg::Comm w = m.world();
  run_level<coop::Thread>(rt, m, w, true, 32);
  run_level<coop::Warp>(rt, m, w, true, 32);
}

}  // namespace
