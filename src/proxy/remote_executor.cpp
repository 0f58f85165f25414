#include "remote_executor.hpp"

#include <algorithm>
#include <atomic>

#include "gpucomm/base/handle.hpp"

namespace gpucomm::proxy {

namespace {
constexpr int kStageSlots = 1024;
}

RemoteExecutor::RemoteExecutor(std::unique_ptr<transport::Remote> remote, int64_t control_bytes)
    : remote_(std::move(remote)), control_bytes_(control_bytes), staging_(kStageSlots) {
  for (int i = kStageSlots - 1; i >= 0; --i) free_stage_.push_back(i);
  pending_.reserve(kStageSlots);
}

void RemoteExecutor::start(const Descriptor& d, uint64_t* done) {
  transport::Completion c{done};
  int stage = -1, payload = -1;
  try {
    switch (d.opcode) {
      case Opcode::put:
        remote_->put(d.pe, off(d.remote), reinterpret_cast<const void*>(d.local), d.bytes, c);
        break;
      case Opcode::put_inline:
        stage = take_stage(d.value);
        remote_->put(d.pe, off(d.remote), &staging_[static_cast<size_t>(stage)], d.bytes, c);
        break;
      case Opcode::get:
        remote_->get(reinterpret_cast<void*>(d.local), d.pe, off(d.remote), d.bytes, c);
        break;
      case Opcode::put_signal:
        if (d.bytes) {
          remote_->put(d.pe, off(d.remote), reinterpret_cast<const void*>(d.local), d.bytes, transport::Completion{});
          remote_->fence(d.pe);
        }
        stage = signal(d, c);
        break;
      case Opcode::put_signal_inline:
        // The payload's staging slot is held until the signal, which lands after it, completed.
        payload = take_stage(d.compare);
        remote_->put(d.pe, off(d.remote), &staging_[static_cast<size_t>(payload)], d.bytes, transport::Completion{});
        remote_->fence(d.pe);
        stage = signal(d, c);
        break;
      case Opcode::signal:
        stage = signal(d, c);
        break;
      case Opcode::atomic:
        remote_->atomic(d.pe, off(d.remote), static_cast<AtomicOp>(d.op), d.width, d.value, d.compare,
                        reinterpret_cast<uint64_t*>(d.local), c);
        break;
      case Opcode::fence:
        remote_->fence(d.pe);
        set_done(done);
        return;
      case Opcode::nop:
        set_done(done);
        return;
    }
  } catch (const DescriptorFault&) {
    throw;
  } catch (const Error& e) {
    if (stage >= 0) free_stage_.push_back(stage);
    if (payload >= 0) free_stage_.push_back(payload);
    QueueFault f = e.code() == Errc::invalid_argument ? QueueFault::out_of_heap : QueueFault::transport;
    throw DescriptorFault(f, f == QueueFault::transport ? Field::none : Field::remote,
                          std::string(remote_->name()) + ": " + e.what());
  }
  pending_.push_back({done, stage, payload});
}

int RemoteExecutor::signal(const Descriptor& d, transport::Completion c) {
  if (static_cast<SignalOp>(d.op) == SignalOp::set) {
    // An 8-byte put: after the fence it lands after the data, costs no round trip, and works on
    // heaps in device memory, where TCP offers no atomics.
    const int stage = take_stage(d.value);
    try {
      remote_->put(d.pe, off(d.sig), &staging_[static_cast<size_t>(stage)], 8, c);
    } catch (...) {
      free_stage_.push_back(stage);
      throw;
    }
    return stage;
  }
  remote_->atomic(d.pe, off(d.sig), AtomicOp::fetch_add, 8, d.value, 0, nullptr, c);
  return -1;
}

int RemoteExecutor::take_stage(uint64_t value) {
  while (free_stage_.empty()) progress();  // bounded: the transport's own limits apply inside
  const int stage = free_stage_.back();
  free_stage_.pop_back();
  staging_[static_cast<size_t>(stage)] = value;
  return stage;
}

void RemoteExecutor::progress() {
  remote_->progress();
  auto finished = [&](const Pending& p) {
    if (!std::atomic_ref<uint64_t>(*p.done).load(std::memory_order_acquire)) return false;
    if (p.stage >= 0) free_stage_.push_back(p.stage);
    if (p.payload >= 0) free_stage_.push_back(p.payload);
    return true;
  };
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), finished), pending_.end());
}

}  // namespace gpucomm::proxy
