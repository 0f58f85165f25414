// gpucomm-bench-ucx: the UCX transport between 2 host PEs, under `gpucomm run -n 2` with
// GPUCOMM_DEVICE=host (UCX_TLS picks UCX's transports; `gpucomm bench ucx` sets tcp).
//   put latency: ping-pong of put + fence + 8-byte put signal; one-way time = half the round
//     trip, median over the iterations after warm-up.
//   put bandwidth: PE 0 issues a burst of puts to PE 1, then flush(); bandwidth of each burst,
//     median over the bursts (MB/s = 2^20 bytes/s, as ucx_perftest reports).
// While a PE waits it progresses its transport: the target of a put over TCP completes it only
// then. Usage: gpucomm-bench-ucx [--quick] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gpucomm/gpucomm.hpp"
#include "gpucomm/transport/transport.hpp"
#include "polling.hpp"

using namespace gpucomm;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kDataBytes = 32ull << 20;  // put targets: [0, 32 MiB)
constexpr uint64_t kSignal = kDataBytes;      // ping-pong signal word
constexpr uint64_t kStop = kDataBytes + 64;   // end-of-phase word for the bandwidth target

struct Result {
  std::string name;
  uint64_t bytes;
  int iters;
  int warmup;
  int per_iter;  // puts per sample (bandwidth)
  double median, min, max;
  const char* unit;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

uint64_t load_acquire(const char* heap, uint64_t off) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(const_cast<char*>(heap) + off))
      .load(std::memory_order_acquire);
}

class Bench {
 public:
  Bench(Runtime& rt, transport::Remote& r) : rt_(rt), r_(r), heap_(rt.heap().base()), me_(rt.rank()) {}

  // Waits (progressing) until the word at `off` reaches `value`.
  void wait_word(uint64_t off, uint64_t value) {
    transport::ucx::Backoff backoff(false);
    while (load_acquire(heap_, off) < value) backoff.after(r_.progress());
  }

  void barrier() {
    r_.flush();
    transport::ucx::progressing_barrier([this] { return r_.progress(); }, [this] { rt_.bootstrap().barrier(); }, false);
  }

  Result latency(uint64_t bytes, int iters, int warmup) {
    std::vector<char> src(bytes, static_cast<char>(me_ + 1));
    const int peer = 1 - me_;
    std::vector<double> rtt;
    rtt.reserve(static_cast<size_t>(iters));
    barrier();
    for (int i = 0; i < warmup + iters; ++i) {
      const uint64_t v = ++round_;
      const auto t0 = Clock::now();
      if (me_ == 0) {
        send(peer, src.data(), bytes, v);
        wait_word(kSignal, v);
      } else {
        wait_word(kSignal, v);
        send(peer, src.data(), bytes, v);
      }
      if (i >= warmup) rtt.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
    }
    barrier();
    auto [mn, mx] = std::minmax_element(rtt.begin(), rtt.end());
    return {"put_lat", bytes, iters, warmup, 1, median_of(rtt), *mn, *mx, "us"};
  }

  Result bandwidth(uint64_t bytes, int iters, int warmup) {
    const int per_iter = static_cast<int>(std::clamp<uint64_t>((64ull << 20) / bytes, 1, 256));
    std::vector<char> src(bytes, 7);
    std::vector<double> mbs;
    barrier();
    const uint64_t marker = ++round_;
    if (me_ == 0) {
      for (int i = 0; i < warmup + iters; ++i) {
        const auto t0 = Clock::now();
        for (int k = 0; k < per_iter; ++k)
          r_.put(1, (static_cast<uint64_t>(k) * bytes) % (kDataBytes - bytes + 1), src.data(), bytes, {});
        r_.flush();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (i >= warmup) mbs.push_back(static_cast<double>(bytes) * per_iter / s / (1 << 20));
      }
      r_.put(1, kStop, &marker, 8, {});
    } else {
      wait_word(kStop, marker);
    }
    barrier();
    if (mbs.empty()) return {"put_bw", bytes, iters, warmup, per_iter, 0, 0, 0, "MB/s"};
    auto [mn, mx] = std::minmax_element(mbs.begin(), mbs.end());
    return {"put_bw", bytes, iters, warmup, per_iter, median_of(mbs), *mn, *mx, "MB/s"};
  }

