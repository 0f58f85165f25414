// The NVSHMEM counterparts of gpucomm-bench-rma's headline measurements, for side-by-side
// ratios: int p ping-pong, putmem_signal ping-pong (one thread), putmem_nbi_block bandwidth
// over a CTA sweep, and barrier_all. Started by build_and_run.sh under `gpucomm run -n 2`:
// rank and size come from GPUCOMM_RANK/GPUCOMM_SIZE, the GPU from GPUCOMM_DEVICE_ID, and the
// NVSHMEM unique id travels through the file named by NVSHMEM_BENCH_UID_FILE. Writes JSON in
// gpucomm-bench-rma's schema (bench/rma/results.hpp).
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../rma/results.hpp"

#define CK(call)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #call, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

__global__ void k_p_pingpong(int* flag, int iters, int base) {
  const int me = nvshmem_my_pe(), peer = 1 - me;
  for (int i = 1; i <= iters; ++i) {
    const int v = base + i;
    if (me == 0) {
      nvshmem_int_p(flag, v, peer);
      nvshmem_int_wait_until(flag, NVSHMEM_CMP_GE, v);
    } else {
      nvshmem_int_wait_until(flag, NVSHMEM_CMP_GE, v);
      nvshmem_int_p(flag, v, peer);
    }
  }
}

__global__ void k_putmem_signal_pingpong(char* buf, const char* src, size_t bytes, uint64_t* sig, int iters,
                                         uint64_t base) {
  const int me = nvshmem_my_pe(), peer = 1 - me;
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (me == 0) {
      nvshmem_putmem_signal_nbi(buf, src, bytes, sig, v, NVSHMEM_SIGNAL_SET, peer);
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
    } else {
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
      nvshmem_putmem_signal_nbi(buf, src, bytes, sig, v, NVSHMEM_SIGNAL_SET, peer);
    }
  }
}

__global__ void k_put_block_bw(char* dst, const char* src, size_t bytes, int reps, int peer) {
  size_t chunk = ((bytes + gridDim.x - 1) / gridDim.x + 15) & ~size_t(15);
  size_t begin = blockIdx.x * chunk;
  if (begin < bytes) {
    size_t len = bytes - begin < chunk ? bytes - begin : chunk;
    for (int r = 0; r < reps; ++r) nvshmemx_putmem_nbi_block(dst + begin, src + begin, len, peer);
  }
  nvshmem_quiet();
}

__global__ void k_barrier(int iters) {
  for (int i = 0; i < iters; ++i) nvshmem_barrier_all();
}

