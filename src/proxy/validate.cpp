// Descriptor validation shared by every path, and the routing executor.
#include <string>

#include "executor.hpp"

namespace gpucomm::proxy {

namespace {
[[noreturn]] void bad(QueueFault f, Field field, const std::string& why) { throw DescriptorFault(f, field, why); }

void check_range(int64_t off, uint64_t bytes, const HeapGeometry& g, Field field) {
  const bool inside = off >= -g.control_bytes && off <= g.user_bytes && bytes <= static_cast<uint64_t>(g.user_bytes - off);
  if (!inside)
    bad(QueueFault::out_of_heap, field,
        std::string(field_name(field)) + " offset " + std::to_string(off) + " (+" + std::to_string(bytes) +
            " bytes) is outside the heap [" + std::to_string(-g.control_bytes) + ", " + std::to_string(g.user_bytes) + ")");
}

void check_word(int64_t off, unsigned width, const HeapGeometry& g, Field field) {
  check_range(off, width, g, field);
  if (off % static_cast<int64_t>(width) != 0)
    bad(QueueFault::bad_size, field, std::string(field_name(field)) + " offset " + std::to_string(off) + " is not " +
                                         std::to_string(width) + "-byte aligned");
}
}  // namespace

void validate(const Descriptor& d, const HeapGeometry& g) {
  if (d.opcode == Opcode::nop) return;
  if (static_cast<unsigned>(d.opcode) > static_cast<unsigned>(Opcode::last))
    bad(QueueFault::bad_opcode, Field::opcode, "opcode " + std::to_string(static_cast<unsigned>(d.opcode)) + " is unknown");
  if (d.pe < 0 || d.pe >= g.num_pes)
    bad(QueueFault::bad_pe, Field::pe, "PE " + std::to_string(d.pe) + " is outside 0.." + std::to_string(g.num_pes - 1));
  switch (d.opcode) {
    case Opcode::put:
    case Opcode::get:
    case Opcode::put_signal:
      if (d.bytes > kMaxDescriptorBytes) bad(QueueFault::bad_size, Field::bytes, std::to_string(d.bytes) + " bytes is too large");
      check_range(d.remote, d.bytes, g, Field::remote);
      if (d.bytes && d.local == 0) bad(QueueFault::bad_address, Field::local, "null local address for a non-empty transfer");
      if (d.opcode == Opcode::put_signal) {
        check_word(d.sig, 8, g, Field::sig);
        if (d.op > 1) bad(QueueFault::bad_opcode, Field::op, "signal op " + std::to_string(d.op) + " is neither set nor add");
      }
      break;
    case Opcode::put_inline:
      if (d.bytes == 0 || d.bytes > 8) bad(QueueFault::bad_size, Field::bytes, "inline payload of " + std::to_string(d.bytes) + " bytes (1..8)");
      check_range(d.remote, d.bytes, g, Field::remote);
      break;
    case Opcode::signal:
      check_word(d.sig, 8, g, Field::sig);
      if (d.op > 1) bad(QueueFault::bad_opcode, Field::op, "signal op " + std::to_string(d.op) + " is neither set nor add");
      break;
    case Opcode::atomic:
      if (d.width != 4 && d.width != 8) bad(QueueFault::bad_size, Field::width, "atomic width " + std::to_string(d.width) + " (4 or 8)");
      if (d.op > static_cast<uint8_t>(AtomicOp::last)) bad(QueueFault::bad_opcode, Field::op, "atomic op " + std::to_string(d.op) + " is unknown");
      check_word(d.remote, d.width, g, Field::remote);
      break;
    default: break;
  }
}

RoutingExecutor::RoutingExecutor(std::vector<std::unique_ptr<Executor>> paths, std::vector<int> route)
    : paths_(std::move(paths)), route_(std::move(route)) {}

void RoutingExecutor::start(const Descriptor& d, uint64_t* done) {
  int r = d.pe >= 0 && static_cast<size_t>(d.pe) < route_.size() ? route_[static_cast<size_t>(d.pe)] : -1;
  if (r < 0) {
    if (d.opcode == Opcode::nop) return set_done(done);
    bad(QueueFault::unreachable, Field::pe, "no path from this proxy to PE " + std::to_string(d.pe));
  }
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
