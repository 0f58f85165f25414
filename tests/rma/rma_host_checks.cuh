#pragma once
// Host-side one-sided API on GPU PEs, registered buffers, and CUDA-graph capture of the
// stream-ordered operations.
#include "rma_checks_host.cuh"

namespace rma_checks {

inline void check_host_api(Ctx& c) {
  Runtime& rt = c.rt;
  const size_t bytes = 100000;
  const auto want_left = c.data_of(c.left), want_right = c.data_of(c.right), mine = c.data_of(c.me);
  // calloc zeroes device memory
  auto* z = static_cast<uint8_t*>(rt.calloc(4096, 1));
  auto zeros = c.fetch(z, 4096);
  for (uint8_t b : zeros) {
    if (b) {
      c.rep.fail("calloc returned device memory that is not zero");
      break;
    }
  }
  // put from host memory, get into host memory
  RMA_CUDA(cudaMemset(c.dst, kPoison, Ctx::kCap * static_cast<size_t>(c.n)));
  rt.barrier_all();
  rt.put(c.dst + Ctx::kCap * static_cast<size_t>(c.me), mine.data() + 5, bytes, c.right);
  rt.barrier_all();
  c.compare("host put", c.fetch(c.dst + Ctx::kCap * static_cast<size_t>(c.left), Ctx::kCap), want_left, 5, 0, bytes);
  std::vector<uint8_t> back(Ctx::kCap, kPoison);
  rt.get(back.data() + 3, c.src + 9, bytes, c.right);
  c.compare("host get", back, want_right, 9, 3, bytes);
  // p / g / put_signal / signal / wait_until / test
  auto* w = static_cast<uint64_t*>(rt.calloc(4 * static_cast<size_t>(c.n), sizeof(uint64_t)));
  rt.p<uint64_t>(&w[c.me], 0xABCD0000ull + static_cast<uint64_t>(c.me), c.right);
  rt.barrier_all();
  if (rt.g<uint64_t>(&w[c.left], c.me) != 0xABCD0000ull + static_cast<uint64_t>(c.left)) c.rep.fail("host p/g");
  RMA_CUDA(cudaMemset(c.dst, kPoison, Ctx::kCap * static_cast<size_t>(c.n)));
  rt.barrier_all();
  rt.put_signal(c.dst + Ctx::kCap * static_cast<size_t>(c.me), mine.data(), bytes, &c.sig[c.me], 1000, SignalOp::set,
                c.right);
  uint64_t seen = rt.wait_until<uint64_t>(&c.sig[c.left], Cmp::eq, 1000);
  if (seen != 1000) c.rep.fail("host wait_until returned " + std::to_string(seen));
  c.compare("host put_signal", c.fetch(c.dst + Ctx::kCap * static_cast<size_t>(c.left), Ctx::kCap), want_left, 0, 0,
            bytes);
  rt.signal(&c.sig[c.me], 5, SignalOp::add, c.right);
  rt.wait_until<uint64_t>(&c.sig[c.left], Cmp::ge, 1005);
  if (!rt.test<uint64_t>(&c.sig[c.left], Cmp::eq, 1005)) c.rep.fail("host test after signal add");
  if (rt.signal_fetch(&c.sig[c.left]) != 1005) c.rep.fail("host signal_fetch");
  rt.barrier_all();
  c.sigcount = 1005;
  // atomics against a model, 64 and 32 bit
  auto* a64 = rt.alloc<uint64_t>(static_cast<size_t>(c.n));
  auto* a32 = rt.alloc<int32_t>(static_cast<size_t>(c.n));
  rt.atomic_set<uint64_t>(&a64[c.me], 10, c.right);
  rt.atomic_set<int32_t>(&a32[c.me], -5, c.right);
  uint64_t m = 10;
  int32_t m32 = -5;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) c.rep.fail(std::string("host ") + what + " on a GPU PE");
  };
  expect(rt.atomic_fetch_add<uint64_t>(&a64[c.me], 7, c.right) == m, "atomic_fetch_add"), m += 7;
  expect(rt.atomic_swap<uint64_t>(&a64[c.me], 99, c.right) == m, "atomic_swap"), m = 99;
  expect(rt.atomic_compare_swap<uint64_t>(&a64[c.me], 99, 3, c.right) == 99, "atomic_compare_swap (hit)"), m = 3;
  expect(rt.atomic_compare_swap<uint64_t>(&a64[c.me], 99, 4, c.right) == 3, "atomic_compare_swap (miss)");
  expect(rt.atomic_fetch_or<uint64_t>(&a64[c.me], 0xF0, c.right) == m, "atomic_fetch_or"), m |= 0xF0;
  expect(rt.atomic_fetch_and<uint64_t>(&a64[c.me], 0x3C, c.right) == m, "atomic_fetch_and"), m &= 0x3C;
  expect(rt.atomic_fetch_xor<uint64_t>(&a64[c.me], 0xFF, c.right) == m, "atomic_fetch_xor"), m ^= 0xFF;
  expect(rt.atomic_fetch_inc<uint64_t>(&a64[c.me], c.right) == m, "atomic_fetch_inc"), m += 1;
  expect(rt.atomic_fetch<uint64_t>(&a64[c.me], c.right) == m, "atomic_fetch");
  expect(rt.atomic_fetch_add<int32_t>(&a32[c.me], -3, c.right) == m32, "atomic_fetch_add int32"), m32 -= 3;
  expect(rt.atomic_fetch<int32_t>(&a32[c.me], c.right) == m32, "atomic_fetch int32");
  rt.fence();
  rt.quiet();
  Team half = rt.split(rt.world(), c.me % 2, 0);
  rt.barrier(half);
  rt.barrier_all();
  rt.free(a32);
  rt.free(a64);
  rt.free(w);
  rt.free(z);
}

