#pragma once
// A symmetric heap: one region per PE, the same size everywhere, mapped into this process for
// every PE it can reach directly (same node). An object allocated collectively lives at the
// same offset in every PE's region, so a local address names the object on every PE.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpucomm::heap {

enum class MemoryKind { host, device };

class SymmetricHeap {
 public:
  virtual ~SymmetricHeap() = default;
  virtual MemoryKind kind() const = 0;

  char* base() const { return base_; }   // this PE's region (user part)
  size_t size() const { return size_; }  // bytes of the user part
  int num_pes() const { return static_cast<int>(peer_bases_.size()); }
  bool contains(const void* p, size_t n) const {
    auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base_);
    return a >= b && a - b <= size_ && n <= size_ - (a - b);
  }
  size_t offset_of(const void* p) const { return static_cast<size_t>(static_cast<const char*>(p) - base_); }
  // Where `pe`'s copy of the object at local address `p` is mapped in this process, or
  // nullptr when that PE's region is not mapped here (a PE on another node).
  void* peer_address(const void* p, int pe) const {
    char* pb = peer_bases_[static_cast<size_t>(pe)];
    return pb ? pb + offset_of(p) : nullptr;
  }
  char* peer_base(int pe) const { return peer_bases_[static_cast<size_t>(pe)]; }

 protected:
  char* base_ = nullptr;
  size_t size_ = 0;
  std::vector<char*> peer_bases_;
};

}  // namespace gpucomm::heap
