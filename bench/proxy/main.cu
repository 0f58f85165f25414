// gpucomm-bench-proxy: the cost of the path one-sided operations take (GPUCOMM_TRANSPORT: direct
// stores, the CPU proxy, the GPU service agent, UCX), measured on 1 PE (to itself: a descriptor
// round trip) or 2 PEs (ping-pong). `gpucomm bench proxy` runs it once per configuration and
// prints the comparison. Times come from CUDA events around kernels that repeat the operation;
// each point is the median of several trials after a warm-up.
//   put_signal_latency   one-way (2 PEs) or round trip (1 PE), thread and block level, 8 B..64 KB
//   put_bw               block-level puts from 1, 8 and 32 CTAs (each puts its share), 64 KB..256 MB
//   p_msg_rate           8-byte puts issued by GPU threads (32 and 132 CTAs), each to a word of its own
//   host_p_rate          8-byte puts issued by the CPU through the host API (one call each)
//   host_copy_rate       8-byte cudaMemcpyAsync issued back to back by the CPU (CPU-issued reference)
//   copy_engine_bw       cudaMemcpyAsync into the target's mapping, back to back, timed like put_bw
//   proxy_cpu_us_per_op  CPU time the proxy threads spent per operation during p_msg_rate
//   floors               flag round trips and CPU-issued writes with plain CUDA (floors.hpp)
//   stages               latency breakdown of a traced run (GPUCOMM_PROXY_TRACE=1, stages.hpp)
#include <cuda_runtime.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "../rma/harness.hpp"
#include "../rma/results.hpp"
#include "floors.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/gpucomm.hpp"
#include "proxy_kernels.cuh"
#include "stages.hpp"

#ifndef GPUCOMM_GIT_COMMIT
#define GPUCOMM_GIT_COMMIT "unknown"
#endif

using namespace gpucomm;
using bench::Result;

namespace {

using bench::ck;

struct Bench : bench::Harness {
  bool quick;
  int peer;
  DeviceHandle h;
  size_t max_bytes;
  char* sym = nullptr;
  char* local = nullptr;
  uint64_t* sig = nullptr;
  uint64_t* words = nullptr;
  uint64_t base = 0;

  Bench(Runtime& r, bool q, size_t maxb) : Harness(r, q ? 5 : 11), quick(q), max_bytes(maxb) {
    peer = rt.size() == 1 ? 0 : 1 - rt.rank();
    h = rt.device_handle();
    sym = static_cast<char*>(rt.malloc(max_bytes));
    sig = static_cast<uint64_t*>(rt.calloc(16, sizeof(uint64_t)));
    words = static_cast<uint64_t*>(rt.calloc(proxy_bench::kRateWords, sizeof(uint64_t)));
    ck(cudaMalloc(&local, max_bytes), "cudaMalloc");
    ck(cudaMemset(local, 0x5A, max_bytes), "cudaMemset");
  }

  void latency() {
    const int who = rt.size() == 1 ? 1 : 3;
    const double trips_per_iter = rt.size() == 1 ? 1.0 : 2.0;  // 1 PE: one round trip per iteration
    const int iters = quick ? 500 : 2000;
    std::vector<size_t> sizes =
        quick ? std::vector<size_t>{8, 4096, 65536} : std::vector<size_t>{8, 64, 512, 4096, 32768, 65536};
    for (size_t b : sizes) {
      measure(
          {"put_signal_latency", "thread", b, 1, "us", {}}, who,
          [&] {
            proxy_bench::k_put_signal_trips<coop::Thread><<<1, 1, 0, s>>>(h, sym, local, b, sig, iters, base);
            base += static_cast<uint64_t>(iters);
          },
          [&](double ms) { return ms * 1e3 / (trips_per_iter * iters); });
      measure(
          {"put_signal_latency", "block", b, 1, "us", {}}, who,
          [&] {
            proxy_bench::k_put_signal_trips<coop::Block><<<1, 512, 0, s>>>(h, sym, local, b, sig, iters, base);
            base += static_cast<uint64_t>(iters);
          },
          [&](double ms) { return ms * 1e3 / (trips_per_iter * iters); });
    }
  }

