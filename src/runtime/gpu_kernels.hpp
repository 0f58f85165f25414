#pragma once
// Small kernels behind the host-side and stream-ordered operations of GPU PEs (gpu_kernels.cu).
// Each launcher returns the launch's error (cudaGetLastError); builds without CUDA kernels
// return cudaErrorNotSupported (gpu_kernels_none.cpp).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpucomm/base/handle.hpp"

namespace gpucomm::detail {

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
// Device barrier over the team (the world: the dissemination barrier, or the master barrier where
// some path cannot add).
cudaError_t launch_barrier(const DeviceHandle& h, const TeamHandle& team, cudaStream_t s);
// One atomic of `width` bytes (4 or 8) on `pe`'s copy of `dst`; the old value lands in *result
// (a device-accessible address, e.g. mapped pinned memory).
cudaError_t launch_atomic(const DeviceHandle& h, AtomicOp op, unsigned width, void* dst, uint64_t operand,
                          uint64_t compare, int pe, uint64_t* result, cudaStream_t s);

}  // namespace gpucomm::detail
