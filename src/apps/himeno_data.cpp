// Himeno: initial state, the planes update of the host models, the CPU reference and the checks
// (include/gpucomm/apps/himeno.hpp). Compiled with -ffp-contract=off (src/apps/CMakeLists.txt).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <tuple>

#include "gpucomm/apps/himeno.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {
namespace {

// The coefficients of one point: read from the arrays, or the standard constants (the reference).
struct ArrayCoef {
  const float* coef;
  uint64_t field;
  HimenoCoef at(uint64_t q) const {
    const float* f = coef + q;
    return HimenoCoef{f[0],         f[field],     f[2 * field], f[3 * field], f[4 * field],  f[5 * field],
                      f[6 * field], f[7 * field], f[8 * field], f[9 * field], f[10 * field], f[11 * field]};
  }
};
struct ConstCoef {
  static HimenoCoef at(uint64_t) { return kHimenoCoef; }
};

// Planes [i0, i1] of p into out (w = n + 2 points per row and rows per plane); the sum of ss ss.
template <class Coef>
double planes(const float* p, float* out, const Coef& coef, uint64_t n, uint64_t i0, uint64_t i1) {
  const uint64_t w = n + 2;
  const auto row = static_cast<int64_t>(w), plane = row * row;  // signed offsets of the neighbours
  double gosa = 0;
  for (uint64_t i = i0; i <= i1; ++i) {
    double plane_sum = 0;
    for (uint64_t j = 1; j <= n; ++j) {
      double row_sum = 0;
      for (uint64_t k = 1; k <= n; ++k) {
        const uint64_t q = (i * w + j) * w + k;
        const float* c = p + q;
        HimenoStencil s{};
        s.c = c[0];
        s.zp = c[plane];
        s.yp = c[row];
        s.xp = c[1];
        s.zm = c[-plane];
        s.ym = c[-row];
        s.xm = c[-1];
        s.zp_yp = c[plane + row];
        s.zp_ym = c[plane - row];
        s.zm_yp = c[row - plane];
        s.zm_ym = c[-plane - row];
        s.yp_xp = c[row + 1];
        s.ym_xp = c[1 - row];
        s.yp_xm = c[row - 1];
        s.ym_xm = c[-row - 1];
        s.zp_xp = c[plane + 1];
        s.zm_xp = c[1 - plane];
        s.zp_xm = c[plane - 1];
        s.zm_xm = c[-plane - 1];
        float ss = 0;
        out[q] = himeno_point<HostFp>(s, coef.at(q), ss);
        row_sum += static_cast<double>(HostFp::mul(ss, ss));
      }
      plane_sum += row_sum;
    }
    gosa += plane_sum;
  }
  return gosa;
}

}  // namespace

float himeno_coef_value(int f) {
  const HimenoCoef& q = kHimenoCoef;
  const float v[kHimenoFields] = {q.a0, q.a1, q.a2, q.a3, q.b0, q.b1, q.b2, q.c0, q.c1, q.c2, q.bnd, q.wrk1};
  return v[f];
}

std::vector<float> himeno_initial_part(int rank, int pes, uint64_t n) {
  const uint64_t w = n + 2, plane = w * w;
  std::vector<float> p(w * plane);
  for (uint64_t i = 0; i < w; ++i) {
    const float v = himeno_initial_p(static_cast<uint64_t>(rank) * n + i, pes, n);
    std::fill(p.begin() + static_cast<std::ptrdiff_t>(i * plane),
              p.begin() + static_cast<std::ptrdiff_t>((i + 1) * plane), v);
  }
  return p;
}

std::vector<float> himeno_initial_coef(uint64_t n) {
  const uint64_t field = (n + 2) * (n + 2) * (n + 2);
  std::vector<float> c(kHimenoFields * field);
  for (int f = 0; f < kHimenoFields; ++f) {
    const auto first = c.begin() + static_cast<std::ptrdiff_t>(static_cast<uint64_t>(f) * field);
    std::fill(first, first + static_cast<std::ptrdiff_t>(field), himeno_coef_value(f));
  }
  return c;
}

double himeno_planes(const float* p, float* out, const float* coef, uint64_t field, uint64_t n, uint64_t i0,
                     uint64_t i1) {
  return planes(p, out, ArrayCoef{coef, field}, n, i0, i1);
}

