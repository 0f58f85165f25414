// Messaging from kernels on one GPU: a single PE whose blocks message each other (rank 0 to rank 0)
// through every device call at every cooperation level, with every byte and status checked on the
// device; failures are counted and the first one is described for the host.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "cuda_assert.hpp"
#include "gpucomm/gpucomm.hpp"
#include "gpucomm/messaging/messaging_device.cuh"
#include "gpucomm/messaging/messenger.hpp"
#include "msg_gpu_checks.cuh"
#include "test_support.hpp"

namespace {

using namespace gpucomm;
using namespace msg_checks;

struct PairArgs {
  msg::CommHandle comm;
  int pairs;  // blocks 0..pairs-1 send to blocks pairs..2*pairs-1 (same PE, tags tell them apart)
  char* src;  // [pairs][kMaxBytes]: the heap (rendezvous by get) or cudaMalloc (staged)
  char* dst;  // [pairs][kMaxBytes]
  int style;  // 0 send/recv, 1 isend/irecv + wait, 2 test loops, 3 waitany/waitall, 4 receives
              // posted before the send starts (no_unexpected communicators need it)
  Report* rep;
  uint64_t* ready;  // [pairs] (style 4): the receiver's posted receives, counted
};

template <class C>
__global__ void pairs_kernel(PairArgs a) {
  C c;
  if (!acts(c)) return;
  const int b = static_cast<int>(blockIdx.x);
  const bool sender = b < a.pairs;
  const int pair = sender ? b : b - a.pairs;
  char* src = a.src + static_cast<size_t>(pair) * kMaxBytes;
  char* dst = a.dst + static_cast<size_t>(pair) * kMaxBytes;
  for (int k = 0; k < kSizes; ++k) {
    const size_t n = c_sizes[k];
    const int tag = pair * 64 + k;
    const uint32_t key = static_cast<uint32_t>(tag) * 7919u + static_cast<uint32_t>(n);
    if (sender) {
      fill(c, src, n, key);
      if (a.style == 4) {  // the receiver posted receive k before this send
        if (coop::thread_rank(c) == 0) {
          while (mem::load<mem::kDevice>(&a.ready[pair], mem::acquire) < static_cast<uint64_t>(k) + 1) {
          }
        }
        coop::sync(c);
      }
      if (a.style == 0) {
        msg::send(c, a.comm, src, n, 0, tag);
      } else {
        msg::Request r = msg::isend(c, a.comm, src, n, 0, tag);
        if (a.style == 2) {
          while (!msg::test(c, a.comm, r)) {
          }
        } else if (a.style == 3) {
          msg::waitall(c, a.comm, &r, 1);
        } else {
          msg::wait(c, a.comm, r);
        }
      }
    } else {
      msg::Status st{};
      if (a.style == 0) {
        st = msg::recv(c, a.comm, dst, kMaxBytes, 0, tag);
      } else if (a.style == 4) {
        msg::Request r = msg::irecv(c, a.comm, dst, kMaxBytes, 0, tag);
        if (coop::thread_rank(c) == 0)
          mem::store<mem::kDevice>(&a.ready[pair], static_cast<uint64_t>(k) + 1, mem::release);
        st = msg::wait(c, a.comm, r);
      } else {
        msg::Request r = msg::irecv(c, a.comm, dst, kMaxBytes, 0, tag);
        if (a.style == 2) {
          while (!msg::test(c, a.comm, r, &st)) {
          }
        } else if (a.style == 3) {
          DCHECK(a.rep, msg::waitany(c, a.comm, &r, 1, &st) == 0, tag, 0, 0, 0);
        } else {
          st = msg::wait(c, a.comm, r);
        }
      }
      DCHECK(a.rep, st.source == 0 && st.tag == tag && st.bytes == n && st.error == 0, tag, st.source, st.bytes,
             st.error);
      check_bytes(c, a.rep, dst, n, key, tag);
    }
  }
}

class MsgGpu : public ::testing::Test {
 public:
  void SetUp() override {
    GPUCOMM_REQUIRE_GPUS(1);
    setenv("GPUCOMM_DEVICE", "gpu", 1);
    setenv("GPUCOMM_HEAP_SIZE", "64M", 1);
    unsetenv("GPUCOMM_UNIQUE_ID");
    unsetenv("GPUCOMM_RANK");
    unsetenv("GPUCOMM_SIZE");
  }
  // Runs a kernel on the runtime's stream and checks for traps and reported failures.
  template <class Launch>
  void run(Runtime& rt, msg::Messenger& m, Report* rep, Launch launch) {
    CUDA_OK(cudaMemset(rep, 0, sizeof(Report)));
    launch(reinterpret_cast<cudaStream_t>(rt.stream()));
    CUDA_OK(cudaGetLastError());
    const cudaError_t e = cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(rt.stream()));
    if (const std::string why = kernel_failure(e, m); !why.empty()) FAIL() << "kernel failed: " << why;
    Report h{};
    CUDA_OK(cudaMemcpy(&h, rep, sizeof h, cudaMemcpyDeviceToHost));
    EXPECT_EQ(h.failures, 0u) << "first failure at line " << h.line << ": a=" << h.a << " b=" << h.b << " x=" << h.x
                              << " y=" << h.y;
  }
};

