#include "ring_reader.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/cuda_driver.hpp"

namespace gpucomm::proxy {

namespace {
constexpr uint64_t kBatch = 32;
}

RingReader::RingReader(const QueueView& v) : v_(v), staged_(v.placement == Placement::device) {
  if (staged_) stage_.resize(kBatch);
}

const Descriptor* RingReader::ready(uint64_t t, uint64_t limit) {
  if (t >= limit) return nullptr;
  if (!staged_) {
    const Descriptor& e = v_.ring[t & (v_.capacity - 1)];
    if (std::atomic_ref<uint64_t>(const_cast<uint64_t&>(e.stamp)).load(std::memory_order_acquire) != t + 1)
      return nullptr;
    // The producers wrote the next entries from across PCIe: start their cache misses now.
    __builtin_prefetch(&v_.ring[(t + 8) & (v_.capacity - 1)]);
    std::memcpy(static_cast<void*>(&entry_), &e, sizeof entry_);
    return &entry_;
  }
  if (t >= stage_first_ && t < stage_first_ + stage_count_) return &stage_[t - stage_first_];
  return refill(t, limit);
}

const Descriptor* RingReader::refill(uint64_t t, uint64_t limit) {
  const uint64_t idx = t & (v_.capacity - 1);
  uint64_t n = std::min<uint64_t>({kBatch, v_.capacity - idx, limit - t});
  stage_count_ = 0;
  auto copy = [&](uint64_t count) {
    check_cuda(cudaMemcpy(stage_.data(), v_.ring + idx, count * sizeof(Descriptor), cudaMemcpyDeviceToHost),
               "cudaMemcpy", "reading the proxy ring in device memory");
  };
  copy(n);
  uint64_t k = 0;
  while (k < n && stage_[k].stamp == t + k + 1) ++k;
  if (k == 0) return nullptr;
  copy(k);  // after the stamps were seen: the fields written before them are visible now
  stage_first_ = t;
  stage_count_ = k;
  return &stage_[0];
}

}  // namespace gpucomm::proxy
