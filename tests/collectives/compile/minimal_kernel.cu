// The smallest kernels that call in-kernel collectives, compiled by report_compile.py to measure
// what the collectives cost a caller's build: the compile time and the kernel's registers and
// static shared memory. GPUCOMM_TEST_CALL picks the calls:
//   1  one barrier at level GPUCOMM_TEST_LEVEL (gpucomm::coop::Warp, gpucomm::coop::Block,
//      gpucomm::coll::Grid)
//   2  one f32 sum allreduce at that level
//   3  a block's session: a barrier and an f32 sum allreduce through coll::device::Session
//   4  six call sites in one kernel: a barrier and an allreduce at warp, block and grid level
#include "gpucomm/collectives/collectives_device.cuh"
#include "gpucomm/collectives/session_device.cuh"

#ifndef GPUCOMM_TEST_LEVEL
#define GPUCOMM_TEST_LEVEL gpucomm::coop::Block
#endif
#ifndef GPUCOMM_TEST_CALL
#define GPUCOMM_TEST_CALL 1
#endif

namespace coll = gpucomm::coll;

__global__ void __launch_bounds__(256)
    minimal_collective(const __grid_constant__ gpucomm::DeviceHandle h, const __grid_constant__ coll::CollHandle ch,
                       float* x, size_t n) {
#if GPUCOMM_TEST_CALL == 1
  coll::device::barrier(GPUCOMM_TEST_LEVEL{}, h, ch);
#elif GPUCOMM_TEST_CALL == 2
  coll::device::allreduce(GPUCOMM_TEST_LEVEL{}, h, ch, x, x, n, coll::RedOp::sum);
#elif GPUCOMM_TEST_CALL == 3
  coll::device::Session s(gpucomm::coop::Block{}, h, ch);
  s.barrier();
  s.allreduce(x, x, n, coll::RedOp::sum);
#else
  if (threadIdx.x < 32) {
    coll::device::barrier(gpucomm::coop::Warp{}, h, ch);
    coll::device::allreduce(gpucomm::coop::Warp{}, h, ch, x, x, n, coll::RedOp::sum);
  }
  __syncthreads();
  coll::device::barrier(gpucomm::coop::Block{}, h, ch);
  coll::device::allreduce(gpucomm::coop::Block{}, h, ch, x, x, n, coll::RedOp::sum);
  coll::device::barrier(coll::Grid{}, h, ch);
  coll::device::allreduce(coll::Grid{}, h, ch, x, x, n, coll::RedOp::sum);
#endif
}
