#pragma once
// What the in-kernel collective anchors (nvshmem_coll.cu, nccl_device_coll.cu) share: the job from
// `gpucomm run` (GPUCOMM_RANK, GPUCOMM_SIZE, GPUCOMM_DEVICE_ID), the exchange of the library's
// unique id through a file, the options, the timing (CUDA events around one kernel of `iters`
// back-to-back operations, `samples` times; per operation the median), and the JSON report. Only
// the CUDA runtime and the C++ library: these programs are built outside gpucomm's build
// (build.sh), against the NVSHMEM and NCCL of the Python site-packages.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace anchor {

#define ANCHOR_CUDA(call)                                                                                 \
  do {                                                                                                    \
    cudaError_t e_ = (call);                                                                              \
    if (e_ != cudaSuccess) {                                                                              \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                                       \
    }                                                                                                     \
  } while (0)

struct Options {
  std::string json;
  std::vector<size_t> sizes{8, 64, 1024, 16384};  // bytes of f32 per PE (allreduce)
  int iters = 1000;                               // operations per timed kernel
  int samples = 10;                               // timed kernels (the median is reported)
  unsigned threads = 256;                         // one block of this many threads
  std::string cmdline;
};

inline Options parse(int argc, char** argv, const char* usage) {
  Options o;
  for (int i = 0; i < argc; ++i) o.cmdline += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n%s", a.c_str(), usage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--json") {
      o.json = next();
    } else if (a == "--sizes") {
      o.sizes.clear();
      std::string list = next();
      for (size_t at = 0; at < list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        o.sizes.push_back(std::strtoull(list.substr(at, comma - at).c_str(), nullptr, 10));
        at = comma + 1;
      }
    } else if (a == "--iters") {
      o.iters = std::atoi(next().c_str());
    } else if (a == "--samples") {
      o.samples = std::atoi(next().c_str());
    } else if (a == "--threads") {
      o.threads = static_cast<unsigned>(std::atoi(next().c_str()));
    } else {
      std::fprintf(stderr, "unknown option %s\n%s", a.c_str(), usage);
      std::exit(2);
    }
  }
  if (o.iters < 1 || o.samples < 1 || o.threads < 32 || o.threads > 1024) {
    std::fprintf(stderr, "--iters and --samples must be at least 1, --threads 32..1024\n%s", usage);
    std::exit(2);
  }
  return o;
}

struct Job {
  int rank = 0, size = 1, device = 0;
};

// The job `gpucomm run` started (a PE per GPU: GPUCOMM_DEVICE_ID, else the rank).
inline Job job_from_env(const char* usage) {
  const char* r = std::getenv("GPUCOMM_RANK");
  const char* n = std::getenv("GPUCOMM_SIZE");
  if (!r || !n) {
    std::fprintf(stderr, "run under `gpucomm run -n N` (GPUCOMM_RANK and GPUCOMM_SIZE are not set)\n%s", usage);
    std::exit(2);
  }
  Job j;
  j.rank = std::atoi(r);
  j.size = std::atoi(n);
  const char* dev = std::getenv("GPUCOMM_DEVICE_ID");
  j.device = dev ? std::atoi(dev) : j.rank;
  ANCHOR_CUDA(cudaSetDevice(j.device));
  return j;
}

