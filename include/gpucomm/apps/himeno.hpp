#pragma once
// Himeno (docs/APPS.md): the benchmark of Ryutaro Himeno (RIKEN), Jacobi iterations for the
// pressure Poisson equation on a 3-D grid with a 19-point stencil, in fp32 as the original. Each
// PE owns an N x N x N interior; the PEs are stacked along i (the slowest axis of Himeno's arrays
// p[i][j][k]), which is not periodic: every PE exchanges one ghost plane of p with each i
// neighbour every iteration, and the first and last PE's outer ghost planes are the fixed boundary.
// j and k have fixed boundaries too (points 0 and N + 1, never updated).
//
// The arrays are the benchmark's: p (pressure), the coefficients a[4], b[3], c[3], bnd and the
// source wrk1, all (N + 2)^3 floats per PE, with the standard values everywhere (a0 = a1 = a2 = 1,
// a3 = 1/6, b = 0, c = 1, bnd = 1, wrk1 = 0) and p = ig^2 / (G - 1)^2 at global plane ig (0 .. G - 1,
// G = P N + 2 planes with the two boundary planes: the original's i^2 / (imax - 1)^2), boundaries
// included. One iteration, at every interior point, in the original's order and each operation
// rounded on its own (no fused multiply-add: the host code is compiled with -ffp-contract=off, the
// GPU code uses __fadd_rn and friends), so p equals the CPU reference bit for bit:
//   s0 = a0 p[i+1][j][k] + a1 p[i][j+1][k] + a2 p[i][j][k+1]
//      + b0 (p[i+1][j+1][k] - p[i+1][j-1][k] - p[i-1][j+1][k] + p[i-1][j-1][k])
//      + b1 (p[i][j+1][k+1] - p[i][j-1][k+1] - p[i][j+1][k-1] + p[i][j-1][k-1])
//      + b2 (p[i+1][j][k+1] - p[i-1][j][k+1] - p[i+1][j][k-1] + p[i-1][j][k-1])
//      + c0 p[i-1][j][k] + c1 p[i][j-1][k] + c2 p[i][j][k-1] + wrk1          (left to right)
//   ss = (s0 a3 - p[i][j][k]) bnd;   gosa += ss ss;   wrk2 = p[i][j][k] + omega ss   (omega = 0.8)
// p and wrk2 are two buffers (iteration parity): iteration s reads buffer (s - 1) % 2 and writes
// the other, where the original copies wrk2 back into p; the result is the same.
//
// gosa, the residual the benchmark reports: each PE sums its points' ss ss (each product rounded
// to fp32, the sum in fp64; the original sums in fp32), then the PEs' sums are all-reduced every
// iteration. A sum's order differs between the models and the reference, so gosa is compared with
// the reference within a relative kHimenoGosaTolerance; p does not depend on gosa and is compared
// exactly. 34 floating-point operations per point (the benchmark's count for MFLOPS).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpucomm/apps/catalog.hpp"
#include "gpucomm/apps/rounded_fp.hpp"
#include "gpucomm/apps/run.hpp"
#include "gpucomm/base/hd.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::apps {

inline constexpr float kHimenoOmega = 0.8F;
inline constexpr double kHimenoFlopsPerPoint = 34.0;
// gosa against the reference: |gosa - ref| <= tolerance x ref. Sums of the same non-negative fp64
// terms in any order differ by far less (at most the terms' count x 2^-53 relative).
inline constexpr double kHimenoGosaTolerance = 1e-9;

// The coefficients at one point, in the order of the arrays (kHimenoFields of them per point).
struct HimenoCoef {
  float a0, a1, a2, a3, b0, b1, b2, c0, c1, c2, bnd, wrk1;
};
inline constexpr int kHimenoFields = 12;
// The standard setup: every point holds these (the original's initmt).
inline constexpr HimenoCoef kHimenoCoef = {
    1.0F, 1.0F, 1.0F, static_cast<float>(1.0 / 6.0), 0.0F, 0.0F, 0.0F, 1.0F, 1.0F, 1.0F, 1.0F, 0.0F};
// Field f's standard value (f in [0, kHimenoFields), the order of HimenoCoef).
float himeno_coef_value(int f);

// The 19 values of p one point reads, named by their offsets (z: plane i, y: row j, x: column k;
// p: +1, m: -1, an axis not named: 0): zp = p[i+1][j][k], zm_yp = p[i-1][j+1][k].
struct HimenoStencil {
  float c;                           // p[i][j][k]
  float zp, yp, xp, zm, ym, xm;      // the six neighbours: p[i+1][j][k] ... p[i][j][k-1]
  float zp_yp, zp_ym, zm_yp, zm_ym;  // b0's
  float yp_xp, ym_xp, yp_xm, ym_xm;  // b1's
  float zp_xp, zm_xp, zp_xm, zm_xm;  // b2's
};