template <class C>
void pairs_at_level(MsgGpu& t, Runtime& rt, msg::Messenger& m, const msg::Comm& comm, bool heap_src, int style) {
  const int pairs = 4;
  char* src = heap_src ? static_cast<char*>(rt.malloc(pairs * kMaxBytes)) : nullptr;
  char* dst = nullptr;
  Report* rep = nullptr;
  if (!heap_src) ASSERT_EQ(cudaMalloc(&src, pairs * kMaxBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, pairs * kMaxBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&rep, sizeof(Report)), cudaSuccess);
  uint64_t* ready = nullptr;
  ASSERT_EQ(cudaMalloc(&ready, pairs * sizeof(uint64_t)), cudaSuccess);
  ASSERT_EQ(cudaMemset(ready, 0, pairs * sizeof(uint64_t)), cudaSuccess);
  PairArgs a{comm.device(), pairs, src, dst, style, rep, ready};
  t.run(rt, m, rep, [&](cudaStream_t s) { pairs_kernel<C><<<2 * pairs, 128, 0, s>>>(a); });
  (void)cudaFree(ready);
  (void)cudaFree(rep);
  (void)cudaFree(dst);
  if (heap_src) {
    rt.free(src);
  } else {
    (void)cudaFree(src);
  }
}

TEST_F(MsgGpu, EveryProtocolEveryLevel) {
  Runtime rt;
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  for (bool heap : {true, false}) {
    for (int style = 0; style < 4; ++style) {
      SCOPED_TRACE(std::string(heap ? "heap" : "device") + " source, style " + std::to_string(style));
      pairs_at_level<coop::Thread>(*this, rt, m, w, heap, style);
      pairs_at_level<coop::Warp>(*this, rt, m, w, heap, style);
      pairs_at_level<coop::Block>(*this, rt, m, w, heap, style);
    }
  }
  const msg::Counters k = w.counters();
  EXPECT_GT(k.sent, 0u);
  EXPECT_EQ(k.sent, k.received);
  EXPECT_GT(k.rendezvous, 0u);
}

TEST_F(MsgGpu, EveryModeEveryLevel) {
  Runtime rt;
  msg::Messenger m(rt);
  for (msg::Mode mode : {msg::Mode::no_any_source, msg::Mode::no_unexpected, msg::Mode::unordered}) {
    msg::CommOptions o;
    o.mode = mode;
    o.allow_overtaking = mode == msg::Mode::unordered;
    msg::Comm c = m.world(o);
    SCOPED_TRACE(msg::mode_name(mode));
    // no_unexpected asserts that every receive is posted before its message arrives.
    const int style = mode == msg::Mode::no_unexpected ? 4 : 1;
    pairs_at_level<coop::Thread>(*this, rt, m, c, true, style);
    pairs_at_level<coop::Warp>(*this, rt, m, c, true, style);
    pairs_at_level<coop::Block>(*this, rt, m, c, false, style);
  }
}

