#pragma once
// The kernels of the host API on GPU PEs: one block per channel, each running its part of the call
// with the device backend. The parameters are __grid_constant__, so the backend refers to them in
// parameter space instead of copying them per thread.
#include "gpu_launch.hpp"
#include "gpucomm/base/load_kernels.hpp"
#include "gpucomm/collectives/collectives_device.cuh"

namespace gpucomm::coll::detail {

using KernelFn = void (*)(DeviceHandle, CollHandle, Call);

// Programmatic dependent launch (gpu_launch.cu): a kernel of the host API may start while the
// stream's previous kernel is still running. It waits here, before its first memory access, for
// that grid's completion and memory, and then lets the stream's next kernel start in turn (which
// waits the same way), so a launch's latency overlaps the kernel before it.
__device__ __forceinline__ void follow_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <DataType DT>
__global__ void __launch_bounds__(1024)
    reduction_kernel(const __grid_constant__ DeviceHandle h, const __grid_constant__ CollHandle ch,
                     const __grid_constant__ Call call) {
  follow_previous_grid();
  if (gridDim.x == 1 && call.count > 0 && straight_to_lane(ch, call)) {
    // The lane without the dispatch: this backend's state stays in registers (run()).
    DeviceBackend<coop::Block> lane(coop::Block{}, h, ch, call, 0);
    algo::reduce_ll<DT>(lane, call, Range{0, call.count});
    return;
  }
  DeviceBackend<coop::Block> b(coop::Block{}, h, ch, call, blockIdx.x);
  run_reduction<DT>(b, call, ch);
}

template <class S>
__global__ void __launch_bounds__(1024)
    movement_kernel(const __grid_constant__ DeviceHandle h, const __grid_constant__ CollHandle ch,
                    const __grid_constant__ Call call) {
  follow_previous_grid();
  if (gridDim.x == 1 && call.op == CollOp::barrier && straight_to_lane(ch, call)) {
    DeviceBackend<coop::Block> lane(coop::Block{}, h, ch, call, 0);
    algo::barrier_ll(lane, call);
    return;
  }
  DeviceBackend<coop::Block> b(coop::Block{}, h, ch, call, blockIdx.x);
  run_movement<S>(b, call);
}

// alltoallv with the host's counts and displacements in the parameters.
struct InlineCounts {
  uint64_t v[4][kInlineCountsMax];
};
template <class S>
__global__ void __launch_bounds__(1024)
    alltoallv_inline_kernel(const __grid_constant__ DeviceHandle h, const __grid_constant__ CollHandle ch,
                            const __grid_constant__ Call call, const __grid_constant__ InlineCounts counts) {
  follow_previous_grid();
  __shared__ Call c;
  if (threadIdx.x == 0) {
    c = call;
    c.send_counts = counts.v[0];
    c.send_displs = counts.v[1];
    c.recv_counts = counts.v[2];
    c.recv_displs = counts.v[3];
  }
  __syncthreads();
  DeviceBackend<coop::Block> b(coop::Block{}, h, ch, c, blockIdx.x);
  run_movement<S>(b, c);
}

// Kernel tables (one file per group, so that they compile in parallel).
KernelFn reduction_kernel_float(DataType dt);  // f8e4m3 .. f64
KernelFn reduction_kernel_int(DataType dt);    // i32 .. u64
KernelFn movement_kernel_for(size_t elem);
using InlineKernelFn = void (*)(DeviceHandle, CollHandle, Call, InlineCounts);
InlineKernelFn alltoallv_inline_kernel_for(size_t elem);
cudaError_t preload_float();
cudaError_t preload_int();
cudaError_t preload_move();

}  // namespace gpucomm::coll::detail
