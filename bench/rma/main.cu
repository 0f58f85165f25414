// gpucomm-bench-rma: latency, bandwidth, message rate and barrier time of the device API
// between two GPU PEs. Run as `gpucomm run -n 2 -- gpucomm-bench-rma [--quick] [--json FILE]`
// (or `gpucomm bench rma`). Times come from CUDA events around kernels that repeat the
// operation many times; each point is the median of several trials after a warm-up.
#include <cuda_runtime.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_kernels.cuh"
#include "gpucomm/gpucomm.hpp"
#include "harness.hpp"
#include "results.hpp"

#ifndef GPUCOMM_GIT_COMMIT
#define GPUCOMM_GIT_COMMIT "unknown"
#endif

using namespace gpucomm;

namespace {

using bench::ck;

struct Bench : bench::Harness {
  bool quick;
  DeviceHandle h;
  static constexpr size_t kMaxBytes = size_t(256) << 20;
  char* sym = nullptr;    // symmetric destination/source, kMaxBytes
  char* local = nullptr;  // local buffer, kMaxBytes
  uint64_t* sig = nullptr;
  int* iflag = nullptr;
  uint64_t* words = nullptr;
  uint64_t* sink = nullptr;
  uint64_t base = 0;  // rising flag values across trials

  Bench(Runtime& r, bool q) : Harness(r, q ? 5 : 15), quick(q) {
    h = rt.device_handle();
    sym = static_cast<char*>(rt.malloc(kMaxBytes));
    sig = static_cast<uint64_t*>(rt.calloc(16, sizeof(uint64_t)));
    iflag = static_cast<int*>(rt.calloc(16, sizeof(int)));
    words = static_cast<uint64_t*>(rt.calloc(size_t(1) << 20, sizeof(uint64_t)));
    ck(cudaMalloc(&local, kMaxBytes), "cudaMalloc");
    ck(cudaMemset(local, 0x5A, kMaxBytes), "cudaMemset");
    ck(cudaMalloc(&sink, 64), "cudaMalloc");
  }

  void latency() {
    const int iters = quick ? 2000 : 10000;
    measure(
        {"p_pingpong", "thread", 4, 1, "us", {}}, 3,
        [&] {
          bench::k_p_pingpong<<<1, 1, 0, s>>>(h, iflag, iters, static_cast<int>(base)),
              base += static_cast<uint64_t>(iters);
        },
        [&](double ms) { return ms * 1e3 / (2.0 * iters); });
    std::vector<size_t> sizes =
        quick ? std::vector<size_t>{8, 4096, 65536} : std::vector<size_t>{8, 64, 512, 4096, 32768, 65536};
    for (size_t b : sizes) {
      const int thread_iters = iters / (b > 4096 ? 10 : 1);  // one thread moves large messages slowly
      measure(
          {"put_signal_pingpong", "thread", b, 1, "us", {}}, 3,
          [&] {
            bench::k_put_pingpong<coop::Thread, true><<<1, 1, 0, s>>>(h, sym, local, b, sig, thread_iters, base);
            base += static_cast<uint64_t>(iters);
          },
          [&](double ms) { return ms * 1e3 / (2.0 * thread_iters); });
      measure(
          {"put_signal_pingpong", "block", b, 1, "us", {}}, 3,
          [&] {
            bench::k_put_pingpong<coop::Block, true><<<1, 512, 0, s>>>(h, sym, local, b, sig, iters, base);
            base += static_cast<uint64_t>(iters);
          },
          [&](double ms) { return ms * 1e3 / (2.0 * iters); });
      measure(
          {"put_pingpong", "block", b, 1, "us", {}}, 3,
          [&] {
            bench::k_put_pingpong<coop::Block, false><<<1, 512, 0, s>>>(h, sym, local, b, sig, iters, base);
            base += static_cast<uint64_t>(iters);
          },
          [&](double ms) { return ms * 1e3 / (2.0 * iters); });
      measure(
          {"get_latency", "block", b, 1, "us", {}}, 1,
          [&] { bench::k_get_latency<<<1, 512, 0, s>>>(h, local, sym, b, iters); },
          [&](double ms) { return ms * 1e3 / iters; });
    }
    measure(
        {"g_latency", "thread", 8, 1, "us", {}}, 1, [&] { bench::k_g_latency<<<1, 1, 0, s>>>(h, words, iters, sink); },
        [&](double ms) { return ms * 1e3 / iters; });
    measure(
        {"atomic_fetch_add_latency", "thread", 8, 1, "us", {}}, 1,
        [&] { bench::k_atomic_latency<<<1, 1, 0, s>>>(h, words, iters, sink); },
        [&](double ms) { return ms * 1e3 / iters; });
  }