const HimenoReference& himeno_reference(int pes, uint64_t n, int steps) {
  static std::mutex mu;
  static std::map<std::tuple<int, uint64_t, int>, HimenoReference> cache;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(pes, n, steps);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  // The whole domain as one part of pes n planes between the two boundary planes: the planes
  // update with a taller i; boundaries and ghost planes never change.
  const uint64_t ni = static_cast<uint64_t>(pes) * n, w = n + 2, plane = w * w;
  std::vector<float> p[2] = {std::vector<float>((ni + 2) * plane), std::vector<float>((ni + 2) * plane)};
  for (uint64_t ig = 0; ig < ni + 2; ++ig) {
    const float v = himeno_initial_p(ig, pes, n);
    for (int b = 0; b < 2; ++b) {
      std::fill(p[b].begin() + static_cast<std::ptrdiff_t>(ig * plane),
                p[b].begin() + static_cast<std::ptrdiff_t>((ig + 1) * plane), v);
    }
  }
  HimenoReference ref;
  ref.pes = pes;
  ref.n = n;
  ref.steps = steps;
  for (int s = 0; s < steps; ++s)
    ref.gosa.push_back(planes(p[s % 2].data(), p[(s + 1) % 2].data(), ConstCoef{}, n, 1, ni));
  const std::vector<float>& last = p[steps % 2];
  ref.p.reserve(ni * n * n);
  for (uint64_t ig = 1; ig <= ni; ++ig) {
    for (uint64_t j = 1; j <= n; ++j) {
      for (uint64_t k = 1; k <= n; ++k) ref.p.push_back(last[(ig * w + j) * w + k]);
    }
  }
  return cache.emplace(key, std::move(ref)).first->second;
}

bool himeno_gosa_ok(double got, double ref) {
  return std::fabs(got - ref) <= kHimenoGosaTolerance * std::fabs(ref);
}

uint64_t himeno_wrong_cells(const HimenoReference& ref, int rank, const float* p, int corrupt_rank) {
  const uint64_t n = ref.n;
  const uint64_t first = static_cast<uint64_t>(rank) * n * n * n;
  uint64_t wrong = 0, q = first;
  for (uint64_t i = 1; i <= n; ++i) {
    for (uint64_t j = 1; j <= n; ++j) {
      for (uint64_t k = 1; k <= n; ++k, ++q) {
        const float bump = rank == corrupt_rank && q == first ? 1.0F : 0.0F;
        wrong += p[himeno_index(n, i, j, k)] + bump != ref.p[q] ? 1 : 0;
      }
    }
  }
  return wrong;
}

std::vector<std::pair<std::string, double>> himeno_metrics(int pes, uint64_t n, const std::vector<double>& iter_us) {
  if (iter_us.empty()) return {};
  std::vector<double> t = iter_us;
  std::sort(t.begin(), t.end());
  const double median_us = t.size() % 2 ? t[t.size() / 2] : (t[t.size() / 2 - 1] + t[t.size() / 2]) / 2;
  if (median_us <= 0) return {};
  const auto points = static_cast<double>(n * n * n);
  const double streamed = 4.0 * (kHimenoFields + 2) * points;  // bytes per PE and step
  return {{"mflops", kHimenoFlopsPerPoint * points * pes / median_us},
          {"streamed_bytes_per_step", streamed},
          {"streamed_gbs", streamed / median_us * 1e-3}};
}

void himeno_dump(const RunConfig& cfg, Model model, int rank, const float* p) {
  if (cfg.dump_dir.empty()) return;
  const uint64_t n = cfg.size;
  const std::string path =
      cfg.dump_dir + "/himeno-" + model_name(model) + "-" + std::to_string(n) + "-" + std::to_string(rank) + ".f32";
  std::ofstream f(path, std::ios::binary);
  for (uint64_t i = 1; i <= n; ++i) {
    for (uint64_t j = 1; j <= n; ++j) {
      f.write(reinterpret_cast<const char*>(p + himeno_index(n, i, j, 1)),
              static_cast<std::streamsize>(n * sizeof(float)));
    }
  }
  if (!f) raise_arg("gpucomm-apps", "--dump-grid", "cannot write " + path);
}

}  // namespace gpucomm::apps
