// The gpucomm._core extension: the host API for Python.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "gpucomm/version.hpp"

namespace nb = nanobind;

void bind_all(nb::module_& m);
void bind_patterns(nb::module_& m);   // gpucomm.patterns
void bind_messaging(nb::module_& m);  // gpucomm.messaging (two-sided messaging)

NB_MODULE(_core, m) {
  m.doc() = "gpucomm host API";
  m.attr("__version__") = GPUCOMM_VERSION_STRING;
  bind_all(m);
  bind_patterns(m);
  bind_messaging(m);
}
