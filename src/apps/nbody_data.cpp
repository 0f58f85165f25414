// N-Body: the initial bodies, the host models' compute, the CPU reference and the checks. Compiled
// with -ffp-contract=off (src/apps/CMakeLists.txt): no multiply and add fused into one rounding.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "gpucomm/apps/nbody.hpp"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {

uint64_t nbody_per_pe(uint64_t n, int pes) {
  const auto p = static_cast<uint64_t>(pes);
  if (n < p || n % p != 0) {
    raise_arg("gpucomm-apps", "--sizes",
              std::to_string(n) + " bodies do not split into " + std::to_string(pes) +
                  " equal blocks, one per PE; nbody needs a size that is a multiple of the number of PEs");
  }
  return n / p;
}

std::vector<double> nbody_initial_part(int rank, uint64_t nb) {
  std::vector<double> b(nb * kNbodyStride);
  for (uint64_t i = 0; i < nb; ++i) nbody_initial(static_cast<uint64_t>(rank) * nb + i, b.data() + i * kNbodyStride);
  return b;
}

void nbody_accumulate(const double* own, uint64_t nb, const double* held, uint64_t nh, double* acc) {
  for (uint64_t i = 0; i < nb; ++i) {
    const double xi = own[i * kNbodyStride], yi = own[i * kNbodyStride + 1], zi = own[i * kNbodyStride + 2];
    double ax = acc[3 * i], ay = acc[3 * i + 1], az = acc[3 * i + 2];
    for (uint64_t j = 0; j < nh; ++j) {
      const double* b = held + j * kNbodyStride;
      const double dx = b[0] - xi, dy = b[1] - yi, dz = b[2] - zi;
      const double d2 = ((dx * dx + dy * dy) + dz * dz) + kNbodyEps2;
      const double s = b[3] / (d2 * std::sqrt(d2));
      ax = ax + dx * s;
      ay = ay + dy * s;
      az = az + dz * s;
    }
    acc[3 * i] = ax;
    acc[3 * i + 1] = ay;
    acc[3 * i + 2] = az;
  }
}

void nbody_integrate(double* own, double* vel, double* acc, uint64_t nb) {
  for (uint64_t i = 0; i < nb; ++i) {
    for (int c = 0; c < 3; ++c) {
      vel[3 * i + c] = vel[3 * i + c] + acc[3 * i + c] * kNbodyDt;
      own[i * kNbodyStride + c] = own[i * kNbodyStride + c] + vel[3 * i + c] * kNbodyDt;
      acc[3 * i + c] = 0;
    }
  }
}

double nbody_checksum(const double* own, uint64_t nb) {
  double s = 0;
  for (uint64_t i = 0; i < nb; ++i)
    s = s + ((own[i * kNbodyStride] + own[i * kNbodyStride + 1]) + own[i * kNbodyStride + 2]);
  return s;
}