  void bandwidth() {
    std::vector<size_t> sizes;
    for (size_t b = size_t(64) << 10; b <= max_bytes; b *= quick ? 16 : 4) sizes.push_back(b);
    if (sizes.back() != max_bytes) sizes.push_back(max_bytes);
    for (size_t b : sizes) {
      // Back-to-back puts (and raw copies, timed the same way) of about 4 GB per trial from 64 MB:
      // the fixed start and completion of a trial weigh little against the copies.
      const int reps =
          static_cast<int>(std::max<size_t>(16, std::min<size_t>(quick ? 64 : 256, (size_t(4) << 30) / b)));
      for (int ctas : {1, 8, 32}) {  // 1 CTA: one descriptor of the whole size per repetition
        measure(
            {"put_bw", "block", b, ctas, "GB/s", {}}, 1,
            [&] { proxy_bench::k_put_bw<<<ctas, 512, 0, s>>>(h, sym, local, b, reps, peer); },
            [&](double ms) { return ms > 0 ? static_cast<double>(b) * reps / (ms * 1e6) : 0.0; });
      }
      char* target = static_cast<char*>(rt.ptr(sym, peer));
      if (target) {
        measure(
            {"copy_engine_bw", "copy_engine", b, 0, "GB/s", {}}, 1,
            [&] {
              for (int r = 0; r < reps; ++r)
                ck(cudaMemcpyAsync(target, local, b, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
            },
            [&](double ms) { return ms > 0 ? static_cast<double>(b) * reps / (ms * 1e6) : 0.0; });
      }
    }
  }

  void rates(bool via_agent) {
    // Through an agent every operation is a descriptor: fewer of them keep a trial short.
    const int per_thread = via_agent ? (quick ? 8 : 32) : (quick ? 16 : 64);
    const int threads = via_agent ? 256 : 512;
    for (int ctas : {32, 132}) {
      const double ops = static_cast<double>(ctas) * threads * per_thread;
      const TransportInfo before = rt.transport_info();
      measure(
          {"p_msg_rate", "thread", 8, ctas, "Mops/s", {}}, 1,
          [&] { proxy_bench::k_msg_rate<<<ctas, threads, 0, s>>>(h, words, per_thread, peer); },
          [&](double ms) { return ms > 0 ? ops / (ms * 1e3) : 0.0; });
      const TransportInfo after = rt.transport_info();
      if (after.executed > before.executed && after.proxy_cpu_seconds > 0 && rt.rank() == 0) {
        Result r{"proxy_cpu_us_per_op", "cpu_proxy", 8, ctas, "us", {}};
        r.samples.push_back((after.proxy_cpu_seconds - before.proxy_cpu_seconds) * 1e6 /
                            static_cast<double>(after.executed - before.executed));
        add(std::move(r));
      }
    }
    // CPU-issued: the host API, one blocking call per 8-byte put; and raw async copies.
    const int host_ops = quick ? 2000 : 20000;
    Result api{"host_p_rate", "host_api", 8, 0, "Mops/s", {}};
    Result raw{"host_copy_rate", "cpu_async_copy", 8, 0, "Mops/s", {}};
    char* target = static_cast<char*>(rt.ptr(words, peer));
    for (int t = 0; t < trials; ++t) {
      rt.barrier_all();
      if (rt.rank() == 0) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < host_ops; ++i) rt.p<uint64_t>(&words[i % 1024], static_cast<uint64_t>(i), peer);
        api.samples.push_back(host_ops /
                              std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        if (target) {
          t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < host_ops; ++i) {
            const size_t at = 8 * static_cast<size_t>(i % 1024);
            ck(cudaMemcpyAsync(target + at, local + at, 8, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
          }
          ck(cudaStreamSynchronize(s), "cudaStreamSynchronize");
          raw.samples.push_back(
              host_ops / std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
      }
    }
    if (rt.rank() == 0) {
      add(std::move(api));
      if (!raw.samples.empty()) add(std::move(raw));
    }
    rt.barrier_all();
  }

  // Floors with plain CUDA, on PE 0 (the other PE waits at the barrier).
  void floors() {
    if (rt.rank() == 0) {
      std::vector<Result> out;
      proxy_bench::measure_floors(trials, quick, out);
      for (auto& r : out) add(std::move(r));
    }
    rt.barrier_all();
  }

  // Latency breakdown of a traced run (1 PE, GPUCOMM_PROXY_TRACE=1).
  void stages() {
    const proxy_bench::ClockSync sync = proxy_bench::calibrate_clocks();
    std::vector<Result> out;
    if (!proxy_bench::measure_stages(rt, h, sym, local, sig, base, quick ? 500 : 2000, sync, out)) {
      std::printf("  stages: skipped (needs 1 PE, a proxy transport and GPUCOMM_PROXY_TRACE=1)\n");
      return;
    }
    for (auto& r : out) add(std::move(r));
  }
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json, cmdline, only;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: gpucomm run -n 1|2 -- gpucomm-bench-proxy [--quick] [--only latency,bandwidth,rate,floors,stages] "
          "[--json FILE]\n"
          "The path comes from GPUCOMM_TRANSPORT (and GPUCOMM_PROXY_*, GPUCOMM_AGENT_*); `gpucomm bench proxy` runs "
          "them all.\n");
      return 0;
    } else {
      std::fprintf(stderr, "gpucomm-bench-proxy: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  auto wanted = [&](const char* part) {
    return only.empty() || ("," + only + ",").find(std::string(",") + part + ",") != std::string::npos;
  };
  const size_t max_bytes = quick ? size_t(64) << 20 : size_t(256) << 20;
  setenv("GPUCOMM_HEAP_SIZE", quick ? "96M" : "384M", 0);
  try {
    Runtime rt;
    if (rt.size() > 2) throw std::runtime_error("run on 1 or 2 PEs");
    if (rt.pe_kind() != PeKind::gpu) throw std::runtime_error("needs GPU PEs (found host-memory PEs)");
    cudaDeviceProp prop{};
    ck(cudaGetDeviceProperties(&prop, rt.device_id()), "cudaGetDeviceProperties");
    auto devices = rt.bootstrap().allgather(std::string(prop.name) + " (GPU " + std::to_string(rt.device_id()) + ")");
    const TransportInfo info = rt.transport_info();
    const std::string ring = env::get_string("GPUCOMM_PROXY_RING", "auto");
    const std::string doorbell = env::get_string("GPUCOMM_PROXY_DOORBELL", "0");
    if (rt.rank() == 0) {
      std::printf(
          "gpucomm-bench-proxy: %d PE(s) on %s, transport %s, agent %s, ring %s, doorbell %s, %d proxy thread(s)%s\n",
          rt.size(), devices[0].c_str(), info.kind.c_str(), info.agent.c_str(), ring.c_str(), doorbell.c_str(),
          info.proxy_threads, quick ? " (quick)" : "");
    }
    Bench b(rt, quick, max_bytes);
    if (wanted("floors")) b.floors();
    if (wanted("latency")) b.latency();
    if (!only.empty() && wanted("stages")) b.stages();
    if (wanted("rate")) b.rates(info.agent != "none");
    if (wanted("bandwidth")) b.bandwidth();
    if (rt.rank() == 0 && !json.empty()) {
      std::string routes;
      for (auto& r : info.routes) routes += (routes.empty() ? "\"" : ", \"") + r + "\"";
      const std::string extra =
          "\"pes\": " + std::to_string(rt.size()) + ", \"transport\": \"" + info.kind + "\", \"agent\": \"" +
          info.agent + "\", \"ring\": \"" + ring + "\", \"doorbell\": " + doorbell +
          ", \"proxy_threads\": " + std::to_string(info.proxy_threads) +
          ", \"agent_blocks\": " + env::get_string("GPUCOMM_AGENT_BLOCKS", "1") +
          ", \"device_queues\": " + std::to_string(info.device_queues) + ", \"routes\": [" + routes + "]";
      if (!bench::write_json(json, "gpucomm-bench-proxy", GPUCOMM_GIT_COMMIT, cmdline, devices, quick, b.results, {},
                             extra))
        throw std::runtime_error("cannot write " + json);
    }
    rt.barrier_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucomm-bench-proxy: %s\n", e.what());
    return 1;
  }
  return 0;
}
