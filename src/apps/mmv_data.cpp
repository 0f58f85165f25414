// Multi-matrix-vector: inputs and the CPU reference (include/gpucomm/apps/mmv.hpp).
#include <map>
#include <mutex>

#include "gpucomm/apps/mmv.hpp"

namespace gpucomm::apps {

std::vector<float> mmv_matrix_values() {
  constexpr size_t kSide = kMmvDim;
  std::vector<float> m(kSide * kSide);
  for (int i = 0; i < kMmvDim; ++i)
    for (int k = 0; k < kMmvDim; ++k) m[static_cast<size_t>(i) * kSide + static_cast<size_t>(k)] = mmv_matrix(i, k);
  return m;
}

void mmv_fill_batch(uint64_t batch, uint64_t vectors, float* out) {
  for (uint64_t v = 0; v < vectors; ++v)
    for (int k = 0; k < kMmvDim; ++k) out[v * kMmvDim + static_cast<uint64_t>(k)] = mmv_input(batch, v, k);
}

const std::vector<float>& mmv_reference(uint64_t vectors) {
  static std::mutex mu;
  static std::map<uint64_t, std::vector<float>> cache;
  const std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(vectors);
  if (it != cache.end()) return it->second;
  std::vector<float> ref(kMmvPhases * vectors * kMmvDim);
  for (uint64_t b = 0; b < kMmvPhases; ++b) {
    for (uint64_t v = 0; v < vectors; ++v) {
      for (int i = 0; i < kMmvDim; ++i) {
        int sum = 0;  // integers: exact, the same value as any float summation order
        for (int k = 0; k < kMmvDim; ++k)
          sum += static_cast<int>(mmv_matrix(i, k)) * static_cast<int>(mmv_input(b, v, k));
        ref[(b * vectors + v) * kMmvDim + static_cast<uint64_t>(i)] = static_cast<float>(sum);
      }
    }
  }
  return cache.emplace(vectors, std::move(ref)).first->second;
}

double mmv_checksum(const float* products, uint64_t vectors) {
  double s = 0;
  for (uint64_t j = 0; j < vectors * kMmvDim; ++j) s += static_cast<double>(products[j]);
  return s;
}

double mmv_reference_value(uint64_t batch, uint64_t vectors) {
  return mmv_checksum(mmv_reference(vectors).data() + (batch % kMmvPhases) * vectors * kMmvDim, vectors);
}

}  // namespace gpucomm::apps
