#pragma once
// RandomAccess (docs/APPS.md), after the HPC Challenge benchmark: a distributed table of 64-bit
// words, n = 2^k words per PE (global size G = P * n), word i of the global table initialised to i.
// Every PE draws updates from its own stretch of the HPCC 64-bit LFSR stream (polynomial 0x7);
// update `ran` XORs `ran` into global word ran mod G (= ran & (G - 1), HPCC's index, when P is a
// power of two), which PE (ran mod G) / n owns at local index ran & (n - 1). XOR commutes, so when
// every update is applied exactly once the table equals the serial reference bit for bit, whatever
// the order.
//
// Per step each PE makes n / 4 updates (kRaUpdatesDiv). The bucketed host-PE models gather updates
// per destination PE and send a bucket when it holds kRaBucket (1024, HPCC's look-ahead limit)
// updates, and the rest at the end of the step (the GPU models send one list per owner and step); a
// step ends when every PE's updates of the step are applied.
#include <cstdint>
#include <string>
#include <vector>

#include "gpucomm/apps/catalog.hpp"
#include "gpucomm/apps/run.hpp"
#include "gpucomm/runtime/runtime.hpp"

#if defined(__CUDACC__)
#define GPUCOMM_RA_HD __host__ __device__ __forceinline__
#else
#define GPUCOMM_RA_HD inline
#endif

namespace gpucomm::apps {

inline constexpr uint64_t kRaPoly = 0x7;                       // HPCC's POLY
inline constexpr uint64_t kRaPeriod = 1317624576693539401ULL;  // HPCC's PERIOD
inline constexpr uint32_t kRaBucket = 1024;                    // updates per bucket at most
inline constexpr uint64_t kRaUpdatesDiv = 4;                   // updates per PE and step: n / 4

// One step of the HPCC stream: ran = (ran << 1) ^ (ran < 0 as int64 ? POLY : 0).
GPUCOMM_RA_HD constexpr uint64_t ra_next(uint64_t ran) {
  return (ran << 1) ^ ((ran >> 63) != 0 ? kRaPoly : 0);
}

// HPCC_starts(n): element n of the stream that starts at 1 (ra_next applied n times to 1), in
// O(log n) by squaring in GF(2)[x] modulo the polynomial, as the HPCC reference code does.
GPUCOMM_RA_HD constexpr uint64_t ra_starts(uint64_t n) {
  n %= kRaPeriod;
  if (n == 0) return 1;
  uint64_t m2[64] = {};
  uint64_t temp = 1;
  for (int i = 0; i < 64; ++i) {
    m2[i] = temp;
    temp = ra_next(ra_next(temp));
  }
  int i = 62;
  for (; i >= 0; --i)
    if ((n >> i) & 1) break;
  uint64_t ran = 2;
  while (i > 0) {
    temp = 0;
    for (int j = 0; j < 64; ++j)
      if ((ran >> j) & 1) temp ^= m2[j];
    ran = temp;
    i -= 1;
    if ((n >> i) & 1) ran = ra_next(ran);
  }
  return ran;
}

// The run's shape: P PEs of n = 2^k words, `steps` steps of `per_step` updates per PE.
struct RaShape {
  int pes = 0;
  uint64_t n = 0;  // words per PE, a power of two
  int steps = 0;
  GPUCOMM_RA_HD uint64_t per_step() const { return n / kRaUpdatesDiv; }
  GPUCOMM_RA_HD uint64_t global() const { return n * static_cast<uint64_t>(pes); }
  // The stream element PE `rank` starts from before step `step` (1-based): PE r owns elements
  // r * steps * per_step + 1 ... of the stream, step by step; each update first advances.
  GPUCOMM_RA_HD uint64_t start(int rank, uint64_t step) const {
    return ra_starts((static_cast<uint64_t>(rank) * static_cast<uint64_t>(steps) + (step - 1)) * per_step());
  }
  GPUCOMM_RA_HD int owner(uint64_t ran) const { return static_cast<int>((ran % global()) / n); }
  GPUCOMM_RA_HD uint64_t local(uint64_t ran) const { return ran & (n - 1); }
};

// The checked value of a step: the XOR of every word of the global table, shifted right by 11 bits
// (its top 53 bits, exact as a double).
inline double ra_value(uint64_t table_xor) {
  return static_cast<double>(table_xor >> 11);
}

// The CPU reference: the whole global table updated serially, and the table's XOR after every step.
struct RaReference {
  RaShape shape;
  std::vector<uint64_t> table;     // [G] after the last step
  std::vector<uint64_t> step_xor;  // [steps]: the global table's XOR after each step
};
const RaReference& ra_reference(int pes, uint64_t n, int steps);

// The check of a PE's final table against the reference: the words that differ. The PE
// `corrupt_rank` flips bit 0 of its word 0 before comparing (tests: the check must fail).
uint64_t ra_wrong_cells(const RaReference& ref, int rank, const uint64_t* part, int corrupt_rank);

// Tests: when cfg.dump_dir is set, PE `rank` writes its final table (n words, native byte order) to
// DIR/random_access-MODEL-N-RANK.u64.
void ra_dump(const RunConfig& cfg, Model model, int rank, const uint64_t* part);

// The program's self-check (gpucomm-apps selftest): ra_starts(m) against m steps of ra_next.
// Returns the first m that differs, or -1.
int64_t ra_selftest();

// Host-memory PEs: the models marked done for host PEs in the catalog. Collective over the world.
RunResult random_access_host(Runtime& rt, Model model, const RunConfig& cfg);
// GPU PEs. Collective over the world. Raises Errc::unsupported in a build without CUDA kernels.
RunResult random_access_gpu(Runtime& rt, Model model, const RunConfig& cfg);

}  // namespace gpucomm::apps