// One point (see the header comment): returns wrk2, sets ss.
template <class Fp>
GPUCOMM_HD float himeno_point(const HimenoStencil& s, const HimenoCoef& q, float& ss) {
  float s0 = Fp::add(Fp::mul(q.a0, s.zp), Fp::mul(q.a1, s.yp));
  s0 = Fp::add(s0, Fp::mul(q.a2, s.xp));
  s0 = Fp::add(s0, Fp::mul(q.b0, Fp::add(Fp::sub(Fp::sub(s.zp_yp, s.zp_ym), s.zm_yp), s.zm_ym)));
  s0 = Fp::add(s0, Fp::mul(q.b1, Fp::add(Fp::sub(Fp::sub(s.yp_xp, s.ym_xp), s.yp_xm), s.ym_xm)));
  s0 = Fp::add(s0, Fp::mul(q.b2, Fp::add(Fp::sub(Fp::sub(s.zp_xp, s.zm_xp), s.zp_xm), s.zm_xm)));
  s0 = Fp::add(s0, Fp::mul(q.c0, s.zm));
  s0 = Fp::add(s0, Fp::mul(q.c1, s.ym));
  s0 = Fp::add(s0, Fp::mul(q.c2, s.xm));
  s0 = Fp::add(s0, q.wrk1);
  ss = Fp::mul(Fp::sub(Fp::mul(s0, q.a3), s.c), q.bnd);
  return Fp::add(s.c, Fp::mul(kHimenoOmega, ss));
}

// One PE's part: (n + 2)^3 points, ghosts and boundaries included; i the plane (stacked across
// the PEs), k fastest; interior 1..n on each axis.
GPUCOMM_HD uint64_t himeno_index(uint64_t n, uint64_t i, uint64_t j, uint64_t k) {
  return (i * (n + 2) + j) * (n + 2) + k;
}
// Initial p on global plane ig of a job of `pes` PEs of n planes each (the original's
// i^2 / (imax - 1)^2, imax = pes n + 2).
inline float himeno_initial_p(uint64_t ig, int pes, uint64_t n) {
  const uint64_t last = static_cast<uint64_t>(pes) * n + 1;
  return static_cast<float>(ig * ig) / static_cast<float>(last * last);
}

// PE `rank`'s initial p, (n + 2)^3, every point (ghost planes too: they start as the neighbours'
// initial planes or the boundary).
std::vector<float> himeno_initial_part(int rank, int pes, uint64_t n);
// PE's coefficient arrays: kHimenoFields arrays of (n + 2)^3 floats back to back, the standard values.
std::vector<float> himeno_initial_coef(uint64_t n);

// Updates planes [i0, i1] of the interior of `p` into `out` (w = n + 2 points per row and rows
// per plane; planes i - 1 and i + 1 of p read, ghost planes included), with the coefficient arrays
// `coef` (kHimenoFields arrays of `field` floats back to back, the layout of p); returns the sum
// of ss ss (each row summed, then the rows of a plane, then the planes). The host models' compute.
double himeno_planes(const float* p, float* out, const float* coef, uint64_t field, uint64_t n, uint64_t i0,
                     uint64_t i1);

// The reference: the whole domain (pes x n planes between the two boundary planes) after `steps`
// iterations, with every iteration's gosa, computed once per (pes, n, steps) (with the standard
// coefficients as constants: the same values the arrays hold).
struct HimenoReference {
  int pes = 0;
  uint64_t n = 0;
  int steps = 0;
  std::vector<double> gosa;  // [steps]
  std::vector<float> p;      // [pes * n][n][n], interior points only, k fastest
};
const HimenoReference& himeno_reference(int pes, uint64_t n, int steps);

// Whether an all-reduced gosa equals the reference's within kHimenoGosaTolerance.
bool himeno_gosa_ok(double got, double ref);
// Points of PE `rank`'s final p (layout of himeno_index) that differ from the reference. The PE
// `corrupt_rank` adds 1 to its first point before comparing (tests: the check must fail).
uint64_t himeno_wrong_cells(const HimenoReference& ref, int rank, const float* p, int corrupt_rank);
// rank 0's measurements: MFLOPS (34 flops per interior point of every PE over this PE's median
// step) and the bytes per step of the arrays each iteration must stream (12 coefficient arrays
// and p read, wrk2 written: 56 bytes per point) over that step, in GB/s.
std::vector<std::pair<std::string, double>> himeno_metrics(int pes, uint64_t n, const std::vector<double>& iter_us);

// Tests: when cfg.dump_dir is set, PE `rank` writes its final interior p (n^3 floats, k fastest,
// native byte order) to DIR/himeno-MODEL-N-RANK.f32.
void himeno_dump(const RunConfig& cfg, Model model, int rank, const float* p);

// Host-memory PEs and GPU PEs: the models marked done in the catalog. Collective over the world.
RunResult himeno_host(Runtime& rt, Model model, const RunConfig& cfg);
RunResult himeno_gpu(Runtime& rt, Model model, const RunConfig& cfg);

}  // namespace gpucomm::apps
