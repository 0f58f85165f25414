// Aliev-Panfilov: initial state, the planes update of the host models and the CPU reference
// (include/gpucomm/apps/aliev_panfilov.hpp).
#include <map>
#include <mutex>
#include <tuple>

#include "gpucomm/apps/aliev_panfilov.hpp"

namespace gpucomm::apps {

void ap_initial_part(int rank, uint64_t n, std::vector<double>& e, std::vector<double>& r) {
  const uint64_t w = n + 2;
  e.assign(w * w * w, 0.0);
  r.assign(w * w * w, 0.0);
  for (uint64_t k = 1; k <= n; ++k) {
    const uint64_t kg = static_cast<uint64_t>(rank) * n + k;
    for (uint64_t j = 1; j <= n; ++j) {
      for (uint64_t i = 1; i <= n; ++i) {
        e[ap_index(n, i, j, k)] = ap_initial_e(i, j, kg);
        r[ap_index(n, i, j, k)] = ap_initial_r(i, j, kg);
      }
    }
  }
}

void ap_planes(const double* e_prev, double* e_out, double* r, uint64_t n, uint64_t k0, uint64_t k1) {
  const uint64_t w = n + 2, plane = w * w;
  for (uint64_t k = k0; k <= k1; ++k) {
    for (uint64_t j = 1; j <= n; ++j) {
      for (uint64_t i = 1; i <= n; ++i) {
        const uint64_t p = ap_index(n, i, j, k);
        const double xl = e_prev[i == 1 ? p + 1 : p - 1], xr = e_prev[i == n ? p - 1 : p + 1];
        const double yl = e_prev[j == 1 ? p + w : p - w], yr = e_prev[j == n ? p - w : p + w];
        e_out[p] = ap_point<HostFp>(e_prev[p], xl, xr, yl, yr, e_prev[p - plane], e_prev[p + plane], r[p]);
      }
    }
  }
}

double ApReference::e_sum(int rank) const {
  double s = 0;
  const uint64_t per_pe = n * n * n;
  for (uint64_t q = 0; q < per_pe; ++q) s += e[static_cast<uint64_t>(rank) * per_pe + q];
  return s;
}

const ApReference& ap_reference(int pes, uint64_t n, int steps) {
  static std::mutex mu;
  static std::map<std::tuple<int, uint64_t, int>, ApReference> cache;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(pes, n, steps);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  // The whole domain as one part of n x n x (pes n) interior points, with its own z ghosts made
  // periodic before every step: ap_planes with a taller z.
  const uint64_t nz = static_cast<uint64_t>(pes) * n, w = n + 2, plane = w * w;
  std::vector<double> e[2] = {std::vector<double>((nz + 2) * plane), std::vector<double>((nz + 2) * plane)};
  std::vector<double> r((nz + 2) * plane);
  for (uint64_t kg = 1; kg <= nz; ++kg) {
    for (uint64_t j = 1; j <= n; ++j) {
      for (uint64_t i = 1; i <= n; ++i) {
        e[0][kg * plane + j * w + i] = ap_initial_e(i, j, kg);
        r[kg * plane + j * w + i] = ap_initial_r(i, j, kg);
      }
    }
  }
  for (int s = 0; s < steps; ++s) {
    std::vector<double>& prev = e[s % 2];
    for (uint64_t q = 0; q < plane; ++q) {  // periodic z: the ghost planes
      prev[q] = prev[nz * plane + q];
      prev[(nz + 1) * plane + q] = prev[plane + q];
    }
    ap_planes(prev.data(), e[(s + 1) % 2].data(), r.data(), n, 1, nz);
  }
  ApReference ref;
  ref.pes = pes;
  ref.n = n;
  ref.steps = steps;
  const std::vector<double>& last = e[steps % 2];
  ref.e.reserve(nz * n * n);
  ref.r.reserve(nz * n * n);
  for (uint64_t kg = 1; kg <= nz; ++kg) {
    for (uint64_t j = 1; j <= n; ++j) {
      for (uint64_t i = 1; i <= n; ++i) {
        ref.e.push_back(last[kg * plane + j * w + i]);
        ref.r.push_back(r[kg * plane + j * w + i]);
      }
    }
  }
  return cache.emplace(key, std::move(ref)).first->second;
}

uint64_t ap_wrong_cells(const ApReference& ref, int rank, const double* e, const double* r, int corrupt_rank) {
  const uint64_t n = ref.n;
  uint64_t wrong = 0, q = static_cast<uint64_t>(rank) * n * n * n;
  for (uint64_t k = 1; k <= n; ++k) {
    for (uint64_t j = 1; j <= n; ++j) {
      for (uint64_t i = 1; i <= n; ++i, ++q) {
        const uint64_t p = ap_index(n, i, j, k);
        const double bump = rank == corrupt_rank && q == static_cast<uint64_t>(rank) * n * n * n ? 1.0 : 0.0;
        wrong += (e[p] + bump != ref.e[q] ? 1 : 0) + (r[p] != ref.r[q] ? 1 : 0);
      }
    }
  }
  return wrong;
}

double ap_e_sum(const double* e, uint64_t n) {
  double s = 0;
  for (uint64_t k = 1; k <= n; ++k) {
    for (uint64_t j = 1; j <= n; ++j) {
      for (uint64_t i = 1; i <= n; ++i) s += e[ap_index(n, i, j, k)];
    }
  }
  return s;
}

}  // namespace gpucomm::apps
