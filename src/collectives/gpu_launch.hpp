#pragma once
// Kernels behind the host API on GPU PEs (gpu_launch.cu): one kernel per (type, reduction) for the
// operations that combine values, one per element size for the others; one block per channel.
// Builds without CUDA kernels return cudaErrorNotSupported (gpu_launch_none.cpp).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpucomm/collectives/algorithms.hpp"

namespace gpucomm::coll::detail {

// Team size up to which alltoallv takes host-side counts inside the kernel's parameters.
inline constexpr int kInlineCountsMax = 128;

bool gpu_kernels_built();
// Loads every kernel now (CUDA's lazy loading could otherwise load one while another spins).
cudaError_t preload_kernels();
cudaError_t launch(const DeviceHandle& h, const CollHandle& ch, const Call& call, unsigned threads, cudaStream_t s);
// alltoallv with counts on the host: the four arrays (ch.team.size entries each) travel in the
// kernel's parameters; call's count pointers are ignored.
// One-member teams (no protocol): bytes from src to dst (nothing when they are the same or bytes is
// 0), and a reduction's conversion of `count` elements (storage -> accumulation -> storage; a copy
// for the types that accumulate in themselves). dst == src is allowed for the conversion.
cudaError_t launch_alone_copy(void* dst, const void* src, uint64_t bytes, cudaStream_t s);
cudaError_t launch_alone_convert(DataType dt, void* dst, const void* src, uint64_t count, cudaStream_t s);
cudaError_t preload_alone();
cudaError_t launch_alltoallv_inline(const DeviceHandle& h, const CollHandle& ch, const Call& call,
                                    const uint64_t* send_counts, const uint64_t* send_displs,
                                    const uint64_t* recv_counts, const uint64_t* recv_displs, unsigned threads,
                                    cudaStream_t s);

}  // namespace gpucomm::coll::detail