// Many sender blocks, one receiver taking ANY_SOURCE and ANY_TAG: each sender's messages come in
// send order. Every message's first word carries (sender << 32 | ordinal), so that even the 8-byte
// ones name their sender; the receive buffer is poisoned before each receive.
template <class C>
__global__ void order_kernel(msg::CommHandle comm, int senders, int count, uint64_t* slots, Report* rep) {
  C c;
  if (!acts(c)) return;
  const int b = static_cast<int>(blockIdx.x);
  if (b < senders) {
    for (int k = 0; k < count; ++k) {
      uint64_t* v = slots + (static_cast<size_t>(b) * count + k) * 4;
      if (coop::thread_rank(c) == 0) v[0] = (static_cast<uint64_t>(b) << 32) | static_cast<uint64_t>(k), v[1] = b;
      coop::sync(c);
      msg::send(c, comm, v, 8 + (k % 3) * 8, 0, b);  // 8, 16 or 24 bytes (LL and inline eager)
    }
    return;
  }
  __shared__ int next[64];
  for (int i = coop::thread_rank(c); i < senders; i += coop::size(c)) next[i] = 0;
  coop::sync(c);
  uint64_t* in = slots + static_cast<size_t>(senders) * count * 4;
  constexpr uint64_t kPoison = ~uint64_t{0};
  for (int k = 0; k < senders * count; ++k) {
    if (coop::thread_rank(c) == 0) in[0] = kPoison, in[1] = kPoison;
    coop::sync(c);
    const msg::Status st = msg::recv(c, comm, in, 32, msg::kAnySource, msg::kAnyTag);
    if (coop::thread_rank(c) == 0) {
      const int from = st.tag;
      const uint64_t bytes = 8 + (static_cast<uint64_t>(in[0] & 0xffffffffu) % 3) * 8;
      // On a mismatch: x = the first word (sender << 32 | ordinal), y = the status' bytes.
      DCHECK(rep, from >= 0 && from < senders && (in[0] >> 32) == static_cast<uint64_t>(from) && st.bytes == bytes,
             from, k, in[0], st.bytes);
      DCHECK(rep, st.bytes < 16 || in[1] == static_cast<uint64_t>(from), from, k, in[1], st.bytes);
      if (from >= 0 && from < senders && (in[0] >> 32) == static_cast<uint64_t>(from)) {
        DCHECK(rep, (in[0] & 0xffffffffu) == static_cast<uint64_t>(next[from]), from, k, in[0], next[from]);
        next[from] = static_cast<int>(in[0] & 0xffffffffu) + 1;
      }
    }
    coop::sync(c);
  }
}

// Each level on its own runtime, so that a level never sees the buffers of the one before.
template <class C>
void per_sender_order(MsgGpu& t) {
  Runtime rt;
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  const int senders = 8, count = 200;
  auto* slots = static_cast<uint64_t*>(rt.malloc(sizeof(uint64_t) * 4 * (senders + 1) * count));
  Report* rep = nullptr;
  ASSERT_EQ(cudaMalloc(&rep, sizeof(Report)), cudaSuccess);
  const msg::CommHandle h = w.device();
  t.run(rt, m, rep, [&](cudaStream_t s) { order_kernel<C><<<senders + 1, 64, 0, s>>>(h, senders, count, slots, rep); });
  (void)cudaFree(rep);
}

TEST_F(MsgGpu, PerSenderOrderWithWildcardsThread) {
  per_sender_order<coop::Thread>(*this);
}
TEST_F(MsgGpu, PerSenderOrderWithWildcardsWarp) {
  per_sender_order<coop::Warp>(*this);
}
TEST_F(MsgGpu, PerSenderOrderWithWildcardsBlock) {
  per_sender_order<coop::Block>(*this);
}

