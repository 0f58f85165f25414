// Collective symmetric allocation.
#include <cstring>

#include "allocator_state.hpp"
#include "core/cuda_driver.hpp"
#include "gpu_state.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm {

void* Runtime::aligned_alloc(size_t alignment, size_t bytes) {
  GPUCOMM_CHECK_ARG(alignment != 0 && (alignment & (alignment - 1)) == 0, "Runtime::aligned_alloc", "alignment",
                    std::to_string(alignment) + " is not a power of two");
  heap::SymmetricHeap& h = heap();
  GPUCOMM_CHECK_ARG(bytes <= h.size(), "Runtime::malloc", "bytes",
                    std::to_string(bytes) + " exceeds the symmetric heap of " + std::to_string(h.size()) +
                        " bytes (GPUCOMM_HEAP_SIZE)");
  size_t off = alloc_->allocator.allocate(bytes, alignment);
  const uint64_t call = alloc_->calls++;
  check_symmetric_alloc(call, bytes, alignment, off);
  if (off == SIZE_MAX) {
    raise(Errc::out_of_memory, "Runtime::malloc",
          "no free range of " + std::to_string(bytes) + " bytes in the symmetric heap (" +
              std::to_string(alloc_->allocator.bytes_in_use()) + " of " + std::to_string(h.size()) +
              " bytes in use; GPUCOMM_HEAP_SIZE sets the size)");
  }
  return h.base() + off;
}

// Every PE made the same call (size, alignment) and its allocator placed the block at the same
// offset: checked in every build, on the store's all-gather that is also the allocation's
// barrier (nobody writes into the new block before every PE has it). On a mismatch every PE
// gives its block back and raises, naming the first PE that differs.
void Runtime::check_symmetric_alloc(uint64_t call, size_t bytes, size_t alignment, size_t offset) {
  struct Rec {
    uint64_t bytes, alignment, offset;
  } rec{bytes, alignment, offset};
  auto recs = bootstrap_->allgather(std::string(reinterpret_cast<const char*>(&rec), sizeof rec));
  for (int r = 0; r < size_; ++r) {
    Rec o{};
    if (recs[static_cast<size_t>(r)].size() != sizeof o) raise(Errc::protocol, "Runtime::malloc", "malformed record");
    std::memcpy(&o, recs[static_cast<size_t>(r)].data(), sizeof o);
    if (o.bytes == rec.bytes && o.alignment == rec.alignment && o.offset == rec.offset) continue;
    if (offset != SIZE_MAX) alloc_->allocator.release(offset);
    if (o.bytes != rec.bytes || o.alignment != rec.alignment) {
      raise_arg("Runtime::malloc", "bytes",
                "collective allocation #" + std::to_string(call) + " is not symmetric: this PE asked for " +
                    std::to_string(bytes) + " bytes (alignment " + std::to_string(alignment) + "), rank " +
                    std::to_string(r) + " for " + std::to_string(o.bytes) + " (alignment " +
                    std::to_string(o.alignment) + ")");
    }
    raise_arg("Runtime::malloc", "bytes",
              "collective allocation #" + std::to_string(call) + " landed at heap offset " +
                  (offset == SIZE_MAX ? std::string("none (heap full)") : std::to_string(offset)) + " here and at " +
                  (o.offset == SIZE_MAX ? std::string("none (heap full)") : std::to_string(o.offset)) + " on rank " +
                  std::to_string(r) + ": earlier allocations or frees differed between the PEs");
  }
}

void* Runtime::malloc(size_t bytes) {
  return aligned_alloc(256, bytes);
}

void* Runtime::calloc(size_t count, size_t size) {
  GPUCOMM_CHECK_ARG(size == 0 || count <= SIZE_MAX / size, "Runtime::calloc", "count", "count * size overflows");
  size_t bytes = count * size;
  void* p = aligned_alloc(256, bytes);
  if (gpu_) {
    check_cuda(cudaMemsetAsync(p, 0, bytes, gpu_->stream), "cudaMemsetAsync", "Runtime::calloc");
    gpu_sync("calloc");
  } else {
    std::memset(p, 0, bytes);
  }
  barrier_all();
  return p;
}

void Runtime::free(void* ptr) {
  if (!ptr) return;
  heap::SymmetricHeap& h = heap();
  GPUCOMM_CHECK_ARG(h.contains(ptr, 0), "Runtime::free", "ptr", "is not in the symmetric heap");
  barrier_all();  // no PE still accesses the block
  if (!alloc_->allocator.release(h.offset_of(ptr)))
    raise_arg("Runtime::free", "ptr", "is not the start of a live symmetric allocation");
}

void* Runtime::ptr(const void* sym, int pe) const {
  check_pe(pe, "Runtime::ptr");
  if (!heap_ || !heap_->contains(sym, 0)) return nullptr;
  return heap_->peer_address(sym, pe);
}

}  // namespace gpucomm
