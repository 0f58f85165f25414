// gpucomm-bench-pingpong: one-way latency between every pair of PEs, on GPU PEs (kernels
// storing into each other's memory) or host-memory PEs (symmetric heap in shared memory).
// Run under a launcher: gpucomm run -n N -- gpucomm-bench-pingpong [--sizes 0,8,1024] [--json F]
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "pingpong.hpp"

using namespace gpucomm;
using namespace gpucomm::bench;

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: gpucomm-bench-pingpong [--sizes B1,B2,...] [--iters N] [--samples N] [--json FILE] [--quick]\n"
               "  One-way latency (half a round trip) between every pair of PEs; run it under `gpucomm run -n N`.\n"
               "  --sizes    payload bytes per message (default 8,1024,65536; 0 = flag only)\n"
               "  --iters    round trips per sample (default 1000)\n"
               "  --samples  samples; the median is reported (default 7)\n"
               "  --json     write results as JSON to FILE (rank 0)\n"
               "  --quick    fewer iterations\n");
}

// The decimal integer `text` (all of it) given for `what`; anything else raises an error naming it.
int parse_int(const std::string& text, const std::string& what) {
  int v = 0;
  const char* end = text.data() + text.size();
  if (auto [stop, ec] = std::from_chars(text.data(), end, v); ec != std::errc() || stop != end)
    raise_arg("gpucomm-bench-pingpong", what, "'" + text + "' is not an integer");
  return v;
}

std::vector<size_t> parse_sizes(const std::string& s) {
  std::vector<size_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end) raise_arg("gpucomm-bench-pingpong", "--sizes", "'" + item + "' is not a byte count");
    out.push_back(static_cast<size_t>(v));
  }
  return out;
}

std::string iso_now() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  PingPongConfig cfg;
  cfg.sizes = {8, 1024, 65536};
  std::string json;
  std::string cmdline;
  for (int i = 0; i < argc; ++i) cmdline.append(i ? " " : "").append(argv[i]);  // appends: GCC 12 -O3 -Wrestrict
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto next = [&](const char* name) -> std::string {
        if (i + 1 >= argc) raise_arg("gpucomm-bench-pingpong", name, "needs a value");
        return argv[++i];
      };
      if (a == "--sizes") {
        cfg.sizes = parse_sizes(next("--sizes"));
      } else if (a == "--iters") {
        cfg.iters = parse_int(next("--iters"), "--iters");
      } else if (a == "--samples") {
        cfg.samples = parse_int(next("--samples"), "--samples");
      } else if (a == "--json") {
        json = next("--json");
      } else if (a == "--quick") {
        cfg.iters = 200;
        cfg.samples = 5;
      } else if (a == "-h" || a == "--help") {
        usage(stdout);
        return 0;
      } else {
        raise_arg("gpucomm-bench-pingpong", a, "unknown option (see --help)");
      }
    }
    if (cfg.iters < 2) raise_arg("gpucomm-bench-pingpong", "--iters", "must be at least 2");
    if (cfg.samples < 1) raise_arg("gpucomm-bench-pingpong", "--samples", "must be at least 1");

    Runtime rt;
    const bool gpu = rt.pe_kind() == PeKind::gpu;
#ifndef GPUCOMM_PINGPONG_GPU
    if (gpu)
      raise(Errc::unsupported, "gpucomm-bench-pingpong", "built without CUDA kernels; run with GPUCOMM_DEVICE=host");
#endif
    std::vector<int> devices;
    for (const auto& d : rt.bootstrap().allgather(std::to_string(rt.device_id())))
      devices.push_back(parse_int(d, "device id of a PE"));
    if (rt.rank() == 0) {
      std::printf("ping-pong between %d PEs: %s\n", rt.size(),
                  gpu ? "GPU PEs (kernels storing into peer GPU memory)" : "host-memory PEs (no GPU used)");
      if (rt.size() < 2) std::printf("only one PE: nothing to ping-pong with (start more with gpucomm run -n N)\n");
      std::fflush(stdout);
    }
    std::vector<PingPongResult> res;
#ifdef GPUCOMM_PINGPONG_GPU
    res = gpu ? gpu_pingpong(rt, cfg) : host_pingpong(rt, cfg);
#else
    res = host_pingpong(rt, cfg);
#endif
    // Rank 0 collects every pair's result.
    std::string mine;
    for (const auto& r : res) {
      char line[128];
      std::snprintf(line, sizeof line, "%d %d %zu %.6f\n", r.a, r.b, r.bytes, r.median_us);
      mine += line;
    }
    auto all = rt.bootstrap().allgather(mine);
    if (rt.rank() == 0) {
      std::printf("%6s %6s %10s %14s %s\n", "from", "to", "bytes", "one-way (us)", "");
      std::ostringstream js;
      js << "{\n  \"benchmark\": \"pingpong\",\n  \"date\": \"" << iso_now() << "\",\n  \"command\": \"" << cmdline
         << "\",\n  \"pe_kind\": \"" << (gpu ? "gpu" : "host") << "\",\n  \"pes\": " << rt.size()
         << ",\n  \"iters\": " << cfg.iters << ",\n  \"samples\": " << cfg.samples << ",\n  \"results\": [";
      bool first = true;
      for (const auto& part : all) {
        std::istringstream in(part);
        int a, b;
        size_t bytes;
        double us;
        while (in >> a >> b >> bytes >> us) {
          bool shared = gpu && devices[static_cast<size_t>(a)] == devices[static_cast<size_t>(b)];
          std::printf("%6d %6d %10zu %14.3f %s\n", a, b, bytes, us,
                      shared ? "(one GPU, time-sliced: not a latency)" : "");
          js << (first ? "\n" : ",\n") << "    {\"a\": " << a << ", \"b\": " << b << ", \"bytes\": " << bytes
             << ", \"one_way_us\": " << us << ", \"shared_gpu\": " << (shared ? "true" : "false") << "}";
          first = false;
        }
      }
      js << "\n  ]\n}\n";
      if (!json.empty()) {
        std::ofstream f(json);
        if (!f) raise_arg("gpucomm-bench-pingpong", "--json", "cannot write " + json);
        f << js.str();
      }
    }
    rt.barrier_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucomm-bench-pingpong: %s\n", e.what());
    return 1;
  }
  return 0;
}