// Probes, matched probes, cancel, PROC_NULL and events, at one level.
template <class C>
__global__ void misc_kernel(msg::CommHandle comm, char* buf, uint64_t* counter, Report* rep) {
  C c;
  if (!acts(c)) return;
  if (blockIdx.x == 0) {
    msg::Event ev{counter};
    msg::Request r[3];
    r[0] = msg::isend(c, comm, buf, 8, 0, 5, ev);
    r[1] = msg::isend(c, comm, buf + 64, 100, 0, 6, ev);
    r[2] = msg::isend(c, comm, buf, 8, msg::kProcNull, 7, ev);
    msg::event_wait(c, comm, ev, 3);
    msg::waitall(c, comm, r, 3);
    return;
  }
  msg::Status st = msg::probe(c, comm, 0, 6);
  DCHECK(rep, st.source == 0 && st.tag == 6 && st.bytes == 100, 1, st.tag, st.bytes, 0);
  msg::Message mm = msg::mprobe(c, comm, msg::kAnySource, 5, &st);
  DCHECK(rep, st.tag == 5 && st.bytes == 8, 2, st.tag, st.bytes, 0);
  DCHECK(rep, !msg::iprobe(c, comm, 0, 5), 3, 0, 0, 0);  // taken by mprobe
  st = msg::mrecv(c, comm, buf + 256, 8, mm);
  DCHECK(rep, st.tag == 5 && st.bytes == 8 && st.error == 0, 4, st.tag, st.bytes, st.error);
  st = msg::recv(c, comm, buf + 512, 100, 0, 6);
  DCHECK(rep, st.tag == 6 && st.bytes == 100, 5, st.tag, st.bytes, 0);
  msg::Request never = msg::irecv(c, comm, buf + 1024, 8, 0, 99);
  msg::cancel(c, comm, never);
  st = msg::wait(c, comm, never);
  DCHECK(rep, st.error == msg::kErrCancelled, 6, st.error, 0, 0);
  st = msg::recv(c, comm, buf + 1024, 8, msg::kProcNull, 1);
  DCHECK(rep, st.source == msg::kProcNull && st.bytes == 0, 7, st.source, st.bytes, 0);
}

TEST_F(MsgGpu, ProbesCancelProcNullEvents) {
  Runtime rt;
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  char* buf = static_cast<char*>(rt.calloc(4096, 1));
  Report* rep = nullptr;
  ASSERT_EQ(cudaMalloc(&rep, sizeof(Report)), cudaSuccess);
  const msg::CommHandle h = w.device();
  for (int level = 0; level < 3; ++level) {
    msg::Event ev = m.make_event();
    run(rt, m, rep, [&](cudaStream_t s) {
      if (level == 0) misc_kernel<coop::Thread><<<2, 64, 0, s>>>(h, buf, ev.counter, rep);
      if (level == 1) misc_kernel<coop::Warp><<<2, 64, 0, s>>>(h, buf, ev.counter, rep);
      if (level == 2) misc_kernel<coop::Block><<<2, 64, 0, s>>>(h, buf, ev.counter, rep);
    });
    EXPECT_EQ(m.event_value(ev), 3u);
  }
  (void)cudaFree(rep);
}

__global__ void fill_kernel(char* b, size_t n, uint32_t key) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    b[i] = static_cast<char>(pat(key, i));
}
__global__ void check_kernel(const char* b, size_t n, uint32_t key, const msg::Status* st, Report* rep) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    DCHECK(rep, static_cast<uint8_t>(b[i]) == pat(key, i), 0, 0, i, pat(key, i));
  if (blockIdx.x == 0 && threadIdx.x == 0) DCHECK(rep, st->bytes == n && st->error == 0, 1, st->error, st->bytes, n);
}

// The stream-ordered calls inside a CUDA graph: a group (send and receive of a rendezvous-sized
// message to itself in one kernel) and, for an eager size, the two calls on their own.
TEST_F(MsgGpu, GraphCaptureOfStreamOrderedCalls) {
  Runtime rt;
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t big = 300000, small = 100;
  char *src = nullptr, *dst = nullptr;
  msg::Status* st = nullptr;
  Report* rep = nullptr;
  CUDA_OK(cudaMalloc(&src, big));
  CUDA_OK(cudaMalloc(&dst, big));
  CUDA_OK(cudaMalloc(&st, 2 * sizeof(msg::Status)));
  CUDA_OK(cudaMalloc(&rep, sizeof(Report)));
  CUDA_OK(cudaMemset(rep, 0, sizeof(Report)));
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CUDA_OK(cudaMemsetAsync(dst, 0, big, s));
  fill_kernel<<<16, 256, 0, s>>>(src, big, 77);
  m.group_start();
  w.send_on_stream(src, big, 0, 1, reinterpret_cast<Stream>(s));
  w.recv_on_stream(dst, big, 0, 1, reinterpret_cast<Stream>(s), st);
  m.group_end(reinterpret_cast<Stream>(s));
  check_kernel<<<16, 256, 0, s>>>(dst, big, 77, st, rep);
  w.send_on_stream(src, small, 0, 2, reinterpret_cast<Stream>(s));  // eager: the send kernel ends at once
  w.recv_on_stream(dst, small, 0, 2, reinterpret_cast<Stream>(s), st + 1);
  check_kernel<<<1, 128, 0, s>>>(dst, small, 77, st + 1, rep);
  CUDA_OK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  for (int i = 0; i < 5; ++i) CUDA_OK(cudaGraphLaunch(exec, s));
  const cudaError_t e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    try {
      m.check_device();
    } catch (const Error& err) {
      FAIL() << err.what();
    }
    FAIL() << cudaGetErrorString(e);
  }
  Report h{};
  CUDA_OK(cudaMemcpy(&h, rep, sizeof h, cudaMemcpyDeviceToHost));
  EXPECT_EQ(h.failures, 0u) << "line " << h.line << " a=" << h.a << " b=" << h.b << " x=" << h.x << " y=" << h.y;
  EXPECT_EQ(w.counters().received, 10u);
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(g);
  (void)cudaFree(rep);
  (void)cudaFree(st);
  (void)cudaFree(dst);
  (void)cudaFree(src);
  (void)cudaStreamDestroy(s);
}

