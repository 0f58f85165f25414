#pragma once
// Cooperation levels for device functions, named like NCCL's device API: a function taking
// coop::Warp must be called by all 32 lanes of a warp together; coop::Block by every thread of
// the block. The tag types carry no data; they select an overload and document the contract.
#include <cstdint>

namespace gpucomm::coop {

struct Thread {};
struct Warp {};
struct Block {};

#if defined(__CUDACC__) || defined(GPUCOMM_SIMT_EMULATION)
__device__ __forceinline__ uint32_t lane_id() { return threadIdx.x & 31u; }
__device__ __forceinline__ uint32_t warp_id() { return threadIdx.x >> 5; }
__device__ __forceinline__ uint32_t lanemask_lt() { return (1u << lane_id()) - 1u; }

__device__ __forceinline__ uint32_t size(Thread) { return 1; }
__device__ __forceinline__ uint32_t size(Warp) { return 32; }
__device__ __forceinline__ uint32_t size(Block) { return blockDim.x; }
__device__ __forceinline__ uint32_t rank(Thread) { return 0; }
__device__ __forceinline__ uint32_t rank(Warp) { return lane_id(); }
__device__ __forceinline__ uint32_t rank(Block) { return threadIdx.x; }
__device__ __forceinline__ void sync(Thread) {}
__device__ __forceinline__ void sync(Warp) { __syncwarp(); }
__device__ __forceinline__ void sync(Block) { __syncthreads(); }
#endif

}  // namespace gpucomm::coop
