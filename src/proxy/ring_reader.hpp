#pragma once
// How a CPU agent reads ring entries: directly when the ring is in host memory, through copies
// when it is in device memory (a CPU cannot load device memory; ComP-Net (LeBeane et al., docs/REFERENCES.md) measures
// this layout as the slow one). A staged read copies a batch of entries, checks their stamps, then copies the ready
// prefix again: the second copy starts after the stamps were seen, so it sees the fields the producer wrote before
// releasing them.
#include <cstdint>
#include <vector>

#include "gpucomm/proxy/descriptor.hpp"

namespace gpucomm::proxy {

class RingReader {
 public:
  explicit RingReader(const QueueView& v);
  // The entry of ticket `t` when its stamp says it is complete, else nullptr. Tickets at or
  // above `limit` are not looked at. The pointer stays valid until the next call.
  const Descriptor* ready(uint64_t t, uint64_t limit = UINT64_MAX);
  // Whether ticket `t` is complete (a copy for device rings).
  bool peek(uint64_t t) { return ready(t) != nullptr; }

 private:
  const Descriptor* refill(uint64_t t, uint64_t limit);
  QueueView v_;
  bool staged_;
  Descriptor entry_{};
  std::vector<Descriptor> stage_;
  uint64_t stage_first_ = 0, stage_count_ = 0;
};

}  // namespace gpucomm::proxy
