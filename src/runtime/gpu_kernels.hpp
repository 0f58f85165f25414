#pragma once
// Small kernels behind the host-side and stream-ordered operations of GPU PEs (gpu_kernels.cu).
// Each launcher returns the launch's error (cudaGetLastError); builds without CUDA kernels
// return cudaErrorNotSupported (gpu_kernels_none.cpp).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpucomm/device/handle.hpp"

namespace gpucomm::detail {

enum class AtomicKind : int { fetch, set, fetch_add, swap, compare_swap, fetch_and, fetch_or, fetch_xor };

bool gpu_kernels_built();
// Loads every kernel of this file now. With CUDA's lazy loading, a first launch while another
// kernel of the process spins (a device wait, a persistent agent) can wait for that kernel to end:
// the proxy's signal kernels must never be loaded that late.
cudaError_t preload_kernels();
// Copies between two device-accessible addresses with SM stores (peer addresses included).
cudaError_t launch_copy(void* dst, const void* src, size_t bytes, cudaStream_t s);
// Fences, then sets or adds to `pe`'s copy of `sig` (symmetric address).
cudaError_t launch_signal(const DeviceHandle& h, uint64_t* sig, uint64_t value, SignalOp op, int pe, cudaStream_t s);
// Waits on this PE's `ivar` (symmetric) with the device timeout.
cudaError_t launch_wait(const DeviceHandle& h, uint64_t* ivar, Cmp cmp, uint64_t value, cudaStream_t s);
// Device dissemination barrier over all PEs.
cudaError_t launch_barrier(const DeviceHandle& h, cudaStream_t s);
// One atomic of `width` bytes (4 or 8) on `pe`'s copy of `dst`; the old value lands in *result
// (a device-accessible address, e.g. mapped pinned memory).
cudaError_t launch_atomic(const DeviceHandle& h, AtomicKind kind, unsigned width, void* dst, uint64_t a, uint64_t b, int pe,
                          uint64_t* result, cudaStream_t s);

// Proxy paths (mapped addresses, no handle): fences, then sets or adds `value` at `addr`.
cudaError_t launch_signal_at(uint64_t* addr, uint64_t value, SignalOp op, cudaStream_t s);
// One atomic (AtomicKind `kind`, 4 or 8 bytes) on the word at mapped address `addr`; the old value
// (zero-extended) lands in *result when it is not null.
cudaError_t launch_atomic_at(AtomicKind kind, unsigned width, void* addr, uint64_t a, uint64_t b, uint64_t* result, cudaStream_t s);

}  // namespace gpucomm::detail
