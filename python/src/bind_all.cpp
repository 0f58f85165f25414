#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_all(nb::module_& m) { (void)m; }
