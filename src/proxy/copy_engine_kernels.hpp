#pragma once
// One-thread kernels of the copy-engine executor: a signal or an atomic on a mapped address,
// enqueued on the executor's stream after the copies they must follow (copy_engine_kernels.cu).
// Each launcher returns the launch's error; builds without CUDA kernels return
// cudaErrorNotSupported (copy_engine_kernels_none.cpp).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpucomm/base/ops.hpp"

namespace gpucomm::proxy {

// One inline write of a scatter batch: `bytes` (1..8) of `value` at `addr` (packed: the size in the
// top 4 bits of `addr_bytes`; device addresses use fewer than 60 bits).
struct ScatterWrite {
  uint64_t addr_bytes;
  uint64_t value;
};
inline constexpr int kScatterSizeShift = 60;

// Loads the kernels now: with CUDA's lazy loading, a first launch behind a kernel that waits for
// the proxy would wait for that kernel (see the runtime's preload_kernels).
cudaError_t preload_copy_engine_kernels();
// Orders the stream's earlier copies before the signal, then sets or adds `value` at `addr`.
cudaError_t launch_signal_at(uint64_t* addr, uint64_t value, SignalOp op, cudaStream_t s);
// One AtomicOp (4 or 8 bytes; operand order of ops.hpp) on the word at `addr`; the old value
// (zero-extended) lands in *result when it is not null.
// Performs the `n` writes of `w` (pinned host memory; no two touch the same byte), one thread each.
cudaError_t launch_scatter(const ScatterWrite* w, uint32_t n, cudaStream_t s);
cudaError_t launch_atomic_at(AtomicOp op, unsigned width, void* addr, uint64_t operand, uint64_t compare,
                             uint64_t* result, cudaStream_t s);

}  // namespace gpucomm::proxy