const NbodyReference& nbody_reference(int pes, uint64_t n, int steps) {
  static NbodyReference ref;
  if (ref.pes == pes && ref.n == n && ref.steps == steps) return ref;
  const uint64_t nb = nbody_per_pe(n, pes);
  std::vector<double> bodies(n * kNbodyStride), next(n * kNbodyStride);
  for (uint64_t g = 0; g < n; ++g) nbody_initial(g, bodies.data() + g * kNbodyStride);
  std::vector<double> vel(n * 3, 0.0), acc(n * 3, 0.0);
  ref.checksum.assign(static_cast<size_t>(steps) * static_cast<size_t>(pes), 0.0);
  // Each thread owns a range of bodies: their interactions, in the ring's order, and integration.
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t threads = std::min<uint64_t>(hw, std::max<uint64_t>(1, n / 256));
  for (int s = 0; s < steps; ++s) {
    auto work = [&](uint64_t first, uint64_t last) {  // bodies [first, last)
      for (uint64_t g = first; g < last;) {
        const uint64_t r = g / nb, stop = std::min(last, (r + 1) * nb);
        for (int k = 0; k < pes; ++k) {  // stage k: PE r holds the block of PE (r - k) mod P
          const uint64_t src = (r + static_cast<uint64_t>(pes) - static_cast<uint64_t>(k)) % static_cast<uint64_t>(pes);
          nbody_accumulate(bodies.data() + g * kNbodyStride, stop - g, bodies.data() + src * nb * kNbodyStride, nb,
                           acc.data() + 3 * g);
        }
        std::memcpy(next.data() + g * kNbodyStride, bodies.data() + g * kNbodyStride,
                    (stop - g) * kNbodyStride * sizeof(double));
        nbody_integrate(next.data() + g * kNbodyStride, vel.data() + 3 * g, acc.data() + 3 * g, stop - g);
        g = stop;
      }
    };
    std::vector<std::thread> pool;
    for (uint64_t t = 1; t < threads; ++t) pool.emplace_back(work, n * t / threads, n * (t + 1) / threads);
    work(0, n / threads);
    for (auto& th : pool) th.join();
    bodies.swap(next);
    for (int r = 0; r < pes; ++r) {
      ref.checksum[static_cast<size_t>(s) * static_cast<size_t>(pes) + static_cast<size_t>(r)] =
          nbody_checksum(bodies.data() + static_cast<uint64_t>(r) * nb * kNbodyStride, nb);
    }
  }
  ref.value = 0;
  for (int r = 0; r < pes && steps > 0; ++r) {
    ref.value =
        ref.value + ref.checksum[static_cast<size_t>(steps - 1) * static_cast<size_t>(pes) + static_cast<size_t>(r)];
  }
  ref.bodies = std::move(bodies);
  ref.pes = pes;
  ref.n = n;
  ref.steps = steps;
  return ref;
}

int nbody_check_step(const NbodyReference& ref, int rank, int step, double checksum, int corrupt_rank) {
  if (rank == corrupt_rank) checksum += 1;
  return checksum != ref.checksum[static_cast<size_t>(step) * static_cast<size_t>(ref.pes) + static_cast<size_t>(rank)]
             ? 1
             : 0;
}

uint64_t nbody_wrong_bodies(const NbodyReference& ref, int rank, const double* own, int corrupt_rank) {
  const uint64_t nb = ref.n / static_cast<uint64_t>(ref.pes);
  const double* want = ref.bodies.data() + static_cast<uint64_t>(rank) * nb * kNbodyStride;
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < nb; ++i) {
    double x = own[i * kNbodyStride];
    if (rank == corrupt_rank && i == 0) x += 1;
    if (x != want[i * kNbodyStride] || own[i * kNbodyStride + 1] != want[i * kNbodyStride + 1] ||
        own[i * kNbodyStride + 2] != want[i * kNbodyStride + 2])
      ++wrong;
  }
  return wrong;
}

double nbody_value(Runtime& rt, double checksum, int corrupt_rank) {
  if (rt.rank() == corrupt_rank) checksum += 1;
  std::string mine(sizeof checksum, '\0');
  std::memcpy(mine.data(), &checksum, sizeof checksum);
  double sum = 0;
  for (const auto& v : rt.bootstrap().allgather(mine)) {
    if (v.size() != sizeof(double))
      raise(Errc::protocol, "nbody", "a PE sent " + std::to_string(v.size()) + " bytes of checksum, not 8");
    double d = 0;
    std::memcpy(&d, v.data(), sizeof d);
    sum = sum + d;
  }
  return sum;
}

void nbody_dump(const RunConfig& cfg, Model model, int rank, const double* own, uint64_t nb) {
  if (cfg.dump_dir.empty()) return;
  const std::string path = cfg.dump_dir + "/nbody-" + model_name(model) + "-" + std::to_string(cfg.size) + "-" +
                           std::to_string(rank) + ".f64";
  std::ofstream f(path, std::ios::binary);
  for (uint64_t i = 0; i < nb; ++i)
    f.write(reinterpret_cast<const char*>(own + i * kNbodyStride), static_cast<std::streamsize>(3 * sizeof(double)));
  if (!f) raise_arg("gpucomm-apps", "--dump-grid", "cannot write " + path);
}

}  // namespace gpucomm::apps
