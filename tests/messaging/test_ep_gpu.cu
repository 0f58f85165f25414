// Endpoints from kernels on one GPU (docs/MESSAGING.md, "Endpoints"): one PE whose blocks own
// endpoints and message each other at every cooperation level. Random programs (fresh seed each
// run, printed on failure) are checked on the host against MPI's rules: each message once and
// whole, its status, and non-overtaking.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cuda_assert.hpp"
#include "gpucomm/gpucomm.hpp"
#include "gpucomm/messaging/endpoints.hpp"
#include "gpucomm/messaging/endpoints_device.cuh"
#include "test_support.hpp"

namespace {

using namespace gpucomm;
namespace ep = gpucomm::msg::ep;

constexpr int kMaxBytes = 64;

__host__ __device__ inline uint8_t pattern(uint32_t idx, uint32_t i) {
  uint32_t x = (idx * 2654435761u) ^ (i * 40503u);
  x ^= x >> 13;
  return static_cast<uint8_t>(x ^ i);
}

class EpGpu : public ::testing::Test {
 public:
  void SetUp() override {
    GPUCOMM_REQUIRE_GPUS(1);
    setenv("GPUCOMM_DEVICE", "gpu", 1);
    setenv("GPUCOMM_HEAP_SIZE", "64M", 1);
    unsetenv("GPUCOMM_UNIQUE_ID");
    unsetenv("GPUCOMM_RANK");
    unsetenv("GPUCOMM_SIZE");
  }
  static cudaStream_t stream(Runtime& rt) { return reinterpret_cast<cudaStream_t>(rt.stream()); }
  // Synchronizes; a failed kernel fails the test with the endpoints' record.
  static void finish(Runtime& rt, msg::Endpoints& eps) {
    CUDA_OK(cudaGetLastError());
    const cudaError_t e = cudaStreamSynchronize(stream(rt));
    if (e != cudaSuccess) {
      try {
        eps.check_device();
      } catch (const Error& err) {
        FAIL() << "kernel failed: " << err.what();
      }
      FAIL() << "kernel failed: " << cudaGetErrorString(e);
    }
  }
};

// ---- ping-pong of every size at each level ----

struct Counts {
  unsigned long long bad;
  unsigned long long first;
};

template <class C>
__global__ void pingpong_kernel(ep::EndpointsHandle h, unsigned char* bufs, int rounds, Counts* out) {
  C c;
  if (std::is_same_v<C, coop::Thread> && threadIdx.x != 0) return;
  if (std::is_same_v<C, coop::Warp> && threadIdx.x >= 32) return;
  __shared__ ep::OwnerState<8, 8, 8, 4> st;
  const int me = static_cast<int>(blockIdx.x), other = 1 - me;
  unsigned char* out_buf = bufs + static_cast<size_t>(me) * 2 * kMaxBytes;
  unsigned char* in_buf = out_buf + kMaxBytes;
  ep::open(c, h, me, st);
  for (int r = 0; r < rounds; ++r) {
    const uint32_t bytes = static_cast<uint32_t>(r % (kMaxBytes + 1));
    const uint32_t idx = static_cast<uint32_t>(r * 2 + me);
    if ((me == 0) == (r % 2 == 0)) {  // this side sends first this round
      for (uint32_t i = coop::thread_rank(c); i < bytes; i += coop::size(c)) out_buf[i] = pattern(idx, i);
      ep::send(c, h, out_buf, bytes, 0, other, 7);
      const ep::Status s = ep::recv(c, h, st, in_buf, kMaxBytes, 0, 8);
      if (coop::thread_rank(c) == 0 && (s.bytes != bytes || s.tag != 8 || s.error != 0)) atomicAdd(&out->bad, 1ull);
    } else {
      const ep::Status s = ep::recv(c, h, st, in_buf, kMaxBytes, ep::kAnySource, 7);
      bool ok = s.bytes == bytes && s.source == 0 && s.tag == 7 && s.error == 0;
      const uint32_t sent = static_cast<uint32_t>(r * 2 + other);
      for (uint32_t i = 0; i < bytes && ok; ++i) ok = in_buf[i] == pattern(sent, i);
      if (coop::thread_rank(c) == 0 && !ok) {
        if (atomicAdd(&out->bad, 1ull) == 0) out->first = static_cast<unsigned long long>(r);
      }
      ep::send(c, h, out_buf, bytes, 0, other, 8);
    }
  }
  ep::close(c, h, st);
}

template <class C>
void pingpong_at(Runtime& rt, msg::Endpoints& eps, int threads) {
  unsigned char* bufs = nullptr;
  Counts* cnt = nullptr;
  CUDA_OK(cudaMalloc(&bufs, size_t{4} * kMaxBytes));
  CUDA_OK(cudaMalloc(&cnt, sizeof(Counts)));
  CUDA_OK(cudaMemset(cnt, 0, sizeof(Counts)));
  pingpong_kernel<C><<<2, threads, 0, EpGpu::stream(rt)>>>(eps.device(), bufs, 300, cnt);
  EpGpu::finish(rt, eps);
  Counts h{};
  CUDA_OK(cudaMemcpy(&h, cnt, sizeof h, cudaMemcpyDeviceToHost));
  EXPECT_EQ(h.bad, 0u) << "first bad round " << h.first << " with " << threads << " threads";
  (void)cudaFree(cnt);
  (void)cudaFree(bufs);
}

TEST_F(EpGpu, PingPongEverySizeEveryLevel) {
  Runtime rt;
  msg::Endpoints eps(rt, msg::EndpointsOptions{2, 4, kMaxBytes});
  pingpong_at<coop::Thread>(rt, eps, 32);
  pingpong_at<coop::Warp>(rt, eps, 32);
  pingpong_at<coop::Block>(rt, eps, 128);
}

// ---- random programs ----

struct Send {
  int ep, tag;
  uint32_t bytes, idx;
};
struct Post {
  int src, tag;
};
struct Got {
  ep::Status status;
  uint32_t idx;
  uint32_t bad_byte;  // 0xffffffff: every byte right
};

struct ProgArgs {
  ep::EndpointsHandle h;
  const Send* sends;      // per sender block, program order: [blocks][max_sends]
  const int* nsends;      // [blocks]
  const Post* posts;      // per endpoint, post order: [blocks][max_recvs]
  const int* nposts;      // [blocks]
  const int* wait_order;  // [blocks][max_recvs]: positions in post order
  const int* ahead;       // [blocks]: post everything before waiting
  const int* send_level;  // [blocks]: 0 thread (lane 0), 1 warp
  const int* batched;     // [blocks]: receives posted 32 at a time (irecv_lanes), completed by waitall
  int max_sends, max_recvs;
  unsigned char* rbuf;  // [blocks][max_recvs][kMaxBytes]
  Got* got;             // [blocks][max_recvs]
};

using ProgState = ep::OwnerState<64, 8, 64, 8>;

// Block b: warp 0 owns endpoint b and receives; warp 1 sends block b's messages.
__global__ void program_kernel(ProgArgs a) {
  __shared__ ProgState st;
  __shared__ uint16_t ids[64];
  const int b = static_cast<int>(blockIdx.x);
  const coop::Warp w;
  if (coop::warp_id() == 1) {
    __shared__ unsigned char out[kMaxBytes];
    for (int k = 0; k < a.nsends[b]; ++k) {
      const Send& s = a.sends[b * a.max_sends + k];
      for (uint32_t i = coop::lane_id(); i < s.bytes; i += 32) out[i] = i < 4 ? 0 : pattern(s.idx, i);
      if (coop::lane_id() == 0) std::memcpy(out, &s.idx, 4);
      __syncwarp();
      if (a.send_level[b] == 0) {
        if (coop::lane_id() == 0) ep::send(coop::Thread{}, a.h, out, s.bytes, 0, s.ep, s.tag);
        __syncwarp();
      } else {
        ep::send(w, a.h, out, s.bytes, 0, s.ep, s.tag);
      }
    }
    return;
  }
  if (coop::warp_id() != 0) return;
  ep::open(w, a.h, b, st);
  const int n = a.nposts[b];
  auto post = [&](int k) {
    const Post& p = a.posts[b * a.max_recvs + k];
    const uint16_t id =
        ep::irecv(w, a.h, st, a.rbuf + (static_cast<size_t>(b) * a.max_recvs + k) * kMaxBytes, kMaxBytes, p.src, p.tag);
    if (coop::lane_id() == 0) ids[k] = id;
    __syncwarp();
  };
  auto record = [&](int k, const ep::Status& s) {
    if (coop::lane_id() == 0) {
      Got& g = a.got[b * a.max_recvs + k];
      const unsigned char* r = a.rbuf + (static_cast<size_t>(b) * a.max_recvs + k) * kMaxBytes;
      g.status = s;
      std::memcpy(&g.idx, r, 4);
      g.bad_byte = 0xffffffffu;
      for (uint32_t i = 4; i < s.bytes; ++i) {
        if (r[i] != pattern(g.idx, i)) {
          g.bad_byte = i;
          break;
        }
      }
    }
  };
  auto complete = [&](int k) {
    ep::Status s{};
    if (k % 3 == 0) {
      while (!ep::test(w, a.h, st, ids[k], &s)) {
      }
    } else {
      s = ep::wait(w, a.h, st, ids[k]);
    }
    record(k, s);
  };
  if (a.batched[b]) {
    // 32 posts per call, lane i posting receive k0 + i; then one waitall over the wait order.
    __shared__ uint16_t in_order[64];
    __shared__ ep::Status statuses[64];
    for (int k0 = 0; k0 < n; k0 += 32) {
      const int k = k0 + static_cast<int>(coop::lane_id());
      const Post p = a.posts[b * a.max_recvs + (k < n ? k : 0)];
      const uint16_t id = ep::irecv_lanes(w, a.h, st, static_cast<uint32_t>(n - k0 < 32 ? n - k0 : 32),
                                          a.rbuf + (static_cast<size_t>(b) * a.max_recvs + (k < n ? k : 0)) * kMaxBytes,
                                          kMaxBytes, p.src, p.tag);
      if (k < n) ids[k] = id;
    }
    __syncwarp();
    for (int j = static_cast<int>(coop::lane_id()); j < n; j += 32)
      in_order[j] = ids[a.wait_order[b * a.max_recvs + j]];
    __syncwarp();
    ep::waitall(w, a.h, st, in_order, static_cast<uint32_t>(n), statuses);
    for (int j = 0; j < n; ++j) record(a.wait_order[b * a.max_recvs + j], statuses[j]);
  } else if (a.ahead[b]) {
    for (int k = 0; k < n; ++k) {
      if (k % 5 == 0) ep::iprobe(w, a.h, st, ep::kAnySource, ep::kAnyTag, nullptr);
      post(k);
    }
    for (int j = 0; j < n; ++j) complete(a.wait_order[b * a.max_recvs + j]);
  } else {
    for (int k = 0; k < n; ++k) {
      post(k);
      complete(k);
    }
  }
  ep::close(w, a.h, st);
}

template <class T>
T* to_device(const std::vector<T>& v) {
  T* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(1, v.size()) * sizeof(T)), cudaSuccess);
  if (!v.empty()) EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return p;
}

