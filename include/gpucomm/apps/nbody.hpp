#pragma once
// N-Body (docs/APPS.md): all-pairs (O(n^2)) 3-D gravity on n bodies of random mass, fp64, split
// into P equal blocks of n / P bodies, one per PE. Every step the blocks of positions and masses
// travel around a ring of PEs (PE r sends to r + 1 mod P): in stage k = 0..P-1 PE r holds the
// block of PE (r - k) mod P, passes it on to the next PE (pass k + 1) and adds the interactions of
// its own bodies with it; pass P brings every block back to its owner. Then every PE integrates its
// bodies (velocity, then position, a fixed dt). The ring runs all P passes at any P, so a 1-PE run
// passes its block to itself once per step and still exercises the model's communication path.
//
// The compute is the same in every model and in the CPU reference, in a fixed order: for each body,
// the interactions are added by ring stage, then by the index of the other body in its block (the
// body itself included; it adds exactly 0, since the softening eps^2 > 0 keeps r^2 positive). Every
// operation is rounded on its own: the host code is compiled without contraction into fused
// multiply-adds (-ffp-contract=off, src/apps/CMakeLists.txt), the GPU code uses __dadd_rn,
// __dsub_rn, __dmul_rn, __dsqrt_rn, __ddiv_rn (apps/nbody_device.cuh), and IEEE sqrt and division
// are correctly rounded on both. So every model's positions equal the reference bit for bit; there
// is no tolerance.
#include <cstdint>
#include <vector>

#include "gpucomm/apps/catalog.hpp"
#include "gpucomm/apps/run.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::apps {

inline constexpr double kNbodyDt = 1.0 / 1024;  // the time step (exact in binary)
inline constexpr double kNbodyEps2 = 1.0 / 64;  // the softening eps^2 (exact in binary)
inline constexpr uint64_t kNbodyStride = 4;     // a body in a block: x, y, z, mass

// Body g (global index 0..n-1) at the start: x, y, z in [-1, 1) (multiples of 1/4096) and a mass
// in (0, 1] (a multiple of 1/1024); velocities start at 0. Exact in double precision.
inline void nbody_initial(uint64_t g, double* b) {
  b[0] = static_cast<double>((g * 2654435761ull + 17) % 8191) / 4096.0 - 1.0;
  b[1] = static_cast<double>((g * 40503ull + 29) % 8191) / 4096.0 - 1.0;
  b[2] = static_cast<double>((g * 97787ull + 53) % 8191) / 4096.0 - 1.0;
  b[3] = static_cast<double>((g * 48271ull + 7) % 1024 + 1) / 1024.0;
}

// Bodies per PE: n / pes. Raises Errc::invalid_argument naming --sizes when n is smaller than the
// number of PEs or not a multiple of it.
uint64_t nbody_per_pe(uint64_t n, int pes);

// PE `rank`'s initial block, nb bodies of kNbodyStride doubles.
std::vector<double> nbody_initial_part(int rank, uint64_t nb);

// The host compute, the same in every model and in the reference (compiled without FMA
// contraction): adds to acc[3 * i ..] the interactions of own body i (i < nb) with the held
// block's bodies 0..nh-1 in index order.
void nbody_accumulate(const double* own, uint64_t nb, const double* held, uint64_t nh, double* acc);
// Integrates nb bodies: v += a * dt, then x += v * dt (per coordinate); zeroes acc.
void nbody_integrate(double* own, double* vel, double* acc, uint64_t nb);
// The checked value of a block: the sum over its bodies, in index order, of (x + y) + z.
double nbody_checksum(const double* own, uint64_t nb);

// The CPU reference of `steps` steps of n bodies on `pes` PEs (the ring's order depends on P): the
// whole system computed on this PE (on several threads, each one the owner of a range of bodies, so
// the result does not depend on their number), kept for the next call with the same arguments.
struct NbodyReference {
  int pes = 0;
  uint64_t n = 0;
  int steps = 0;
  std::vector<double> checksum;  // [steps][pes]: each PE's block's checksum after each step
  std::vector<double> bodies;    // n * kNbodyStride after the last step
  double value = 0;              // the checksums of the last step summed in rank order
};
const NbodyReference& nbody_reference(int pes, uint64_t n, int steps);

// Counts the steps whose checksum differs from the reference (the PE `corrupt_rank` adds 1 to each).
int nbody_check_step(const NbodyReference& ref, int rank, int step, double checksum, int corrupt_rank);
// The bodies of PE `rank`'s final block whose position differs from the reference; the PE
// `corrupt_rank` adds 1 to the x of its first body before comparing.
uint64_t nbody_wrong_bodies(const NbodyReference& ref, int rank, const double* own, int corrupt_rank);
// The run's value: every PE's final checksum (plus 1 on `corrupt_rank`), all-gathered through the
// bootstrap store after the timed steps and summed in rank order. Collective over the world.
double nbody_value(Runtime& rt, double checksum, int corrupt_rank);

// Tests: when cfg.dump_dir is set, PE `rank` writes its final positions (nb x 3 doubles: x, y, z,
// native byte order) to DIR/nbody-MODEL-N-RANK.f64.
void nbody_dump(const RunConfig& cfg, Model model, int rank, const double* own, uint64_t nb);

// Host-memory PEs: the models marked done for host PEs in the catalog. Collective over the world.
RunResult nbody_host(Runtime& rt, Model model, const RunConfig& cfg);
// GPU PEs: the models marked done for GPU PEs. Collective over the world. Raises
// Errc::unsupported in a build without CUDA kernels.
RunResult nbody_gpu(Runtime& rt, Model model, const RunConfig& cfg);

}  // namespace gpucomm::apps
