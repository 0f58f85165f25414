#pragma once
// Group helpers of the device layers: the leader of a cooperation group, a value broadcast from
// it, and the hand-off that publishes what the whole group wrote before its leader signals.
#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/ordering_device.cuh"

namespace gpucomm::detail {

// The leader's value to every thread of the group; also synchronizes the group, so what the
// leader acquired is visible to all of them.
template <class T>
__device__ inline T broadcast(coop::Thread, T v) {
  return v;
}
template <class T>
__device__ inline T broadcast(coop::Warp, T v) {
  __syncwarp();  // memory ordering among the lanes; the shuffle only moves the value
  return __shfl_sync(0xffffffffu, v, 0);
}
template <class T>
__device__ inline T broadcast(coop::Block b, T v) {
  __shared__ T slot;
  if (coop::thread_rank(b) == 0) slot = v;
  __syncthreads();
  T out = slot;
  __syncthreads();  // nobody overwrites the slot before every thread read it
  return out;
}

__device__ inline bool leader(coop::Thread) {
  return true;
}
template <class Coop>
__device__ inline bool leader(Coop c) {
  return coop::thread_rank(c) == 0;
}

// Makes the group's earlier writes visible (at system scope) before its leader publishes them:
// each thread's fence orders its own writes, the group barrier orders every thread's fence
// before the leader's later release (causality is transitive across the barrier).
template <class Coop>
__device__ __forceinline__ void publish_group(Coop c) {
  mem::fence<mem::kSystem>(mem::acq_rel);
  coop::sync(c);
}
__device__ __forceinline__ void publish_group(coop::Thread) {}

}  // namespace gpucomm::detail
