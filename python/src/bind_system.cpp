// System queries the command-line front needs without starting a runtime.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>
#include <vector>

#include "gpucomm/core/env.hpp"
#include "gpucomm/runtime/devices.hpp"

namespace nb = nanobind;

void bind_system(nb::module_& m) {
  m.def("cuda_device_count", &gpucomm::cuda_device_count,
        "Number of CUDA devices usable by this process (0 without a GPU or driver).");
  m.def(
      "env_variables",
      [] {
        std::vector<std::tuple<std::string, std::string, std::string>> out;
        for (const auto& v : gpucomm::env::known_variables()) out.emplace_back(v.name, v.default_value, v.description);
        return out;
      },
      "The GPUCOMM_* variables gpucomm reads: (name, default, meaning) each (docs/ENV.md).");
}