inline void check_registered(Ctx& c) {
  Runtime& rt = c.rt;
  const size_t words = 4096;
  void* buf = nullptr;
  RMA_CUDA(cudaMalloc(&buf, words * 8));
  RMA_CUDA(cudaMemset(buf, 0, words * 8));
  const RegisteredBuffer& reg = rt.register_buffer(buf, words * 8);
  if (reg.peers[static_cast<size_t>(c.right)] == nullptr)
    c.rep.fail("registered buffer of the right neighbour is unreachable");
  k_registered<<<1, 256, 0, c.s>>>(reg.device_peers, c.right, c.seed ^ static_cast<uint64_t>(c.me), words);
  RMA_LAUNCHED();
  c.sync();
  rt.barrier_all();
  std::vector<uint64_t> got(words);
  RMA_CUDA(cudaMemcpy(got.data(), buf, words * 8, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < words; ++i) {
    if (got[i] != (c.seed ^ static_cast<uint64_t>(c.left)) + i) {
      c.rep.fail("registered buffer word " + std::to_string(i) + " from the left neighbour is wrong");
      break;
    }
  }
  rt.deregister_buffer(buf);
  RMA_CUDA(cudaFree(buf));
  // a heap buffer registers without a new mapping
  const RegisteredBuffer& hreg = rt.register_buffer(c.dst, Ctx::kCap);
  if (hreg.peers[static_cast<size_t>(c.right)] != rt.ptr(c.dst, c.right))
    c.rep.fail("heap buffer registration disagrees with ptr()");
  rt.deregister_buffer(c.dst);
}

// put_signal_on_stream, wait_until_on_stream, get_on_stream and barrier_on_stream captured
// once into a graph, replayed with new data each time.
inline void check_graph(Ctx& c, int replays) {
  Runtime& rt = c.rt;
  const size_t bytes = 300000;
  auto* flag = static_cast<uint64_t*>(rt.calloc(1, sizeof(uint64_t)));
  char* stage = nullptr;  // local source the host rewrites before each replay
  RMA_CUDA(cudaMalloc(&stage, bytes));
  cudaStream_t gs;
  RMA_CUDA(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  rt.barrier_all();
  cudaGraph_t graph;
  RMA_CUDA(cudaStreamBeginCapture(gs, cudaStreamCaptureModeThreadLocal));
  RMA_CUDA(cudaMemsetAsync(flag, 0, sizeof(uint64_t), gs));
  rt.barrier_on_stream(gs);
  rt.put_signal_on_stream(c.dst + Ctx::kCap * static_cast<size_t>(c.me), stage, bytes, flag, 1, SignalOp::add, c.right,
                          gs);
  rt.wait_until_on_stream(flag, Cmp::eq, 1, gs);
  rt.get_on_stream(c.out, c.dst + Ctx::kCap * static_cast<size_t>(c.left), bytes, c.me, gs);
  rt.put_on_stream(c.dst + Ctx::kCap * static_cast<size_t>(c.me) + bytes, stage, 64, c.right, gs);
  rt.signal_on_stream(&c.sig[c.me], 1, SignalOp::add, c.right, gs);
  rt.barrier_on_stream(gs);
  RMA_CUDA(cudaStreamEndCapture(gs, &graph));
  cudaGraphExec_t exec;
  RMA_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < replays; ++r) {
    auto data = random_bytes(c.seed + 31 * static_cast<uint64_t>(r) + static_cast<uint64_t>(c.me) * 7919, bytes);
    auto left = random_bytes(c.seed + 31 * static_cast<uint64_t>(r) + static_cast<uint64_t>(c.left) * 7919, bytes);
    RMA_CUDA(cudaMemcpy(stage, data.data(), bytes, cudaMemcpyHostToDevice));
    RMA_CUDA(cudaMemset(c.out, kPoison, bytes));
    rt.barrier_all();  // every PE's stage and poison are in place
    RMA_CUDA(cudaGraphLaunch(exec, gs));
    RMA_CUDA(cudaStreamSynchronize(gs));
    rt.check_device();
    c.compare("graph replay " + std::to_string(r) + " (put_signal_on_stream/wait_until_on_stream/get_on_stream)",
              c.fetch(c.out, bytes), left, 0, 0, bytes);
  }
  rt.barrier_all();
  uint64_t sig = rt.signal_fetch(&c.sig[c.left]);
  if (sig != c.sigcount + static_cast<uint64_t>(replays)) {
    c.rep.fail("signal_on_stream in the graph: signal " + std::to_string(sig) + ", expected " +
               std::to_string(c.sigcount + static_cast<uint64_t>(replays)));
  }
  c.sigcount += static_cast<uint64_t>(replays);
  RMA_CUDA(cudaGraphExecDestroy(exec));
  RMA_CUDA(cudaGraphDestroy(graph));
  RMA_CUDA(cudaStreamDestroy(gs));
  RMA_CUDA(cudaFree(stage));
  rt.barrier_all();
  rt.free(flag);
}

}  // namespace rma_checks
