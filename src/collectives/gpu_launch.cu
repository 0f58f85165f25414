// The host side of the host API's kernels: picks the kernel of a call and launches it, one block
// per channel, on the caller's stream (nothing synchronizes, so graphs can capture it).
#include "gpu_kernels.cuh"

namespace gpucomm::coll::detail {

bool gpu_kernels_built() {
  return true;
}

cudaError_t preload_kernels() {
  if (cudaError_t e = preload_float(); e != cudaSuccess) return e;
  if (cudaError_t e = preload_int(); e != cudaSuccess) return e;
  if (cudaError_t e = preload_alone(); e != cudaSuccess) return e;
  return preload_move();
}

cudaError_t launch(const DeviceHandle& h, const CollHandle& ch, const Call& call, unsigned threads, cudaStream_t s) {
  KernelFn fn = nullptr;
  if (reduces(call.op)) {
    fn = is_integer(call.dt) ? reduction_kernel_int(call.dt) : reduction_kernel_float(call.dt);
  } else {
    fn = movement_kernel_for(type_size(call.dt));
  }
  if (!fn) return cudaErrorInvalidValue;
  DeviceHandle hv = h;
  CollHandle chv = ch;
  Call cv = call;
  void* args[] = {&hv, &chv, &cv};
  return cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(call.channels), dim3(threads), args, 0, s);
}

cudaError_t launch_alltoallv_inline(const DeviceHandle& h, const CollHandle& ch, const Call& call,
                                    const uint64_t* send_counts, const uint64_t* send_displs,
                                    const uint64_t* recv_counts, const uint64_t* recv_displs, unsigned threads,
                                    cudaStream_t s) {
  InlineCounts counts{};
  const int n = ch.team.size;
  for (int i = 0; i < n && i < kInlineCountsMax; ++i) {
    counts.v[0][i] = send_counts[i];
    counts.v[1][i] = send_displs[i];
    counts.v[2][i] = recv_counts[i];
    counts.v[3][i] = recv_displs[i];
  }
  DeviceHandle hv = h;
  CollHandle chv = ch;
  Call cv = call;
  void* args[] = {&hv, &chv, &cv, &counts};
  return cudaLaunchKernel(reinterpret_cast<const void*>(alltoallv_inline_kernel_for(type_size(call.dt))),
                          dim3(call.channels), dim3(threads), args, 0, s);
}

}  // namespace gpucomm::coll::detail