// Rank 0 writes `bytes` of `id` into `file` (atomically, by rename); the others read it (60 s).
inline bool exchange_id(void* id, size_t bytes, const char* file, int rank) {
  if (!file || !*file) {
    std::fprintf(stderr, "no file to exchange the unique id through (set the variable build.sh names)\n");
    return false;
  }
  if (rank == 0) {
    const std::string tmp = std::string(file) + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(static_cast<const char*>(id), static_cast<std::streamsize>(bytes));
    return std::rename(tmp.c_str(), file) == 0;
  }
  for (int i = 0; i < 6000; ++i) {
    std::ifstream f(file, std::ios::binary);
    if (f && f.read(static_cast<char*>(id), static_cast<std::streamsize>(bytes))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "rank %d: no unique id in %s after 60 s\n", rank, file);
  return false;
}

struct Row {
  std::string anchor;  // e.g. nvshmem_barrier_all_block
  std::string op;      // barrier or allreduce
  size_t bytes = 0;
  std::vector<double> samples_us;  // per operation
  long long wrong = -1;            // allreduce: result elements that differ (-1: not checked)
};

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Per-operation microseconds of `samples` timed launches (one warm-up first). `launch` enqueues one
// kernel of `iters` operations on `s`; `sync_all` lines the PEs up before each launch.
inline std::vector<double> time_kernel(const Options& o, cudaStream_t s, const std::function<void()>& launch,
                                       const std::function<void()>& sync_all) {
  cudaEvent_t a, b;
  ANCHOR_CUDA(cudaEventCreate(&a));
  ANCHOR_CUDA(cudaEventCreate(&b));
  std::vector<double> out;
  for (int t = 0; t <= o.samples; ++t) {
    sync_all();
    ANCHOR_CUDA(cudaEventRecord(a, s));
    launch();
    ANCHOR_CUDA(cudaGetLastError());
    ANCHOR_CUDA(cudaEventRecord(b, s));
    ANCHOR_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    ANCHOR_CUDA(cudaEventElapsedTime(&ms, a, b));
    if (t > 0) out.push_back(1000.0 * ms / o.iters);
  }
  ANCHOR_CUDA(cudaEventDestroy(a));
  ANCHOR_CUDA(cudaEventDestroy(b));
  return out;
}

inline void print_row(const Row& r) {
  std::printf("  %-34s %-9s %8zu B  %9.3f us/op (min %.3f)%s\n", r.anchor.c_str(), r.op.c_str(), r.bytes,
              median(r.samples_us),
              r.samples_us.empty() ? 0.0 : *std::min_element(r.samples_us.begin(), r.samples_us.end()),
              r.wrong > 0 ? "  WRONG RESULTS" : "");
  std::fflush(stdout);
}

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return o;
}

// The report, rows in the schema of gpucomm.bench.coll_anchors (anchor, bytes, mode, time_us,
// min_us, samples_us) plus op, wrong.
inline bool write_json(const Options& o, const Job& j, const std::string& library, const std::vector<Row>& rows) {
  std::ofstream f(o.json);
  if (!f) return false;
  cudaDeviceProp prop{};
  ANCHOR_CUDA(cudaGetDeviceProperties(&prop, j.device));
  f << "{\n  \"benchmark\": \"coll-device-anchors\",\n  \"library\": \"" << json_escape(library)
    << "\",\n  \"command\": \"" << json_escape(o.cmdline) << "\",\n  \"gpu\": \"" << json_escape(prop.name)
    << "\",\n  \"pes\": " << j.size << ",\n  \"threads\": " << o.threads << ",\n  \"iters\": " << o.iters
    << ",\n  \"samples\": " << o.samples
    << ",\n  \"time\": \"per operation, inside one kernel of iters back-to-back operations (CUDA events); "
       "the median over samples, rank 0's\",\n  \"results\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double mn = r.samples_us.empty() ? 0.0 : *std::min_element(r.samples_us.begin(), r.samples_us.end());
    f << (i ? ",\n    " : "\n    ") << "{\"anchor\": \"" << r.anchor << "\", \"op\": \"" << r.op
      << "\", \"bytes\": " << r.bytes << ", \"mode\": \"kernel\", \"time_us\": " << median(r.samples_us)
      << ", \"min_us\": " << mn << ", \"wrong\": " << r.wrong << ", \"samples_us\": [";
    for (size_t k = 0; k < r.samples_us.size(); ++k) f << (k ? ", " : "") << r.samples_us[k];
    f << "]}";
  }
  f << "\n  ]\n}\n";
  return static_cast<bool>(f);
}

// The rows of a run: printed by rank 0 as they come, written as JSON by rank 0 at the end.
struct Report {
  const Options& o;
  const Job& j;
  std::vector<Row> rows;
  void add(Row r) {
    if (j.rank == 0) print_row(r);
    rows.push_back(std::move(r));
  }
  // Rank 0 writes --json (when given); returns the exit status (1: the file cannot be written).
  int write(const std::string& library) const {
    if (j.rank != 0 || o.json.empty()) return 0;
    if (!write_json(o, j, library, rows)) {
      std::fprintf(stderr, "cannot write %s\n", o.json.c_str());
      return 1;
    }
    std::printf("# wrote %s\n", o.json.c_str());
    return 0;
  }
};

}  // namespace anchor
