#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_topology(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_system(nb::module_& m);
void bind_errors(nb::module_& m);
// Methods these add to gpucomm.Runtime (after bind_runtime made the class).
void bind_rma(nb::module_& m);
void bind_stream_ops(nb::module_& m);
void bind_teams(nb::module_& m);

void bind_all(nb::module_& m) {
  bind_errors(m);  // first: the other bindings' errors translate through it
  bind_system(m);
  bind_topology(m);
  bind_runtime(m);
  bind_rma(m);
  bind_stream_ops(m);
  bind_teams(m);
}
