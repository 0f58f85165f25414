// Descriptor validation with a text for the CPU proxy's fault records, and the routing executor.
#include <string>

#include "executor.hpp"

namespace gpucomm::proxy {

namespace {
std::string range_text(const char* what, int64_t off, uint64_t bytes, const HeapGeometry& g) {
  return std::string(what) + " offset " + std::to_string(off) + " (+" + std::to_string(bytes) +
         " bytes) is outside the heap [" + std::to_string(-g.control_bytes) + ", " + std::to_string(g.user_bytes) +
         ") or misaligned";
}

std::string explain(const Descriptor& d, const HeapGeometry& g, Field f) {
  switch (f) {
    case Field::opcode:
      return "opcode " + std::to_string(static_cast<unsigned>(d.opcode)) + " is unknown";
    case Field::pe:
      return "PE " + std::to_string(d.pe) + " is outside 0.." + std::to_string(g.num_pes - 1);
    case Field::remote:
      return range_text("remote", d.remote, d.opcode == Opcode::atomic ? d.width : d.bytes, g);
    case Field::sig:
      return range_text("sig", d.sig, 8, g);
    case Field::local:
      return "null local address for a transfer of " + std::to_string(d.bytes) + " bytes";
    case Field::bytes:
      return std::to_string(d.bytes) + " bytes is not allowed for opcode " +
             std::to_string(static_cast<unsigned>(d.opcode)) +
             (d.opcode == Opcode::put_inline || d.opcode == Opcode::put_signal_inline
                  ? " (inline payloads carry 1..8 bytes)"
                  : "");
    case Field::width:
      return "atomic width " + std::to_string(d.width) + " (4 or 8)";
    case Field::op:
      return "op " + std::to_string(d.op) + " is not valid for opcode " +
             std::to_string(static_cast<unsigned>(d.opcode));
    default:
      return "invalid descriptor";
  }
}
}  // namespace

void validate(const Descriptor& d, const HeapGeometry& g) {
  CheckResult r = check_descriptor(d, g);
  if (r.fault != QueueFault::none) throw DescriptorFault(r.fault, r.field, explain(d, g, r.field));
}

RoutingExecutor::RoutingExecutor(std::vector<std::unique_ptr<Executor>> paths, std::vector<int> route)
    : paths_(std::move(paths)), route_(std::move(route)) {}

void RoutingExecutor::start(const Descriptor& d, uint64_t* done) {
  const int r = d.pe >= 0 && static_cast<size_t>(d.pe) < route_.size() ? route_[static_cast<size_t>(d.pe)] : -1;
  if (r < 0)
    throw DescriptorFault(QueueFault::unreachable, Field::pe, "no path from this proxy to PE " + std::to_string(d.pe));
  paths_[static_cast<size_t>(r)]->start(d, done);
}
void RoutingExecutor::flush() {
  for (auto& p : paths_) p->flush();
}
void RoutingExecutor::progress() {
  for (auto& p : paths_) p->progress();
}
bool RoutingExecutor::busy() const {
  for (auto& p : paths_)
    if (p->busy()) return true;
  return false;
}
bool RoutingExecutor::needs_idle_progress() const {
  for (auto& p : paths_)
    if (p->needs_idle_progress()) return true;
  return false;
}

}  // namespace gpucomm::proxy