int main(int argc, char** argv) {
  bool quick = false;
  std::string json, cmdline;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "--json" && i + 1 < argc)
      json = argv[++i];
  }
  const char* r = std::getenv("GPUCOMM_RANK");
  const char* n = std::getenv("GPUCOMM_SIZE");
  const char* uid_file = std::getenv("NVSHMEM_BENCH_UID_FILE");
  if (!r || !n || !uid_file) {
    std::fprintf(stderr, "run under `gpucomm run -n 2` with NVSHMEM_BENCH_UID_FILE set (see build_and_run.sh)\n");
    return 2;
  }
  const int rank = std::atoi(r), size = std::atoi(n);
  const char* dev = std::getenv("GPUCOMM_DEVICE_ID");
  CK(cudaSetDevice(dev ? std::atoi(dev) : rank));

  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0) {
    nvshmemx_get_uniqueid(&id);
    std::string tmp = std::string(uid_file) + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof id);
    std::rename(tmp.c_str(), uid_file);
  } else {
    for (int i = 0; i < 6000; ++i) {
      std::ifstream f(uid_file, std::ios::binary);
      if (f && f.read(reinterpret_cast<char*>(&id), sizeof id)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attr);
  nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
  if (nvshmem_n_pes() != 2) {
    std::fprintf(stderr, "needs exactly 2 PEs\n");
    return 2;
  }
  const size_t kMax = size_t(256) << 20;
  char* sym = static_cast<char*>(nvshmem_malloc(kMax));
  uint64_t* sig = static_cast<uint64_t*>(nvshmem_calloc(16, sizeof(uint64_t)));
  int* iflag = static_cast<int*>(nvshmem_calloc(16, sizeof(int)));
  char* local = nullptr;
  CK(cudaMalloc(&local, kMax));
  CK(cudaMemset(local, 0x5A, kMax));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int trials = quick ? 5 : 15;
  std::vector<bench::Result> results;
  uint64_t base = 0;

  auto timed = [&](int who, auto launch) {
    nvshmemx_barrier_all_on_stream(s);
    CK(cudaStreamSynchronize(s));
    float ms = 0;
    if (who & (1 << rank)) {
      CK(cudaEventRecord(e0, s));
      launch();
      CK(cudaGetLastError());
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      CK(cudaEventElapsedTime(&ms, e0, e1));
    }
    return static_cast<double>(ms);
  };
  auto measure = [&](bench::Result res, int who, auto launch, auto value) {
    timed(who, launch);
    for (int t = 0; t < trials; ++t) res.samples.push_back(value(timed(who, launch)));
    if (rank == 0)
      std::printf("  %-22s %-11s %10zu B %4d CTAs: %10.3f %s\n", res.name.c_str(), res.level.c_str(), res.bytes,
                  res.ctas, res.median(), res.unit.c_str());
    results.push_back(res);
  };

  const int iters = quick ? 2000 : 10000;
  measure(
      bench::Result{"p_pingpong", "thread", 4, 1, "us", {}}, 3,
      [&] {
        k_p_pingpong<<<1, 1, 0, s>>>(iflag, iters, static_cast<int>(base));
        base += static_cast<uint64_t>(iters);
      },
      [&](double ms) { return ms * 1e3 / (2.0 * iters); });
  for (size_t b : quick ? std::vector<size_t>{8, 4096, 65536} : std::vector<size_t>{8, 64, 512, 4096, 32768, 65536}) {
    const int it = iters / (b > 4096 ? 10 : 1);
    measure(
        bench::Result{"put_signal_pingpong", "thread", b, 1, "us", {}}, 3,
        [&] {
          k_putmem_signal_pingpong<<<1, 1, 0, s>>>(sym, local, b, sig, it, base);
          base += static_cast<uint64_t>(it);
        },
        [&](double ms) { return ms * 1e3 / (2.0 * it); });
  }
  const std::vector<int> sweep =
      quick ? std::vector<int>{1, 8, 32, 132} : std::vector<int>{1, 2, 4, 8, 16, 32, 64, 132};
  for (size_t b : {size_t(64) << 10, size_t(1) << 20, size_t(16) << 20, kMax})
    for (int ctas : sweep) {
      const int reps =
          static_cast<int>(std::max<size_t>(1, std::min<size_t>(quick ? 200 : 1000, (size_t(64) << 20) / b)));
      measure(
          bench::Result{"put_bw", "block", b, ctas, "GB/s", {}}, 1,
          [&] { k_put_block_bw<<<ctas, 512, 0, s>>>(sym, local, b, reps, 1 - rank); },
          [&](double ms) { return ms > 0 ? static_cast<double>(b) * reps / (ms * 1e6) : 0.0; });
    }
  const int biters = quick ? 2000 : 20000;
  measure(
      bench::Result{"barrier_all", "thread", 0, 1, "us", {}}, 3, [&] { k_barrier<<<1, 1, 0, s>>>(biters); },
      [&](double ms) { return ms * 1e3 / biters; });

  if (rank == 0 && !json.empty()) {
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, dev ? std::atoi(dev) : rank));
#ifdef NVSHMEM_VENDOR_MAJOR_VERSION
    std::string v = "NVSHMEM " + std::to_string(NVSHMEM_VENDOR_MAJOR_VERSION) + "." +
                    std::to_string(NVSHMEM_VENDOR_MINOR_VERSION) + "." + std::to_string(NVSHMEM_VENDOR_PATCH_VERSION);
#else
    std::string v = "NVSHMEM";
#endif
    if (!bench::write_json(json, "nvshmem-bench (" + v + ")", "n/a", cmdline, {prop.name}, quick, results, {})) {
      std::fprintf(stderr, "cannot write %s\n", json.c_str());
      return 1;
    }
  }
  nvshmem_barrier_all();
  nvshmem_free(iflag);
  nvshmem_free(sig);
  nvshmem_free(sym);
  nvshmem_finalize();
  return 0;
}