TEST_F(EpGpu, RandomProgramsFollowMpiRules) {
  const uint64_t seed = gpucomm::testing::test_seed();
  SCOPED_TRACE(gpucomm::testing::seed_note(seed));
  Runtime rt;
  constexpr int kBlocks = 8, kMaxSends = 48, kMaxRecvs = 64;
  msg::Endpoints eps(rt, msg::EndpointsOptions{kBlocks, 8, kMaxBytes});
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // Messages: sender block, endpoint, tag (sender block * 16 + a small tag), size.
    struct Msg {
      int from, ep, tag;
      uint32_t bytes;
    };
    std::vector<Msg> msgs;
    std::vector<int> sent(kBlocks, 0), recvd(kBlocks, 0);
    const int total = 100 + static_cast<int>(rng() % 200);
    const int small_tags = 1 + static_cast<int>(rng() % 3);
    // Every other round only messages of 4 to 8 bytes (the first four carry the index): a warp
    // drains them in batches of 32 matched by the lanes at once.
    const bool small = round % 2 == 1;
    for (int i = 0; i < total; ++i) {
      Msg m{static_cast<int>(rng() % kBlocks), static_cast<int>(rng() % kBlocks), 0,
            small ? 4 + static_cast<uint32_t>(rng() % 5) : 8 + static_cast<uint32_t>(rng() % (kMaxBytes - 7))};
      if (sent[m.from] >= kMaxSends || recvd[m.ep] >= kMaxRecvs) continue;
      m.tag = m.from * 16 + static_cast<int>(rng() % small_tags);
      ++sent[m.from];
      ++recvd[m.ep];
      msgs.push_back(m);
    }
    std::vector<Send> sends(static_cast<size_t>(kBlocks) * kMaxSends);
    std::vector<int> nsends(kBlocks, 0), nposts(kBlocks, 0), ahead(kBlocks), level(kBlocks), style(kBlocks),
        batched(kBlocks, 0);
    std::vector<Post> posts(static_cast<size_t>(kBlocks) * kMaxRecvs);
    std::vector<int> order(static_cast<size_t>(kBlocks) * kMaxRecvs);
    std::vector<std::vector<int>> to_ep(kBlocks);
    for (uint32_t i = 0; i < msgs.size(); ++i) {
      const Msg& m = msgs[i];
      sends[m.from * kMaxSends + nsends[m.from]++] = Send{m.ep, m.tag, m.bytes, i};
      to_ep[m.ep].push_back(static_cast<int>(i));
    }
    for (int b = 0; b < kBlocks; ++b) {
      // exact, (src, ANY), (ANY, tag), (ANY, ANY), or exact and (ANY, tag) mixed (both take the
      // messages of one tag: every message comes from PE 0)
      style[b] = static_cast<int>(rng() % 5);
      level[b] = static_cast<int>(rng() % 2);
      std::vector<int> mine = to_ep[b];
      // Receives waited for one by one, in program order, only when one block sends to this
      // endpoint: the blocks of a PE share its ring to the endpoint, and a receive waiting for one
      // block's message while another's fill the ring relies on buffering (unsafe in MPI's terms).
      bool one_sender = true;
      for (int i : mine) one_sender = one_sender && msgs[i].from == msgs[mine[0]].from;
      ahead[b] = !(style[b] == 0 && one_sender && rng() % 2 == 0);
      batched[b] = ahead[b] && rng() % 2 == 0;
      if (ahead[b]) std::shuffle(mine.begin(), mine.end(), rng);
      nposts[b] = static_cast<int>(mine.size());
      for (size_t k = 0; k < mine.size(); ++k) {
        const Msg& m = msgs[mine[k]];
        Post p{0, m.tag};
        if (style[b] == 1 || style[b] == 3) p.tag = ep::kAnyTag;
        if (style[b] == 2 || style[b] == 3 || (style[b] == 4 && rng() % 2 == 0)) p.src = ep::kAnySource;
        posts[b * kMaxRecvs + static_cast<int>(k)] = p;
        order[b * kMaxRecvs + static_cast<int>(k)] = static_cast<int>(k);
      }
      const auto first = order.begin() + static_cast<ptrdiff_t>(b) * kMaxRecvs;
      std::shuffle(first, first + nposts[b], rng);
    }
    ProgArgs a{};
    a.h = eps.device();
    a.sends = to_device(sends);
    a.nsends = to_device(nsends);
    a.posts = to_device(posts);
    a.nposts = to_device(nposts);
    a.wait_order = to_device(order);
    a.ahead = to_device(ahead);
    a.send_level = to_device(level);
    a.batched = to_device(batched);
    a.max_sends = kMaxSends;
    a.max_recvs = kMaxRecvs;
    CUDA_OK(cudaMalloc(&a.rbuf, static_cast<size_t>(kBlocks) * kMaxRecvs * kMaxBytes));
    CUDA_OK(cudaMalloc(&a.got, static_cast<size_t>(kBlocks) * kMaxRecvs * sizeof(Got)));
    program_kernel<<<kBlocks, 64, 0, stream(rt)>>>(a);
    finish(rt, eps);
    std::vector<Got> got(static_cast<size_t>(kBlocks) * kMaxRecvs);
    CUDA_OK(cudaMemcpy(got.data(), a.got, got.size() * sizeof(Got), cudaMemcpyDeviceToHost));
    std::vector<int> seen(msgs.size(), 0);
    for (int b = 0; b < kBlocks; ++b) {
      std::map<int, int> last;  // key (the tag, or the sender block for ANY_TAG receives) -> last index
      for (int k = 0; k < nposts[b]; ++k) {
        const Got& g = got[static_cast<size_t>(b) * kMaxRecvs + k];
        const Post& p = posts[b * kMaxRecvs + k];
        ASSERT_LT(g.idx, msgs.size()) << "endpoint " << b << " receive " << k;
        const Msg& m = msgs[g.idx];
        ++seen[g.idx];
        EXPECT_EQ(m.ep, b) << "message " << g.idx << " reached endpoint " << b;
        EXPECT_EQ(g.status.source, 0);
        EXPECT_EQ(g.status.tag, m.tag) << "message " << g.idx;
        EXPECT_EQ(g.status.bytes, m.bytes) << "message " << g.idx;
        EXPECT_EQ(g.status.error, 0u) << "message " << g.idx;
        EXPECT_EQ(g.bad_byte, 0xffffffffu) << "message " << g.idx << " byte " << g.bad_byte;
        EXPECT_TRUE(p.tag == ep::kAnyTag || p.tag == m.tag) << "receive " << k << " of endpoint " << b;
        const int key = p.tag == ep::kAnyTag ? -1 - m.from : m.tag;
        auto it = last.find(key);
        EXPECT_TRUE(it == last.end() || it->second < static_cast<int>(g.idx))
            << "endpoint " << b << ": message " << g.idx << " matched after " << it->second << " (style " << style[b]
            << ")";
        last[key] = static_cast<int>(g.idx);
      }
    }
    for (size_t i = 0; i < msgs.size(); ++i) EXPECT_EQ(seen[i], 1) << "message " << i;
    for (const void* p :
         {static_cast<const void*>(a.sends), static_cast<const void*>(a.nsends), static_cast<const void*>(a.posts),
          static_cast<const void*>(a.nposts), static_cast<const void*>(a.wait_order), static_cast<const void*>(a.ahead),
          static_cast<const void*>(a.send_level), static_cast<const void*>(a.batched), static_cast<const void*>(a.rbuf),
          static_cast<const void*>(a.got)})
      (void)cudaFree(const_cast<void*>(p));
    if (HasFailure()) return;
  }
}

