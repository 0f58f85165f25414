// gpucomm-bench-msg-mpi: the Open MPI baseline of `gpucomm bench msg --anchors` (docs/MESSAGING.md,
// "Benchmarks"): messages between GPU buffers through host staging, as an MPI without CUDA support
// moves them: cudaMemcpy to pinned host memory, MPI_Send / MPI_Recv, cudaMemcpy back to the GPU.
//   mpirun --allow-run-as-root --oversubscribe -np N gpucomm-bench-msg-mpi [--quick] [--json FILE]
// N = 1: a rank messages itself (MPI_Sendrecv to itself between the two copies); N = 2: rank r on
// GPU r, a ping-pong. Results (median over trials, MPI_Wtime around many iterations):
//   mpi_staging_rt  8-byte round trip, us (1 rank: two messages to itself)
//   mpi_staging_us  per message at 1, 4 and 16 MB, us (1 rank: back-to-back messages to itself;
//                   2 ranks: half the round trip of a ping-pong of that size)
// Every received byte of the last message of each size is checked. Writes the JSON schema of the
// other benchmark programs (bench/rma/results.hpp), "ranks" beside it.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "../rma/results.hpp"

#ifndef GPUCOMM_GIT_COMMIT
#define GPUCOMM_GIT_COMMIT "unknown"
#endif

namespace {

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct Staging {
  int rank = 0, ranks = 1;
  char* dev_out = nullptr;  // the GPU buffers a message leaves from and lands in
  char* dev_in = nullptr;
  char* host_out = nullptr;  // pinned staging buffers
  char* host_in = nullptr;

  // One message of `n` bytes from this rank's dev_out to `peer`'s dev_in (peer == rank: itself).
  void send(size_t n, int peer) const {
    ck(cudaMemcpy(host_out, dev_out, n, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    if (peer == rank) {
      MPI_Sendrecv(host_out, static_cast<int>(n), MPI_BYTE, rank, 1, host_in, static_cast<int>(n), MPI_BYTE, rank, 1,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ck(cudaMemcpy(dev_in, host_in, n, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    } else {
      MPI_Send(host_out, static_cast<int>(n), MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    }
  }
  void recv(size_t n, int peer) const {
    MPI_Recv(host_in, static_cast<int>(n), MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ck(cudaMemcpy(dev_in, host_in, n, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  // One round trip of `n` bytes: rank 0 pings rank 1 (or itself twice), which answers.
  void round_trip(size_t n) const {
    if (ranks == 1) {
      send(n, 0);
      send(n, 0);
    } else if (rank == 0) {
      send(n, 1);
      recv(n, 1);
    } else if (rank == 1) {
      recv(n, 0);
      send(n, 0);
    }
  }
};

// Median over `trials` of the time per iteration (us) of `iters` calls of `f`, after a warm-up.
template <class F>
bench::Result time_it(const char* name, size_t bytes, int ranks, int trials, int iters, double scale, F f) {
  bench::Result r{name, "ranks=" + std::to_string(ranks), bytes, 1, "us", {}};
  for (int t = 0; t <= trials; ++t) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) f();
    const double us = (MPI_Wtime() - t0) * 1e6 / iters * scale;
    if (t > 0) r.samples.push_back(us);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  bool quick = false;
  std::string json, cmdline;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else {
      std::fprintf(stderr, "usage: mpirun -np 1|2 gpucomm-bench-msg-mpi [--quick] [--json FILE]\n");
      MPI_Finalize();
      return 2;
    }
  }
  int rc = 0;
  try {
    Staging s;
    MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s.ranks);
    if (s.ranks > 2) throw std::runtime_error("run on 1 or 2 ranks");
    int gpus = 0;
    ck(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
    if (gpus == 0) throw std::runtime_error("no GPU");
    ck(cudaSetDevice(s.rank % gpus), "cudaSetDevice");
    cudaDeviceProp prop{};
    ck(cudaGetDeviceProperties(&prop, s.rank % gpus), "cudaGetDeviceProperties");
    const size_t max = size_t(16) << 20;
    ck(cudaMalloc(reinterpret_cast<void**>(&s.dev_out), max), "cudaMalloc");
    ck(cudaMalloc(reinterpret_cast<void**>(&s.dev_in), max), "cudaMalloc");
    ck(cudaMallocHost(reinterpret_cast<void**>(&s.host_out), max), "cudaMallocHost");
    ck(cudaMallocHost(reinterpret_cast<void**>(&s.host_in), max), "cudaMallocHost");
    std::vector<unsigned char> pattern(max), back(max);
    for (size_t i = 0; i < max; ++i) pattern[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    ck(cudaMemcpy(s.dev_out, pattern.data(), max, cudaMemcpyHostToDevice), "cudaMemcpy");
    const int trials = quick ? 5 : 11;
    std::vector<bench::Result> results;
    results.push_back(time_it("mpi_staging_rt", 8, s.ranks, trials, quick ? 200 : 2000, 1.0, [&] { s.round_trip(8); }));
    for (size_t mb : {size_t(1), size_t(4), size_t(16)}) {
      const size_t n = mb << 20;
      const int reps = quick ? 4 : 16;
      ck(cudaMemset(s.dev_in, 0, n), "cudaMemset");
      if (s.ranks == 1) {
        results.push_back(time_it("mpi_staging_us", n, 1, trials, reps, 1.0, [&] { s.send(n, 0); }));
      } else {
        results.push_back(time_it("mpi_staging_us", n, 2, trials, reps, 0.5, [&] { s.round_trip(n); }));
      }
      ck(cudaMemcpy(back.data(), s.dev_in, n, cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (std::memcmp(back.data(), pattern.data(), n) != 0)
        throw std::runtime_error(std::to_string(mb) + " MB: the received bytes differ from the sent ones");
    }
    if (s.rank == 0) {
      for (const auto& r : results)
        std::printf("  %-16s %-8s %10zu B: %10.3f us\n", r.name.c_str(), r.level.c_str(), r.bytes, r.median());
      const std::vector<std::string> devices{std::string(prop.name) + " (GPU " + std::to_string(s.rank % gpus) + ")"};
      if (!json.empty() && !bench::write_json(json, "gpucomm-bench-msg-mpi", GPUCOMM_GIT_COMMIT, cmdline, devices,
                                              quick, results, {}, "\"ranks\": " + std::to_string(s.ranks)))
        throw std::runtime_error("cannot write " + json);
    }
    (void)cudaFreeHost(s.host_in);
    (void)cudaFreeHost(s.host_out);
    (void)cudaFree(s.dev_in);
    (void)cudaFree(s.dev_out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucomm-bench-msg-mpi: %s\n", e.what());
    rc = 1;
  }
  if (rc != 0) MPI_Abort(MPI_COMM_WORLD, rc);
  MPI_Finalize();
  return rc;
}
