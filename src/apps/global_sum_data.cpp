// Global Sum: the input, the CPU reference and the host models' local reduce.
#include "gpucomm/apps/global_sum.hpp"

namespace gpucomm::apps {

std::vector<double> global_sum_inputs(int rank, uint64_t n) {
  std::vector<double> x(n);
  for (uint64_t i = 0; i < n; ++i) x[i] = global_sum_input(rank, i);
  return x;
}

int64_t global_sum_reference(int pes, uint64_t n) {
  int64_t s = 0;
  for (int r = 0; r < pes; ++r)
    for (uint64_t i = 0; i < n; ++i) s += global_sum_element(r, i);
  return s;
}

double global_sum_local(const double* x, uint64_t n) {
  double s = 0;
  for (uint64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

}  // namespace gpucomm::apps
