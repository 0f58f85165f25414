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

namespace {

// Whether the current device runs programmatic dependent launches (compute capability 9.0 on).
bool programmatic_launch() {
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  return major >= 9;
}

// Launches one of the host API's kernels (every one begins with follow_previous_grid()) allowed to
// start before the stream's previous kernel ends; graphs capture the programmatic edge.
cudaError_t launch_following(const void* fn, unsigned blocks, unsigned threads, void** args, cudaStream_t s) {
  static const bool programmatic = programmatic_launch();
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = s;
  cudaLaunchAttribute attr[1]{};
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = programmatic ? 1 : 0;
  return cudaLaunchKernelExC(&cfg, fn, args);
}

}  // namespace

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
  return launch_following(reinterpret_cast<const void*>(fn), call.channels, threads, args, s);
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
  return launch_following(reinterpret_cast<const void*>(alltoallv_inline_kernel_for(type_size(call.dt))), call.channels,
                          threads, args, s);
}

}  // namespace gpucomm::coll::detail
