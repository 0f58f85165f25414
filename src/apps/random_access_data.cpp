// RandomAccess: the CPU reference, the check of a PE's table and the self-check of the stream.
#include <fstream>
#include <string>

#include "gpucomm/apps/random_access.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {

const RaReference& ra_reference(int pes, uint64_t n, int steps) {
  static RaReference ref;
  if (ref.shape.pes == pes && ref.shape.n == n && ref.shape.steps == steps) return ref;
  const RaShape sh{pes, n, steps};
  const uint64_t g = sh.global();
  ref.table.resize(g);
  uint64_t x = 0;
  for (uint64_t i = 0; i < g; ++i) {
    ref.table[i] = i;
    x ^= i;
  }
  ref.step_xor.assign(static_cast<size_t>(steps), 0);
  // Every PE's updates of a step in turn: the order does not matter (XOR commutes).
  for (int s = 1; s <= steps; ++s) {
    for (int r = 0; r < pes; ++r) {
      uint64_t ran = sh.start(r, static_cast<uint64_t>(s));
      for (uint64_t u = 0; u < sh.per_step(); ++u) {
        ran = ra_next(ran);
        ref.table[ran % g] ^= ran;
        x ^= ran;
      }
    }
    ref.step_xor[static_cast<size_t>(s - 1)] = x;
  }
  ref.shape = sh;
  return ref;
}

uint64_t ra_wrong_cells(const RaReference& ref, int rank, const uint64_t* part, int corrupt_rank) {
  const uint64_t n = ref.shape.n;
  const uint64_t* want = ref.table.data() + static_cast<uint64_t>(rank) * n;
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t got = part[i];
    if (rank == corrupt_rank && i == 0) got ^= 1;
    if (got != want[i]) ++wrong;
  }
  return wrong;
}

void ra_dump(const RunConfig& cfg, Model model, int rank, const uint64_t* part) {
  if (cfg.dump_dir.empty()) return;
  const std::string path = cfg.dump_dir + "/random_access-" + model_name(model) + "-" + std::to_string(cfg.size) + "-" +
                           std::to_string(rank) + ".u64";
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(part), static_cast<std::streamsize>(cfg.size * sizeof(uint64_t)));
  if (!f) raise_arg("gpucomm-apps", "--dump-grid", "cannot write " + path);
}

int64_t ra_selftest() {
  // Every m below 5000 against the stream stepped m times, then a few large jumps against
  // ra_starts of their parts (starts(a + b) = b steps from starts(a)).
  uint64_t ran = 1;
  for (int64_t m = 0; m < 5000; ++m) {
    if (ra_starts(static_cast<uint64_t>(m)) != ran) return m;
    ran = ra_next(ran);
  }
  for (uint64_t a : {uint64_t(1) << 20, uint64_t(123456789), kRaPeriod - 3}) {
    uint64_t r = ra_starts(a);
    for (int b = 1; b <= 1000; ++b) {
      r = ra_next(r);
      if (ra_starts(a + static_cast<uint64_t>(b)) != r) return static_cast<int64_t>(a) + b;
    }
  }
  static_assert(ra_starts(0) == 1 && ra_starts(1) == 2 && ra_starts(64) == ra_next(ra_starts(63)));
  return -1;
}

}  // namespace gpucomm::apps
