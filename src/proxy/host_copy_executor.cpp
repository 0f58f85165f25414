#include "host_copy_executor.hpp"

#include <atomic>
#include <cstring>

#include "gpucomm/device/handle.hpp"

namespace gpucomm::proxy {

namespace {
template <class T>
T apply(T* p, AtomicOp op, T a, T b) {
  std::atomic_ref<T> w(*p);
  constexpr auto ar = std::memory_order_acq_rel;
  switch (op) {
    case AtomicOp::fetch: return w.load(std::memory_order_acquire);
    case AtomicOp::set:
    case AtomicOp::swap: return w.exchange(a, ar);
    case AtomicOp::fetch_add: return w.fetch_add(a, ar);
    case AtomicOp::compare_swap: w.compare_exchange_strong(b, a, ar, std::memory_order_acquire); return b;
    case AtomicOp::fetch_and: return w.fetch_and(a, ar);
    case AtomicOp::fetch_or: return w.fetch_or(a, ar);
    case AtomicOp::fetch_xor: return w.fetch_xor(a, ar);
  }
  return T(0);
}

void signal_host(uint64_t* s, uint8_t op, uint64_t value) {
  std::atomic_ref<uint64_t> a(*s);
  if (static_cast<SignalOp>(op) == SignalOp::set)
    a.store(value, std::memory_order_release);
  else
    a.fetch_add(value, std::memory_order_acq_rel);
}
}  // namespace

uint64_t apply_host_atomic(void* p, unsigned width, AtomicOp op, uint64_t operand, uint64_t compare) {
  if (width == 4)
    return apply<uint32_t>(static_cast<uint32_t*>(p), op, static_cast<uint32_t>(operand), static_cast<uint32_t>(compare));
  return apply<uint64_t>(static_cast<uint64_t*>(p), op, operand, compare);
}

char* HostCopyExecutor::at(int pe, int64_t off) const {
  char* b = bases_[static_cast<size_t>(pe)];
  if (!b) throw DescriptorFault(QueueFault::unreachable, Field::pe, "PE " + std::to_string(pe) + " is not mapped into this process");
  return b + off;
}

void HostCopyExecutor::start(const Descriptor& d, uint64_t* done) {
  switch (d.opcode) {
    case Opcode::put:
      if (d.bytes) std::memmove(at(d.pe, d.remote), reinterpret_cast<const void*>(d.local), d.bytes);
      break;
    case Opcode::put_inline: std::memcpy(at(d.pe, d.remote), &d.value, d.bytes); break;
    case Opcode::get:
      if (d.bytes) std::memmove(reinterpret_cast<void*>(d.local), at(d.pe, d.remote), d.bytes);
      break;
    case Opcode::put_signal:
      if (d.bytes) std::memmove(at(d.pe, d.remote), reinterpret_cast<const void*>(d.local), d.bytes);
      signal_host(reinterpret_cast<uint64_t*>(at(d.pe, d.sig)), d.op, d.value);
      break;
    case Opcode::signal: signal_host(reinterpret_cast<uint64_t*>(at(d.pe, d.sig)), d.op, d.value); break;
    case Opcode::atomic: {
      uint64_t old = apply_host_atomic(at(d.pe, d.remote), d.width, static_cast<AtomicOp>(d.op), d.value, d.compare);
      if (d.local) std::memcpy(reinterpret_cast<void*>(d.local), &old, sizeof old);
      break;
    }
    case Opcode::fence:
    case Opcode::nop: break;
  }
  set_done(done);
}

}  // namespace gpucomm::proxy
