#pragma once
// The checks every agent applies to a descriptor before it executes it, shared by the CPU proxy
// (which adds a text, src/proxy/validate.cpp) and the GPU service block: opcode, PE, ranges
// inside the heap, sizes, widths, alignment of signal and atomic words, local addresses where
// one is needed. Plain C++; host and device code include it.
#include <cstdint>

#include "gpucomm/base/hd.hpp"
#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

// Valid remote offsets on every PE: [-control_bytes, user_bytes).
struct HeapGeometry {
  int num_pes = 1;
  int64_t user_bytes = 0;
  int64_t control_bytes = 0;
};

struct CheckResult {
  QueueFault fault = QueueFault::none;
  Field field = Field::none;
};

GPUCOMM_HD bool in_heap_range(int64_t off, uint64_t bytes, const HeapGeometry& g) {
  return off >= -g.control_bytes && off <= g.user_bytes && bytes <= static_cast<uint64_t>(g.user_bytes - off);
}

GPUCOMM_HD CheckResult check_word(int64_t off, unsigned width, const HeapGeometry& g, Field f) {
  if (!in_heap_range(off, width, g)) return {QueueFault::out_of_heap, f};
  if (off % static_cast<int64_t>(width) != 0) return {QueueFault::bad_size, f};
  return {};
}

GPUCOMM_HD CheckResult check_descriptor(const Descriptor& d, const HeapGeometry& g) {
  if (d.opcode == Opcode::nop) return {};
  if (static_cast<unsigned>(d.opcode) > static_cast<unsigned>(Opcode::last))
    return {QueueFault::bad_opcode, Field::opcode};
  if (d.pe < 0 || d.pe >= g.num_pes) return {QueueFault::bad_pe, Field::pe};
  switch (d.opcode) {
    case Opcode::put:
    case Opcode::get:
    case Opcode::put_signal:
      if (d.bytes > kMaxDescriptorBytes) return {QueueFault::bad_size, Field::bytes};
      if (!in_heap_range(d.remote, d.bytes, g)) return {QueueFault::out_of_heap, Field::remote};
      if (d.bytes && d.local == 0) return {QueueFault::bad_address, Field::local};
      if (d.opcode == Opcode::put_signal) {
        if (d.op > 1) return {QueueFault::bad_opcode, Field::op};
        return check_word(d.sig, 8, g, Field::sig);
      }
      return {};
    case Opcode::put_inline:
    case Opcode::put_signal_inline:
      if (d.bytes == 0 || d.bytes > 8) return {QueueFault::bad_size, Field::bytes};
      if (!in_heap_range(d.remote, d.bytes, g)) return {QueueFault::out_of_heap, Field::remote};
      if (d.opcode == Opcode::put_signal_inline) {
        if (d.op > 1) return {QueueFault::bad_opcode, Field::op};
        return check_word(d.sig, 8, g, Field::sig);
      }
      return {};
    case Opcode::signal:
      if (d.op > 1) return {QueueFault::bad_opcode, Field::op};
      return check_word(d.sig, 8, g, Field::sig);
    case Opcode::atomic:
      if (d.width != 4 && d.width != 8) return {QueueFault::bad_size, Field::width};
      if (d.op > static_cast<uint8_t>(AtomicOp::last)) return {QueueFault::bad_opcode, Field::op};
      return check_word(d.remote, d.width, g, Field::remote);
    default:
      return {};
  }
}

}  // namespace gpucomm::proxy
