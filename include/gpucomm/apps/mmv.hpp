#pragma once
// Multi-matrix-vector (docs/APPS.md; after Daoud, Watad, Silberstein, "GPUrdma: GPU-side library
// for high performance networking from GPU kernels", Table 3): a stream of batches of 32-float
// vectors, each multiplied by one fixed 32 x 32 float matrix that a GPU block keeps in shared
// memory. A producer (the PE's host thread: the paper's master) writes a batch, hands it to the
// GPU, and waits until the batch's products are back before it writes the next one. One step is
// one batch's round trip as the producer sees it: from handing the batch over to seeing every
// product in host memory. The batch is written before the step starts, in every model.
//
// Models (GPU PEs only; host-memory PEs have no kernel to keep or relaunch):
//   loadstore  one persistent kernel for the whole run: the matrix is loaded into shared memory
//              once; each block polls a flag in pinned host memory, reads its vectors straight
//              from the pinned batch and stores the products into pinned host memory, then
//              releases its own done word (the paper's GPU-side design);
//   cpu        one launch per batch on one stream: copy the batch in, launch (each block loads
//              the matrix into shared memory again), copy the products out, synchronize (the
//              paper's CPU-controlled baseline);
//   cpu_graph  the same three operations as one CUDA graph, one graph launch per batch.
//
// Values are small integers (matrix and vector entries in [-4, 4]): every product and every sum of
// 32 of them is an integer below 2^10, exact in float in any order, so the check is an equality.
// Vector v of batch b depends on b only through b mod 8, so the reference is computed for 8
// batches once and every batch of a run is checked against it.
#include <cstdint>
#include <vector>

#include "gpucomm/apps/catalog.hpp"
#include "gpucomm/apps/run.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::apps {

inline constexpr int kMmvDim = 32;                                    // vector length, matrix side
inline constexpr uint64_t kMmvVectorBytes = kMmvDim * sizeof(float);  // 128 bytes
inline constexpr uint64_t kMmvPhases = 8;                             // batches repeat every 8

// The matrix entry (row i, column k) and element k of vector v of batch b, integers in [-4, 4].
inline float mmv_matrix(int i, int k) {
  return static_cast<float>((i * 5 + k * 11) % 9 - 4);
}
inline float mmv_input(uint64_t batch, uint64_t v, int k) {
  return static_cast<float>(
      static_cast<int64_t>((v * 7 + static_cast<uint64_t>(k) * 3 + (batch % kMmvPhases) * 5) % 9) - 4);
}
// Vectors in a batch of `kb` KB (size unit of the application): kb * 1024 / 128.
inline uint64_t mmv_vectors(uint64_t kb) {
  return kb * 1024 / kMmvVectorBytes;
}

// The matrix, row-major.
std::vector<float> mmv_matrix_values();
// Batch b's vectors, v-major (vectors x 32).
void mmv_fill_batch(uint64_t batch, uint64_t vectors, float* out);
// The products of the kMmvPhases distinct batches: [phase][v][i], computed once per vector count.
const std::vector<float>& mmv_reference(uint64_t vectors);
// The checked value of batch b: the sum of its products (exact: integers).
double mmv_checksum(const float* products, uint64_t vectors);
double mmv_reference_value(uint64_t batch, uint64_t vectors);

// GPU PEs: every PE streams its own batches (no communication between PEs). Collective over the
// world (set-up and the report). Raises Errc::unsupported on host-memory PEs and in a build
// without CUDA kernels.
RunResult mmv_gpu(Runtime& rt, Model model, const RunConfig& cfg);

}  // namespace gpucomm::apps
