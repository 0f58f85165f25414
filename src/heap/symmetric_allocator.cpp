#include "gpucomm/heap/symmetric_allocator.hpp"

namespace gpucomm::heap {

SymmetricAllocator::SymmetricAllocator(size_t capacity) : capacity_(capacity) {
  if (capacity > 0) free_[0] = capacity;
}

size_t SymmetricAllocator::allocate(size_t bytes, size_t align) {
  if (bytes == 0) bytes = 1;
  if (align == 0 || (align & (align - 1)) != 0) return SIZE_MAX;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    size_t start = it->first, len = it->second;
    size_t user = (start + align - 1) & ~(align - 1);
    if (user < start || user - start > len || len - (user - start) < bytes) continue;
    size_t end = user + bytes;
    free_.erase(it);
    if (user > start) free_[start] = user - start;
    if (start + len > end) free_[end] = start + len - end;
    used_[user] = {user, bytes};
    in_use_ += bytes;
    return user;
  }
  return SIZE_MAX;
}

bool SymmetricAllocator::release(size_t offset) {
  auto it = used_.find(offset);
  if (it == used_.end()) return false;
  size_t start = it->second.first, len = it->second.second;
  in_use_ -= len;
  used_.erase(it);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + len) {
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += len;
      return true;
    }
  }
  free_[start] = len;
  return true;
}

size_t SymmetricAllocator::block_size(size_t offset) const {
  auto it = used_.find(offset);
  return it == used_.end() ? 0 : it->second.second;
}

}  // namespace gpucomm::heap
