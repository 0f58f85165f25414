// System queries the command-line front needs without starting a runtime.
#include <nanobind/nanobind.h>

#include "gpucomm/runtime/devices.hpp"

namespace nb = nanobind;

void bind_system(nb::module_& m) {
  m.def("cuda_device_count", &gpucomm::cuda_device_count,
        "Number of CUDA devices usable by this process (0 without a GPU or driver).");
}
