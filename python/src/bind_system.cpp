// System queries the command-line front needs without starting a runtime.
#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_system(nb::module_& m) {
  m.def(
      "cuda_device_count",
      [] {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) {
          (void)cudaGetLastError();
          return 0;
        }
        return n;
      },
      "Number of CUDA devices usable by this process (0 without a GPU or driver).");
}