  template <class Coop>
  void bandwidth_point(const char* level, int threads, const char* name, size_t b, int ctas, int who, int is_get) {
    const int reps =
        static_cast<int>(std::max<size_t>(1, std::min<size_t>(quick ? 200 : 1000, (size_t(64) << 20) / b)));
    const double moved = static_cast<double>(b) * reps * (who == 3 ? 2 : 1);
    measure(
        {name, level, b, ctas, "GB/s", {}}, who,
        [&] { bench::k_bandwidth<Coop><<<ctas, threads, 0, s>>>(h, sym, local, b, reps, 1 - rt.rank(), is_get); },
        [&](double ms) { return ms > 0 ? moved / (ms * 1e6) : 0.0; });
  }

  void bandwidth() {
    std::vector<size_t> sizes;
    for (size_t b = 8; b <= kMaxBytes; b *= quick ? 8 : 2) sizes.push_back(b);
    if (sizes.back() != kMaxBytes) sizes.push_back(kMaxBytes);
    const std::vector<int> sweep =
        quick ? std::vector<int>{1, 8, 32, 132} : std::vector<int>{1, 2, 4, 8, 16, 32, 64, 132};
    const std::vector<size_t> sweep_sizes = {size_t(64) << 10, size_t(1) << 20, size_t(16) << 20, kMaxBytes};
    for (size_t b : sizes) {
      for (int ctas : {32, 132}) {
        bandwidth_point<coop::Block>("block", 512, "put_bw", b, ctas, 1, 0);
        bandwidth_point<coop::Block>("block", 512, "get_bw", b, ctas, 1, 1);
        bandwidth_point<coop::Block>("block", 512, "bidir_put_bw", b, ctas, 3, 0);
      }
      bandwidth_point<coop::Warp>("warp", 512, "put_bw", b, 32, 1, 0);
      bandwidth_point<coop::Thread>("thread", 512, "put_bw", b, 32, 1, 0);
      if (!quick) {
        bandwidth_point<coop::Warp>("warp", 512, "get_bw", b, 32, 1, 1);
        bandwidth_point<coop::Thread>("thread", 512, "get_bw", b, 32, 1, 1);
      }
    }
    for (size_t b : sweep_sizes) {
      for (int ctas : sweep) {
        if ((ctas != 32 && ctas != 132) || std::find(sizes.begin(), sizes.end(), b) == sizes.end()) {
          bandwidth_point<coop::Block>("block", 512, "put_bw", b, ctas, 1, 0);
          bandwidth_point<coop::Block>("block", 512, "get_bw", b, ctas, 1, 1);
        }
      }
    }
    // Copy engine reference: cudaMemcpyAsync into the peer's mapping.
    char* peer = static_cast<char*>(rt.ptr(sym, 1 - rt.rank()));
    for (size_t b : sweep_sizes) {
      const int reps = static_cast<int>(std::max<size_t>(1, (size_t(256) << 20) / b));
      measure(
          {"put_bw", "copy_engine", b, 0, "GB/s", {}}, 1,
          [&] {
            for (int r = 0; r < reps; ++r)
              ck(cudaMemcpyAsync(peer, local, b, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
          },
          [&](double ms) { return ms > 0 ? static_cast<double>(b) * reps / (ms * 1e6) : 0.0; });
      measure(
          {"bidir_put_bw", "copy_engine", b, 0, "GB/s", {}}, 3,
          [&] {
            for (int r = 0; r < reps; ++r)
              ck(cudaMemcpyAsync(peer, local, b, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
          },
          [&](double ms) { return ms > 0 ? 2.0 * static_cast<double>(b) * reps / (ms * 1e6) : 0.0; });
    }
  }

  void rate_and_barrier() {
    const int per_thread = quick ? 64 : 256;
    for (int ctas : {32, 132}) {
      const double ops = static_cast<double>(ctas) * 512 * per_thread;
      measure(
          {"p_msg_rate", "thread", 8, ctas, "Mops/s", {}}, 1,
          [&] { bench::k_msg_rate<<<ctas, 512, 0, s>>>(h, words, per_thread, 1 - rt.rank()); },
          [&](double ms) { return ms > 0 ? ops / (ms * 1e3) : 0.0; });
    }
    const int iters = quick ? 2000 : 20000;
    measure(
        {"barrier_all", "thread", 0, 1, "us", {}}, 3, [&] { bench::k_barrier_loop<0><<<1, 1, 0, s>>>(h, iters); },
        [&](double ms) { return ms * 1e3 / iters; });
    measure(
        {"barrier_master", "thread", 0, 1, "us", {}}, 3, [&] { bench::k_barrier_loop<1><<<1, 1, 0, s>>>(h, iters); },
        [&](double ms) { return ms * 1e3 / iters; });
  }
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json, cmdline;
  for (int i = 0; i < argc; ++i) cmdline.append(i ? " " : "").append(argv[i]);  // appends: GCC 12 -O3 -Wrestrict
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: gpucomm run -n 2 -- gpucomm-bench-rma [--quick] [--json FILE]\n");
      return 0;
    } else {
      std::fprintf(stderr, "gpucomm-bench-rma: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  setenv("GPUCOMM_HEAP_SIZE", "384M", 0);  // the 256 MB buffer plus flags, unless set
  try {
    Runtime rt;
    if (rt.size() != 2) throw std::runtime_error("run on exactly 2 PEs: gpucomm run -n 2 -- gpucomm-bench-rma");
    if (rt.pe_kind() != PeKind::gpu) throw std::runtime_error("needs GPU PEs (found host-memory PEs)");
    if (!rt.ptr(rt.heap().base(), 1 - rt.rank()))
      throw std::runtime_error("the other PE's GPU is not reachable from this one");
    cudaDeviceProp prop{};
    ck(cudaGetDeviceProperties(&prop, rt.device_id()), "cudaGetDeviceProperties");
    auto devices = rt.bootstrap().allgather(std::string(prop.name) + " (GPU " + std::to_string(rt.device_id()) + ")");
    if (rt.rank() == 0)
      std::printf("gpucomm-bench-rma: %s <-> %s%s\n", devices[0].c_str(), devices[1].c_str(), quick ? " (quick)" : "");
    Bench b(rt, quick);
    b.latency();
    b.rate_and_barrier();
    b.bandwidth();
    if (rt.rank() == 0) {
      std::vector<std::pair<std::string, size_t>> half = {
          {"put_bw/block/132", bench::half_peak_bytes(b.results, "put_bw", "block", 132)},
          {"put_bw/block/32", bench::half_peak_bytes(b.results, "put_bw", "block", 32)},
          {"get_bw/block/132", bench::half_peak_bytes(b.results, "get_bw", "block", 132)},
          {"bidir_put_bw/block/132", bench::half_peak_bytes(b.results, "bidir_put_bw", "block", 132)}};
      for (auto& [k, v] : half) std::printf("half of peak bandwidth %s at %zu bytes\n", k.c_str(), v);
      if (!json.empty() &&
          !bench::write_json(json, "gpucomm-bench-rma", GPUCOMM_GIT_COMMIT, cmdline, devices, quick, b.results, half))
        throw std::runtime_error("cannot write " + json);
    }
    rt.barrier_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucomm-bench-rma: %s\n", e.what());
    return 1;
  }
  return 0;
}
