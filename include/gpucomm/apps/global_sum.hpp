#pragma once
// Global Sum (docs/APPS.md; after Klenk, Oden, Fröning, "Analyzing Communication Models for
// Distributed Thread-Collaborative Processors in Terms of Energy and Time"): every PE reduces its
// own N elements, then one value per PE is all-reduced, so that every PE holds the global sum.
//
// The input is integer-valued doubles (|x| <= 100), so every partial sum up to 16M elements per PE
// and thousands of PEs is an integer below 2^53: any summation order gives the exact result, and
// the check against the CPU reference is an equality, not a tolerance.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpucomm/apps/catalog.hpp"
#include "gpucomm/apps/run.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::apps {

// Element i of PE `rank`'s input, an integer in [-100, 100].
inline int64_t global_sum_element(int rank, uint64_t i) {
  const uint64_t h = i * uint64_t{2654435761} + static_cast<uint64_t>(rank) * uint64_t{97};
  return static_cast<int64_t>(h % 201) - 100;
}
inline double global_sum_input(int rank, uint64_t i) {
  return static_cast<double>(global_sum_element(rank, i));
}
// PE `rank`'s n elements.
std::vector<double> global_sum_inputs(int rank, uint64_t n);
// The CPU reference: the exact sum of every PE's input (integer arithmetic).
int64_t global_sum_reference(int pes, uint64_t n);
// The local reduce of the host models, the same function in every model.
double global_sum_local(const double* x, uint64_t n);

// Host-memory PEs: the models marked done for host PEs in the catalog. Collective over the world.
RunResult global_sum_host(Runtime& rt, Model model, const RunConfig& cfg);
// GPU PEs: the models marked done for GPU PEs. Collective over the world. Raises
// Errc::unsupported in a build without CUDA kernels.
RunResult global_sum_gpu(Runtime& rt, Model model, const RunConfig& cfg);

}  // namespace gpucomm::apps
