#pragma once
// Cooperation levels of the device API, named like NCCL's device API: which threads call an
// operation together. Every thread of the group makes the same call with the same arguments;
// the group splits the work. The tag types carry no data; they select an overload and state the
// contract.
//   coop::Thread  one thread on its own
//   coop::Warp    the 32 lanes of a full warp (all lanes active)
//   coop::Block   every thread of the thread block
#include <cstdint>

namespace gpucomm::coop {

struct Thread {};
struct Warp {};
struct Block {};

// Also compiled as host code by the matching engines' SIMT emulation in tests.
#if defined(__CUDACC__) || defined(GPUCOMM_SIMT_EMULATION)
__device__ __forceinline__ uint32_t linear_thread_index() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ uint32_t lane_id() {
  return linear_thread_index() & 31u;
}
__device__ __forceinline__ uint32_t warp_id() {
  return linear_thread_index() >> 5;
}
__device__ __forceinline__ uint32_t lanemask_lt() {
  return (1u << lane_id()) - 1u;
}

__device__ __forceinline__ uint32_t thread_rank(Thread) {
  return 0;
}
__device__ __forceinline__ uint32_t thread_rank(Warp) {
  return lane_id();
}
__device__ __forceinline__ uint32_t thread_rank(Block) {
  return linear_thread_index();
}

__device__ __forceinline__ uint32_t size(Thread) {
  return 1;
}
__device__ __forceinline__ uint32_t size(Warp) {
  return 32;
}
__device__ __forceinline__ uint32_t size(Block) {
  return blockDim.x * blockDim.y * blockDim.z;
}

__device__ __forceinline__ void sync(Thread) {}
__device__ __forceinline__ void sync(Warp) {
  __syncwarp();
}
__device__ __forceinline__ void sync(Block) {
  __syncthreads();
}
#endif

}  // namespace gpucomm::coop
