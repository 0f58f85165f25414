#pragma once
// Jacobi 2-D (docs/APPS.md): a grid of doubles split by rows across the PEs (1-D decomposition),
// N x N interior points per PE. Every iteration each PE sends its first interior row to the PE
// above and its last to the PE below (halo rows), applies the 5-point Jacobi update to its rows and
// all-reduces the residual, the largest |new - old| of the iteration (max norm), every iteration.
//
// Boundaries are fixed: the row above PE 0 is 1 (a hot top edge), the row below the last PE and
// the left and right columns are 0. The update is 0.25 * (((up + down) + left) + right), always in
// this order and without contraction into fused multiply-adds (there is no multiply to fuse before
// an add, and the GPU code rounds each operation explicitly), and the residual is a maximum, which
// is exact in any order: the grid and the residual equal the CPU reference bit for bit.
#include <cstdint>
#include <vector>

#include "gpucomm/apps/catalog.hpp"
#include "gpucomm/apps/run.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::apps {

// The initial value of interior point (global row g, interior column c), a multiple of 1/128 in
// [0, 1).
inline double jacobi_initial(uint64_t g, uint64_t c) {
  return static_cast<double>((g * 131 + c * 71) % 128) / 128.0;
}
inline constexpr double kJacobiTop = 1.0;  // the fixed row above the grid

// The 5-point update of one point, the same expression in every model and in the reference.
inline double jacobi_point(double up, double down, double left, double right) {
  return 0.25 * (((up + down) + left) + right);
}

// One PE's part of the grid: n interior rows of n points, framed by the halo (or boundary) rows
// 0 and n + 1 and the boundary columns 0 and n + 1; row-major, (n + 2) x (n + 2).
inline uint64_t jacobi_width(uint64_t n) {
  return n + 2;
}
// PE `rank`'s initial part, boundaries included, halo rows of inner PEs zero.
std::vector<double> jacobi_initial_part(int rank, int pes, uint64_t n);

// Rows [first, last] of `in` updated into `out` (row pitch `w`, interior columns 1..w-2); returns
// the largest |out - in| over those points. The host models' compute, the same in every model.
double jacobi_rows(const double* in, double* out, uint64_t w, uint64_t first, uint64_t last);

// The CPU reference of `steps` iterations on `pes` PEs of n x n: the whole grid computed on one
// PE, with the residual of every iteration.
struct JacobiReference {
  int pes = 0;
  uint64_t n = 0;
  int steps = 0;
  std::vector<double> residual;  // [steps]
  std::vector<double> grid;      // (pes * n + 2) x (n + 2) after the last step
  // Interior row i (1..n) of PE `rank`, points 0..n+1.
  const double* row(int rank, uint64_t i) const { return grid.data() + (rank * n + i) * (n + 2); }
};
// The reference for (pes, n, steps), computed once and kept for the next call with the same
// arguments (the models of one size share it).
const JacobiReference& jacobi_reference(int pes, uint64_t n, int steps);

// The check of a PE's final interior rows against the reference: the points that differ. The PE
// `corrupt_rank` adds 1 to its first point before comparing (tests: the check must fail).
uint64_t jacobi_wrong_cells(const JacobiReference& ref, int rank, const double* part, int corrupt_rank);

// Tests: when cfg.dump_dir is set, PE `rank` writes its final interior rows (n x n doubles, row-major,
// native byte order) to DIR/jacobi2d-MODEL-N-RANK.f64.
void jacobi_dump(const RunConfig& cfg, Model model, int rank, const double* part);

// Host-memory PEs: the models marked done for host PEs in the catalog. Collective over the world.
RunResult jacobi2d_host(Runtime& rt, Model model, const RunConfig& cfg);
// GPU PEs: the models marked done for GPU PEs. Collective over the world. Raises
// Errc::unsupported in a build without CUDA kernels.
RunResult jacobi2d_gpu(Runtime& rt, Model model, const RunConfig& cfg);

}  // namespace gpucomm::apps
