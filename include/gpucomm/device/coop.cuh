#pragma once
// Cooperation levels of the device API: which threads call an operation together. Every thread
// of the group must make the same call with the same arguments; the group splits the work.
//   coop::Thread  one thread on its own
//   coop::Warp    the 32 lanes of a full warp (all lanes active)
//   coop::Block   every thread of the thread block
namespace gpucomm::coop {

struct Thread {};
struct Warp {};
struct Block {};

__device__ inline int thread_rank(Thread) { return 0; }
__device__ inline int thread_rank(Warp) {
  return static_cast<int>((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
}
__device__ inline int thread_rank(Block) {
  return static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

__device__ inline int size(Thread) { return 1; }
__device__ inline int size(Warp) { return 32; }
__device__ inline int size(Block) { return static_cast<int>(blockDim.x * blockDim.y * blockDim.z); }

__device__ inline void sync(Thread) {}
__device__ inline void sync(Warp) { __syncwarp(); }
__device__ inline void sync(Block) { __syncthreads(); }

}  // namespace gpucomm::coop