 private:
  void send(int peer, const char* src, uint64_t bytes, uint64_t v) {
    r_.put(peer, 0, src, bytes, {});
    r_.fence(peer);
    r_.put(peer, kSignal, &v, 8, {});  // copied: v may go out of scope
  }

  Runtime& rt_;
  transport::Remote& r_;
  char* heap_;
  int me_;
  uint64_t round_ = 0;
};

// Iterations for a size: fewer for large messages.
int iters_for(uint64_t bytes, bool quick, int small) {
  int n = bytes <= 4096 ? small : bytes <= (256 << 10) ? small / 4 : small / 20;
  return std::max(quick ? n / 5 : n, 5);
}

void write_json(const std::string& path, const std::vector<Result>& results, bool quick) {
  std::ofstream f(path);
  const char* tls = std::getenv("UCX_TLS");
  f << "{\n  \"benchmark\": \"ucx\",\n  \"transport\": \"ucx\",\n  \"pes\": 2,\n  \"quick\": "
    << (quick ? "true" : "false") << ",\n  \"ucx_tls\": \"" << (tls ? tls : "") << "\",\n  \"results\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    char line[512];
    std::snprintf(line, sizeof line,
                  "    {\"name\": \"%s\", \"bytes\": %llu, \"iters\": %d, \"warmup\": %d, \"puts_per_iter\": %d, "
                  "\"median\": %.4f, \"min\": %.4f, \"max\": %.4f, \"unit\": \"%s\"}%s\n",
                  r.name.c_str(), static_cast<unsigned long long>(r.bytes), r.iters, r.warmup, r.per_iter, r.median,
                  r.min, r.max, r.unit, i + 1 < results.size() ? "," : "");
    f << line;
  }
  f << "  ]\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else {
      std::fprintf(stderr, "usage: gpucomm-bench-ucx [--quick] [--json FILE]\n");
      return 2;
    }
  }
  try {
    RuntimeOptions opts;
    opts.heap_bytes = kDataBytes + (1 << 20);
    Runtime rt(opts);
    if (rt.size() != 2) raise_arg("gpucomm-bench-ucx", "PEs", "run it on 2 PEs (gpucomm run -n 2)");
    transport::RemoteContext ctx;
    ctx.bootstrap = &rt.bootstrap();
    ctx.rank = rt.rank();
    ctx.size = rt.size();
    ctx.heap_base = rt.heap().base();
    ctx.heap_bytes = rt.heap().size();
    ctx.remote_pes = {rt.rank() == 1, rt.rank() == 0};
    auto remote = transport::open_remote("ucx", ctx);
    Bench b(rt, *remote);
    std::vector<Result> results;
    const std::vector<uint64_t> lat_sizes = {8, 64, 512, 4096, 32768, 262144, 1 << 20};
    const std::vector<uint64_t> bw_sizes = {8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20, 16 << 20};
    results.reserve(lat_sizes.size() + bw_sizes.size());
    const size_t points = lat_sizes.size() + bw_sizes.size();
    // Progress on standard error (the whole run takes seconds to minutes): one line per point.
    auto done = [&](const Result& r) {
      results.push_back(r);
      if (rt.rank() == 0) {
        std::fprintf(stderr, "gpucomm-bench-ucx: [%zu/%zu] %s %llu B: %.3f %s\n", results.size(), points,
                     r.name.c_str(), static_cast<unsigned long long>(r.bytes), r.median, r.unit);
      }
    };
    for (uint64_t s : lat_sizes) done(b.latency(s, iters_for(s, quick, 2000), quick ? 50 : 200));
    for (uint64_t s : bw_sizes) done(b.bandwidth(s, iters_for(s, quick, 100), quick ? 2 : 5));
    if (rt.rank() == 0) {
      std::printf("%-8s %10s %8s %12s %12s\n", "test", "bytes", "iters", "median", "unit");
      for (const Result& r : results) {
        std::printf("%-8s %10llu %8d %12.3f %12s\n", r.name.c_str(), static_cast<unsigned long long>(r.bytes), r.iters,
                    r.median, r.unit);
      }
      if (!json.empty()) write_json(json, results, quick);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucomm-bench-ucx: %s\n", e.what());
    return 1;
  }
  return 0;
}
