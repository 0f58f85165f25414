#pragma once
#include "gpucomm/heap/symmetric_allocator.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm {

struct Runtime::AllocatorState {
  explicit AllocatorState(size_t capacity) : allocator(capacity) {}
  heap::SymmetricAllocator allocator;
  uint64_t calls = 0;  // collective allocation calls so far (names symmetry checks)
};

}  // namespace gpucomm
