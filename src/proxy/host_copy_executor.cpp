#include "host_copy_executor.hpp"

#include <atomic>
#include <cstring>

#include "gpucomm/base/ordering_host.hpp"

namespace gpucomm::proxy {

char* HostCopyExecutor::at(int pe, int64_t off) const {
  char* b = bases_[static_cast<size_t>(pe)];
  if (!b) {
    throw DescriptorFault(QueueFault::unreachable, Field::pe,
                          "PE " + std::to_string(pe) + " is not mapped into this process");
  }
  return b + off;
}

void HostCopyExecutor::start(const Descriptor& d, uint64_t* done) {
  switch (d.opcode) {
    case Opcode::put:
      if (d.bytes) std::memmove(at(d.pe, d.remote), reinterpret_cast<const void*>(d.local), d.bytes);
      break;
    case Opcode::put_inline:
      std::memcpy(at(d.pe, d.remote), &d.value, d.bytes);
      break;
    case Opcode::get:
      if (d.bytes) std::memmove(reinterpret_cast<void*>(d.local), at(d.pe, d.remote), d.bytes);
      break;
    case Opcode::put_signal:
      if (d.bytes) std::memmove(at(d.pe, d.remote), reinterpret_cast<const void*>(d.local), d.bytes);
      mem::host_signal(reinterpret_cast<uint64_t*>(at(d.pe, d.sig)), static_cast<SignalOp>(d.op), d.value);
      break;
    case Opcode::put_signal_inline:
      std::memcpy(at(d.pe, d.remote), &d.compare, d.bytes);
      mem::host_signal(reinterpret_cast<uint64_t*>(at(d.pe, d.sig)), static_cast<SignalOp>(d.op), d.value);
      break;
    case Opcode::signal:
      mem::host_signal(reinterpret_cast<uint64_t*>(at(d.pe, d.sig)), static_cast<SignalOp>(d.op), d.value);
      break;
    case Opcode::atomic: {
      uint64_t old =
          mem::host_apply_atomic(at(d.pe, d.remote), d.width, static_cast<AtomicOp>(d.op), d.value, d.compare);
      if (d.local) std::memcpy(reinterpret_cast<void*>(d.local), &old, sizeof old);
      break;
    }
    case Opcode::fence:
    case Opcode::nop:
      break;
  }
  set_done(done);
}

}  // namespace gpucomm::proxy