// ---- ownership across kernels ----

__global__ void reopen_first(ep::EndpointsHandle h, uint64_t* buf, ep::Status* out) {
  __shared__ ep::OwnerState<4, 8, 8, 4> st;
  const coop::Thread t;
  if (threadIdx.x != 0) return;
  for (uint64_t v = 1; v <= 3; ++v) ep::send(t, h, &v, 8, 0, 0, static_cast<int>(v));
  ep::open(t, h, 0, st);
  out[0] = ep::recv(t, h, st, buf, 8, 0, 2);
  ep::close(t, h, st);
}
__global__ void reopen_second(ep::EndpointsHandle h, uint64_t* buf, ep::Status* out) {
  __shared__ ep::OwnerState<4, 8, 8, 4> st;
  const coop::Warp w;
  ep::open(w, h, 0, st);
  out[1] = ep::recv(w, h, st, buf + 1, 8, ep::kAnySource, ep::kAnyTag);
  out[2] = ep::recv(w, h, st, buf + 2, 8, ep::kAnySource, ep::kAnyTag);
  ep::close(w, h, st);
}

TEST_F(EpGpu, ReopenKeepsUnexpectedMessagesInOrder) {
  Runtime rt;
  msg::Endpoints eps(rt, msg::EndpointsOptions{1, 4, 8});
  uint64_t* buf = nullptr;
  ep::Status* st = nullptr;
  CUDA_OK(cudaMalloc(&buf, 3 * sizeof(uint64_t)));
  CUDA_OK(cudaMalloc(&st, 3 * sizeof(ep::Status)));
  reopen_first<<<1, 32, 0, stream(rt)>>>(eps.device(), buf, st);
  finish(rt, eps);
  reopen_second<<<1, 32, 0, stream(rt)>>>(eps.device(), buf, st);
  finish(rt, eps);
  uint64_t v[3];
  ep::Status s[3];
  CUDA_OK(cudaMemcpy(v, buf, sizeof v, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(s, st, sizeof s, cudaMemcpyDeviceToHost));
  EXPECT_EQ(v[0], 2u);
  EXPECT_EQ(s[0].tag, 2);
  EXPECT_EQ(v[1], 1u);
  EXPECT_EQ(s[1].tag, 1);
  EXPECT_EQ(v[2], 3u);
  EXPECT_EQ(s[2].tag, 3);
}

// ---- failures: the kernel traps and the record names what went wrong (a process per test) ----

__global__ void bad_pe_kernel(ep::EndpointsHandle h, uint64_t* buf) {
  ep::send(coop::Thread{}, h, buf, 8, 5, 0, 1);
}

TEST_F(EpGpu, BadArgumentTrapsNamingIt) {
  Runtime rt;
  msg::Endpoints eps(rt, msg::EndpointsOptions{});
  uint64_t* buf = static_cast<uint64_t*>(rt.malloc(64));
  bad_pe_kernel<<<1, 1, 0, stream(rt)>>>(eps.device(), buf);
  CUDA_OK(cudaGetLastError());
  EXPECT_NE(cudaStreamSynchronize(stream(rt)), cudaSuccess);
  try {
    eps.check_device();
    FAIL() << "check_device raised nothing";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), Errc::invalid_argument) << err.what();
    EXPECT_NE(std::string(err.what()).find("pe 5 is outside 0..0"), std::string::npos) << err.what();
  }
}

