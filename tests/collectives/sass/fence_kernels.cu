// The entry points whose system-scope fences check_sass_fences.py counts: one call per kernel, on
// the LL lane (the barrier and the small allreduce), at warp and block level, each on its own and
// in a session.
#include "gpucomm/collectives/collectives_device.cuh"
#include "gpucomm/collectives/session_device.cuh"

namespace gpucomm::sass {

__global__ void barrier_block(const __grid_constant__ DeviceHandle h, const __grid_constant__ coll::CollHandle ch) {
  coll::device::barrier(coop::Block{}, h, ch, coll::Algorithm::oneshot_ll);
}
__global__ void barrier_warp(const __grid_constant__ DeviceHandle h, const __grid_constant__ coll::CollHandle ch) {
  coll::device::barrier(coop::Warp{}, h, ch, coll::Algorithm::oneshot_ll);
}
__global__ void allreduce_ll_block(const __grid_constant__ DeviceHandle h, const __grid_constant__ coll::CollHandle ch,
                                   const float* send, float* recv, size_t count) {
  coll::device::allreduce(coop::Block{}, h, ch, send, recv, count, coll::RedOp::sum, coll::Algorithm::oneshot_ll);
}
__global__ void allreduce_ll_warp(const __grid_constant__ DeviceHandle h, const __grid_constant__ coll::CollHandle ch,
                                  const float* send, float* recv, size_t count) {
  coll::device::allreduce(coop::Warp{}, h, ch, send, recv, count, coll::RedOp::sum, coll::Algorithm::oneshot_ll);
}

__global__ void session_barrier_block(const __grid_constant__ DeviceHandle h,
                                      const __grid_constant__ coll::CollHandle ch) {
  coll::device::Session s(coop::Block{}, h, ch);
  s.barrier(coll::Algorithm::oneshot_ll);
}
__global__ void session_barrier_warp(const __grid_constant__ DeviceHandle h,
                                     const __grid_constant__ coll::CollHandle ch) {
  coll::device::Session s(coop::Warp{}, h, ch);
  s.barrier(coll::Algorithm::oneshot_ll);
}
__global__ void session_allreduce_ll_block(const __grid_constant__ DeviceHandle h,
                                           const __grid_constant__ coll::CollHandle ch, const float* send, float* recv,
                                           size_t count) {
  coll::device::Session s(coop::Block{}, h, ch);
  s.allreduce(send, recv, count, coll::RedOp::sum, coll::Algorithm::oneshot_ll);
}
__global__ void session_allreduce_ll_warp(const __grid_constant__ DeviceHandle h,
                                          const __grid_constant__ coll::CollHandle ch, const float* send, float* recv,
                                          size_t count) {
  coll::device::Session s(coop::Warp{}, h, ch);
  s.allreduce(send, recv, count, coll::RedOp::sum, coll::Algorithm::oneshot_ll);
}

}  // namespace gpucomm::sass
