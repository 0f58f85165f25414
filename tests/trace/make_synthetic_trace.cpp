// trace_synth DIR ITERATIONS: writes a 4-rank synthetic DUMPI trace (ITERATIONS rounds of
// Irecv/Isend per rank, a Waitall every 8 rounds, an Allreduce every 64) for throughput and
// memory measurements of the trace toolkit (docs/TRACES.md, "Reader throughput").
#include <cstdlib>
#include <iostream>

#include "dumpi_writer.hpp"
#include "pe_check.hpp"

int main(int argc, char** argv) {
  using namespace gpucomm::trace;
  using namespace gpucomm::trace::testing;
  if (argc != 3) {
    std::cerr << "usage: trace_synth DIR ITERATIONS\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int iters = static_cast<int>(gpucomm::testing::arg_int(argv[2], "ITERATIONS"));
  const int n = 4;
  std::filesystem::create_directories(dir);
  write_meta(dir, "synth", n);
  for (int r = 0; r < n; ++r) {
    DumpiWriter w(rank_path(dir, "synth", r));
    int64_t t = 1000LL * 1000000000LL;
    w.init(t, t + 1000);
    t += 10000;
    for (int i = 0; i < iters; ++i, t += 4000) {
      const int peer = (r + 1 + (i % (n - 1))) % n, src = (r + n - 1 - (i % (n - 1))) % n;
      const int64_t skew = static_cast<int64_t>(i % 3) * 500;
      w.irecv(t + skew, t + 100 + skew, 64, 14, src, i & 3, 100 + (i & 7));
      w.isend(t + 200, t + 300, 64, 14, peer, i & 3, 7);
      if ((i & 7) == 7) {
        std::vector<int32_t> reqs;
        reqs.reserve(8);
        for (int k = 0; k < 8; ++k) reqs.push_back(100 + k);
        w.waitall(t + 2000, t + 2500, reqs, {});
      }
      if ((i & 63) == 63) w.allreduce(t + 3000, t + 3500, 1, 14);
    }
    w.finalize(t, t + 1000);
    w.close();
  }
  return 0;
}
