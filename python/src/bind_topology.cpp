// gpucomm.topology_json() / gpucomm.topology_text(): what this machine offers (GPUs and links).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "gpucomm/topology/topology.hpp"

namespace nb = nanobind;

void bind_topology(nb::module_& m) {
  m.def(
      "topology_json", [] { return gpucomm::topology::to_json(gpucomm::topology::detect()); },
      "This machine's topology as a JSON object (host, cuda, nvml, gpus, links). Zero GPUs "
      "where there is no driver or device.");
  m.def(
      "topology_text", [] { return gpucomm::topology::to_text(gpucomm::topology::detect()); },
      "This machine's topology as a readable report: GPU table and link matrix.");
}