__global__ void lonely_kernel(ep::EndpointsHandle h, uint64_t* buf) {
  __shared__ ep::OwnerState<4, 8, 8, 4> st;
  const coop::Warp w;
  ep::open(w, h, 1, st);
  ep::recv(w, h, st, buf, 8, 0, 42);
}

TEST_F(EpGpu, TimeoutNamesTheReceive) {
  setenv("GPUCOMM_TIMEOUT", "1", 1);
  Runtime rt;
  msg::Endpoints eps(rt, msg::EndpointsOptions{});
  uint64_t* buf = static_cast<uint64_t*>(rt.malloc(64));
  lonely_kernel<<<1, 32, 0, stream(rt)>>>(eps.device(), buf);
  CUDA_OK(cudaGetLastError());
  EXPECT_NE(cudaStreamSynchronize(stream(rt)), cudaSuccess);
  try {
    eps.check_device();
    FAIL() << "check_device raised nothing";
  } catch (const Error& err) {
    const std::string t = err.what();
    EXPECT_EQ(err.code(), Errc::timeout) << t;
    EXPECT_NE(t.find("endpoint 1"), std::string::npos) << t;
    EXPECT_NE(t.find("src 0, tag 42"), std::string::npos) << t;
    EXPECT_NE(t.find("GPUCOMM_TIMEOUT"), std::string::npos) << t;
  }
  unsetenv("GPUCOMM_TIMEOUT");
}

}  // namespace