// The tests below trap on purpose (the CUDA context is unusable after it); CTest runs each test
// in its own process.
__global__ void bad_tag_kernel(msg::CommHandle comm, char* buf) {
  msg::recv(coop::Thread{}, comm, buf, 8, 0, -5);
}

TEST_F(MsgGpu, BadArgumentTrapsNamingIt) {
  Runtime rt;
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  char* buf = static_cast<char*>(rt.malloc(64));
  bad_tag_kernel<<<1, 1, 0, reinterpret_cast<cudaStream_t>(rt.stream())>>>(w.device(), buf);
  CUDA_OK(cudaGetLastError());
  EXPECT_NE(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(rt.stream())), cudaSuccess);
  try {
    m.check_device();
    FAIL() << "check_device raised nothing";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Errc::invalid_argument) << err.what();
    EXPECT_NE(std::string(err.what()).find("tag -5 is outside"), std::string::npos) << err.what();
  }
}

__global__ void lonely_recv_kernel(msg::CommHandle comm, char* buf) {
  msg::recv(coop::Warp{}, comm, buf, 64, 0, 42);
}

TEST_F(MsgGpu, TimeoutNamesRequestQueuesAndPeer) {
  setenv("GPUCOMM_TIMEOUT", "1", 1);
  Runtime rt;
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  char* buf = static_cast<char*>(rt.malloc(64));
  lonely_recv_kernel<<<1, 32, 0, reinterpret_cast<cudaStream_t>(rt.stream())>>>(w.device(), buf);
  CUDA_OK(cudaGetLastError());
  EXPECT_NE(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(rt.stream())), cudaSuccess);
  try {
    m.check_device();
    FAIL() << "check_device raised nothing";
  } catch (const Error& err) {
    const std::string t = err.what();
    EXPECT_EQ(err.code(), Errc::timeout) << t;
    EXPECT_NE(t.find("receive from rank 0"), std::string::npos) << t;
    EXPECT_NE(t.find("tag 42"), std::string::npos) << t;
    EXPECT_NE(t.find("UMQ 0/"), std::string::npos) << t;
    EXPECT_NE(t.find("PRQ 1/"), std::string::npos) << t;
    EXPECT_NE(t.find("GPUCOMM_TIMEOUT"), std::string::npos) << t;
  }
  unsetenv("GPUCOMM_TIMEOUT");
}

__global__ void wildcard_kernel(msg::CommHandle comm, char* buf) {
  msg::recv(coop::Block{}, comm, buf, 8, msg::kAnySource, 1);
}

TEST_F(MsgGpu, WildcardOnNoAnySourceTraps) {
  Runtime rt;
  msg::Messenger m(rt);
  msg::CommOptions o;
  o.mode = msg::Mode::no_any_source;
  msg::Comm w = m.world(o);
  char* buf = static_cast<char*>(rt.malloc(64));
  wildcard_kernel<<<1, 64, 0, reinterpret_cast<cudaStream_t>(rt.stream())>>>(w.device(), buf);
  CUDA_OK(cudaGetLastError());
  EXPECT_NE(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(rt.stream())), cudaSuccess);
  try {
    m.check_device();
    FAIL() << "check_device raised nothing";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Errc::invalid_argument) << err.what();
    EXPECT_NE(std::string(err.what()).find("ANY_SOURCE on a communicator whose mode"), std::string::npos) << err.what();
  }
}

}  // namespace
