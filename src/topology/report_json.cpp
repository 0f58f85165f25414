// The topology as one JSON object.
#include "gpucomm/core/json.hpp"
#include "gpucomm/topology/topology.hpp"

namespace gpucomm::topology {
namespace {

void write_gpu(JsonWriter& w, const Gpu& g) {
  w.begin_object();
  w.key("index").value(g.index);
  w.key("name").value(g.name);
  w.key("pci_bus_id").value(g.pci_bus_id);
  w.key("uuid").value(g.uuid);
  w.key("compute_capability").value(std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor));
  w.key("sm_count").value(g.sm_count);
  w.key("memory_bytes").value(g.memory_bytes);
  w.key("l2_bytes").value(g.l2_bytes);
  w.key("numa_node").value(g.numa_node);
  w.key("cpu_affinity").value(g.cpu_affinity);
  w.end_object();
}

void write_link(JsonWriter& w, const Link& l) {
  w.begin_object();
  w.key("src").value(l.src);
  w.key("dst").value(l.dst);
  w.key("peer_access").value(l.peer_access);
  w.key("native_atomics").value(l.native_atomics);
  w.key("performance_rank").value(l.performance_rank);
  w.key("type").value(link_type_name(l.type));
  w.key("nvlinks").value(l.nvlinks);
  w.key("label").value(l.label);
  w.key("source").value(l.source);
  w.end_object();
}

}  // namespace

std::string to_json(const Topology& t) {
  JsonWriter w;
  w.begin_object();
  w.key("host").value(t.host);
  w.key("cuda").begin_object();
  w.key("status").value(t.cuda_status);
  w.key("driver_version").value(t.driver_version);
  w.key("driver").value(cuda_version_string(t.driver_version));
  w.key("runtime_version").value(t.runtime_version);
  w.key("runtime").value(cuda_version_string(t.runtime_version));
  w.end_object();
  w.key("nvml").begin_object();
  w.key("available").value(t.nvml_available);
  w.key("note").value(t.nvml_note);
  w.end_object();
  w.key("gpus").begin_array();
  for (const auto& g : t.gpus) write_gpu(w, g);
  w.end_array();
  w.key("links").begin_array();
  for (const auto& l : t.links) write_link(w, l);
  w.end_array();
  w.end_object();
  return w.str();
}

}  // namespace gpucomm::topology
