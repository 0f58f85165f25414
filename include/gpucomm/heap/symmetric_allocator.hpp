#pragma once
// Deterministic first-fit allocator over offsets of a symmetric heap. Every PE runs the same
// sequence of collective malloc/free calls through its own copy, so every PE computes the same
// offsets: that is what makes the heap symmetric without exchanging addresses.
#include <cstddef>
#include <cstdint>
#include <map>

namespace gpucomm::heap {

class SymmetricAllocator {
 public:
  explicit SymmetricAllocator(size_t capacity);
  // Returns the offset of a block of `bytes` aligned to `align` (a power of two), or SIZE_MAX
  // when no free range fits.
  size_t allocate(size_t bytes, size_t align);
  // Frees the block at `offset`; returns false if no block starts there.
  bool release(size_t offset);
  size_t capacity() const { return capacity_; }
  size_t bytes_in_use() const { return in_use_; }
  size_t block_size(size_t offset) const;  // 0 if no block starts at offset

 private:
  size_t capacity_;
  size_t in_use_ = 0;
  std::map<size_t, size_t> free_;                     // offset -> length, coalesced
  std::map<size_t, std::pair<size_t, size_t>> used_;  // user offset -> (range start, range length)
};

}  // namespace gpucomm::heap
