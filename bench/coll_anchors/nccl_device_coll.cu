// NCCL's device API (NCCL >= 2.28, nccl_device.h) timed inside a kernel, the anchor of gpucomm's
// in-kernel barrier and allreduce (gpucomm-bench-coll --in-kernel): the LSA barrier of a
// ncclDevComm (ncclLsaBarrierSession<ncclCoopCta>::sync, acquire-release) and a one-shot allreduce
// written with load/store (LSA) windows: a barrier (every PE's input is there), each PE loads the
// whole buffer from every peer's window and sums it in rank order, a barrier (nobody overwrites its
// input while others read it). One block, `iters` operations per kernel. Built by build.sh, started
// by `gpucomm run -n N` (a GPU per rank) with the unique id passed through the file
// NCCL_ANCHOR_UID_FILE names.
#include <nccl.h>
#include <nccl_device.h>

#include "anchor_common.hpp"

namespace {

constexpr const char* kUsage =
    "usage: gpucomm run -n N -- nccl_device_coll [--json FILE] [--sizes 8,64,...] [--iters N] [--samples N] "
    "[--threads T]\n";

#define ANCHOR_NCCL(call)                                                                         \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    if (r_ != ncclSuccess) {                                                                      \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #call, ncclGetErrorString(r_), __LINE__); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

__global__ void k_barrier(ncclDevComm dc, int iters) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x};
  for (int i = 0; i < iters; ++i) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// recv = the sum over the LSA team of every peer's `count` floats at `offset` in `win`.
__global__ void k_oneshot_allreduce(ncclDevComm dc, ncclWindow_t win, size_t offset, float* recv, size_t count,
                                    int iters) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x};
  const int n = dc.lsaSize;
  for (int it = 0; it < iters; ++it) {
    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    for (size_t i = threadIdx.x; i < count; i += blockDim.x) {
      float v = 0.0f;
      for (int p = 0; p < n; ++p) v += static_cast<const float*>(ncclGetLsaPointer(win, offset, p))[i];
      recv[i] = v;
    }
    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const anchor::Options o = anchor::parse(argc, argv, kUsage);
  const anchor::Job j = anchor::job_from_env(kUsage);
  ncclUniqueId id{};
  if (j.rank == 0) ANCHOR_NCCL(ncclGetUniqueId(&id));
  if (!anchor::exchange_id(&id, sizeof id, std::getenv("NCCL_ANCHOR_UID_FILE"), j.rank)) return 1;
  ncclComm_t comm = nullptr;
  ANCHOR_NCCL(ncclCommInitRank(&comm, j.size, id, j.rank));
  int version = 0;
  ANCHOR_NCCL(ncclGetVersion(&version));
  ncclDevCommRequirements reqs{};
  reqs.lsaBarrierCount = 1;  // one block
  ncclDevComm dc{};
  ANCHOR_NCCL(ncclDevCommCreate(comm, &reqs, &dc));
  if (dc.lsaSize != j.size) {
    std::fprintf(stderr, "the LSA team has %d of the %d ranks (ranks on one node with peer access expected)\n",
                 dc.lsaSize, j.size);
    return 1;
  }
  size_t most = 8;
  for (size_t b : o.sizes) most = std::max(most, b);
  const size_t window = (most + 4095) / 4096 * 4096;
  void* buf = nullptr;
  ANCHOR_NCCL(ncclMemAlloc(&buf, window));
  ncclWindow_t win = nullptr;
  ANCHOR_NCCL(ncclCommWindowRegister(comm, buf, window, &win, NCCL_WIN_COLL_SYMMETRIC));
  std::vector<float> ones(window / sizeof(float), 1.0f);
  ANCHOR_CUDA(cudaMemcpy(buf, ones.data(), window, cudaMemcpyHostToDevice));
  float* recv = nullptr;
  ANCHOR_CUDA(cudaMalloc(&recv, most));
  cudaStream_t s;
  ANCHOR_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* token = nullptr;  // lines the ranks up between samples
  ANCHOR_CUDA(cudaMalloc(&token, sizeof(float)));
  auto sync_all = [&] {
    ANCHOR_NCCL(ncclAllReduce(token, token, 1, ncclFloat, ncclSum, comm, s));
    ANCHOR_CUDA(cudaStreamSynchronize(s));
  };
  if (j.rank == 0)
    std::printf(
        "# NCCL %d device API (LSA), %d rank(s), one block of %u threads, %d operations per kernel, "
        "median of %d kernels\n",
        version, j.size, o.threads, o.iters, o.samples);
  anchor::Report rep{o, j, {}};
  rep.add({"nccl_lsa_barrier", "barrier", 0,
           anchor::time_kernel(o, s, [&] { k_barrier<<<1, o.threads, 0, s>>>(dc, o.iters); }, sync_all)});
  for (size_t bytes : o.sizes) {
    const size_t count = std::max<size_t>(1, bytes / sizeof(float));
    anchor::Row r{
        "nccl_lsa_oneshot_allreduce", "allreduce", count * sizeof(float),
        anchor::time_kernel(
            o, s, [&] { k_oneshot_allreduce<<<1, o.threads, 0, s>>>(dc, win, 0, recv, count, o.iters); }, sync_all)};
    std::vector<float> got(count);
    ANCHOR_CUDA(cudaMemcpy(got.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost));
    r.wrong = 0;
    for (float v : got) r.wrong += v != static_cast<float>(j.size);
    rep.add(r);
  }
  const int rc = rep.write("NCCL " + std::to_string(version) + " device API");
  sync_all();
  ANCHOR_CUDA(cudaStreamDestroy(s));
  ANCHOR_NCCL(ncclCommWindowDeregister(comm, win));
  ANCHOR_NCCL(ncclDevCommDestroy(comm, &dc));
  ANCHOR_NCCL(ncclMemFree(buf));
  ANCHOR_CUDA(cudaFree(recv));
  ANCHOR_CUDA(cudaFree(token));
  ANCHOR_NCCL(ncclCommDestroy(comm));
  return rc;
}
