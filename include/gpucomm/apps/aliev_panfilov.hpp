#pragma once
// Aliev-Panfilov 3-D (docs/APPS.md; the cardiac model of the pattern layer's source thesis, its
// appendix A and section 5.3): the excitation E diffuses (7-point Laplacian) and reacts with the
// recovery R, in fp64, on an N x N x N cube per PE; the PEs are stacked along z, which is periodic,
// so every PE exchanges one ghost plane of E with each z neighbour every step (a PE alone exchanges
// with itself); x and y have no-flux boundaries (the neighbour outside is mirrored, as the
// thesis's kernel does).
//
// One step, at every interior point, in this order and each operation rounded on its own (no fused
// multiply-add: the GPU code uses __dadd_rn and friends), so every model equals the CPU reference
// bit for bit:
//   lap = ((((((xl + xr) - 6 c) + yl) + yr) + zl) + zr)        c = E_prev at the point
//   e   = c + alpha lap
//   e   = e - dt ((kk e (e - a)) (e - 1) + e r)
//   r   = r + dt (eps + m1 r / (e + m2)) (-r - kk e (e - b - 1))
// E has two buffers (step parity): step s reads E_prev = buffer (s - 1) % 2 and writes the other;
// R is updated in place (each point reads only its own R).
//
// Compulsory memory traffic per step and interior point: E_prev read once, E written once, R read
// and written: 32 bytes; the roofline is that over the device's copy bandwidth (read + write bytes
// of a device-to-device copy, measured in the same run).
#include <cstdint>
#include <vector>

#include "gpucomm/apps/catalog.hpp"
#include "gpucomm/apps/rounded_fp.hpp"
#include "gpucomm/apps/run.hpp"
#include "gpucomm/base/hd.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::apps {

struct ApConst {
  static constexpr double a = 0.1, b = 0.1, kk = 8.0, m1 = 0.07, m2 = 0.3, eps = 0.01;
  static constexpr double dt = 0.02, alpha = 0.1;  // alpha = diffusion x dt / dx^2 (stable below 1/6)
};

// The update of one point (see the header comment); returns E, updates r.
template <class Fp>
GPUCOMM_HD double ap_point(double c, double xl, double xr, double yl, double yr, double zl, double zr, double& r) {
  using K = ApConst;
  double lap = Fp::sub(Fp::add(xl, xr), Fp::mul(6.0, c));
  lap = Fp::add(Fp::add(Fp::add(Fp::add(lap, yl), yr), zl), zr);
  double e = Fp::add(c, Fp::mul(K::alpha, lap));
  const double react = Fp::add(Fp::mul(Fp::mul(Fp::mul(K::kk, e), Fp::sub(e, K::a)), Fp::sub(e, 1.0)), Fp::mul(e, r));
  e = Fp::sub(e, Fp::mul(K::dt, react));
  const double gate = Fp::add(K::eps, Fp::div(Fp::mul(K::m1, r), Fp::add(e, K::m2)));
  const double drive = Fp::sub(Fp::sub(0.0, r), Fp::mul(Fp::mul(K::kk, e), Fp::sub(Fp::sub(e, K::b), 1.0)));
  r = Fp::add(r, Fp::mul(Fp::mul(K::dt, gate), drive));
  return e;
}

// One PE's part: (n + 2)^3 points, ghosts included, x fastest; interior 1..n on each axis.
GPUCOMM_HD uint64_t ap_index(uint64_t n, uint64_t i, uint64_t j, uint64_t k) {
  return (k * (n + 2) + j) * (n + 2) + i;
}
// Initial E and R at interior point (i, j) of global plane kg (1-based, planes of every PE stacked).
inline double ap_initial_e(uint64_t i, uint64_t j, uint64_t kg) {
  return (i * 3 + j + kg * 2) % 11 < 3 ? 1.0 : 0.0;
}
inline double ap_initial_r(uint64_t i, uint64_t j, uint64_t kg) {
  return (i + j * 2 + kg) % 7 < 2 ? 0.5 : 0.0;
}

// PE `rank`'s initial E and R, (n + 2)^3 each, ghosts zero.
void ap_initial_part(int rank, uint64_t n, std::vector<double>& e, std::vector<double>& r);

// Updates planes [k0, k1] of the interior (x and y mirrored, z from planes k - 1 and k + 1 of
// e_prev, ghost planes included); the host models' compute and the reference's.
void ap_planes(const double* e_prev, double* e_out, double* r, uint64_t n, uint64_t k0, uint64_t k1);

// The reference: the whole domain (pes x n planes, periodic in z) after `steps` steps, computed once
// per (pes, n, steps).
struct ApReference {
  int pes = 0;
  uint64_t n = 0;
  int steps = 0;
  std::vector<double> e, r;  // [pes * n][n][n], interior points only, x fastest
  // The sum of PE `rank`'s final E (the report's checked value).
  double e_sum(int rank) const;
};
const ApReference& ap_reference(int pes, uint64_t n, int steps);

// Points of PE `rank`'s final E and R (layout of ap_index) that differ from the reference. The PE
// `corrupt_rank` adds 1 to its first E point before comparing (tests: the check must fail).
uint64_t ap_wrong_cells(const ApReference& ref, int rank, const double* e, const double* r, int corrupt_rank);
// The sum of the interior of E (layout of ap_index).
double ap_e_sum(const double* e, uint64_t n);

// Host-memory PEs and GPU PEs: the models marked done in the catalog. Collective over the world.
RunResult aliev_panfilov_host(Runtime& rt, Model model, const RunConfig& cfg);
RunResult aliev_panfilov_gpu(Runtime& rt, Model model, const RunConfig& cfg);

}  // namespace gpucomm::apps
