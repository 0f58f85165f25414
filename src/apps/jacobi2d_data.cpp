// Jacobi 2-D: the initial grid, the host models' compute, the CPU reference and the check.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "gpucomm/apps/jacobi2d.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {

std::vector<double> jacobi_initial_part(int rank, int pes, uint64_t n) {
  const uint64_t w = jacobi_width(n);
  std::vector<double> u(w * w, 0.0);
  for (uint64_t i = 1; i <= n; ++i)
    for (uint64_t c = 0; c < n; ++c) u[i * w + c + 1] = jacobi_initial(static_cast<uint64_t>(rank) * n + i - 1, c);
  if (rank == 0)
    for (uint64_t c = 0; c < w; ++c) u[c] = kJacobiTop;
  (void)pes;  // the last PE's bottom row stays 0
  return u;
}

double jacobi_rows(const double* in, double* out, uint64_t w, uint64_t first, uint64_t last) {
  double res = 0;
  for (uint64_t i = first; i <= last; ++i) {
    const double* up = in + (i - 1) * w;
    const double* mid = in + i * w;
    const double* down = in + (i + 1) * w;
    double* o = out + i * w;
    for (uint64_t c = 1; c + 1 < w; ++c) {
      o[c] = jacobi_point(up[c], down[c], mid[c - 1], mid[c + 1]);
      res = std::max(res, std::fabs(o[c] - mid[c]));
    }
  }
  return res;
}

const JacobiReference& jacobi_reference(int pes, uint64_t n, int steps) {
  static JacobiReference ref;
  if (ref.pes == pes && ref.n == n && ref.steps == steps) return ref;
  const uint64_t w = jacobi_width(n), rows = static_cast<uint64_t>(pes) * n;
  std::vector<double> a((rows + 2) * w, 0.0);
  for (uint64_t c = 0; c < w; ++c) a[c] = kJacobiTop;
  for (uint64_t g = 0; g < rows; ++g)
    for (uint64_t c = 0; c < n; ++c) a[(g + 1) * w + c + 1] = jacobi_initial(g, c);
  std::vector<double> b = a;
  ref.residual.assign(static_cast<size_t>(steps), 0.0);
  for (int s = 0; s < steps; ++s) {
    ref.residual[static_cast<size_t>(s)] = jacobi_rows(a.data(), b.data(), w, 1, rows);
    a.swap(b);
  }
  ref.grid = std::move(a);
  ref.pes = pes;
  ref.n = n;
  ref.steps = steps;
  return ref;
}

uint64_t jacobi_wrong_cells(const JacobiReference& ref, int rank, const double* part, int corrupt_rank) {
  const uint64_t w = jacobi_width(ref.n);
  uint64_t wrong = 0;
  for (uint64_t i = 1; i <= ref.n; ++i) {
    const double* want = ref.row(rank, i);
    for (uint64_t c = 1; c <= ref.n; ++c) {
      double got = part[i * w + c];
      if (rank == corrupt_rank && i == 1 && c == 1) got += 1;
      if (got != want[c]) ++wrong;
    }
  }
  return wrong;
}

void jacobi_dump(const RunConfig& cfg, Model model, int rank, const double* part) {
  if (cfg.dump_dir.empty()) return;
  const uint64_t n = cfg.size, w = jacobi_width(n);
  const std::string path =
      cfg.dump_dir + "/jacobi2d-" + model_name(model) + "-" + std::to_string(n) + "-" + std::to_string(rank) + ".f64";
  std::ofstream f(path, std::ios::binary);
  for (uint64_t i = 1; i <= n; ++i)
    f.write(reinterpret_cast<const char*>(part + i * w + 1), static_cast<std::streamsize>(n * sizeof(double)));
  if (!f) raise_arg("gpucomm-apps", "--dump-grid", "cannot write " + path);
}

}  // namespace gpucomm::apps
