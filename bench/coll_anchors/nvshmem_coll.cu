// NVSHMEM's device collectives timed inside a kernel, the anchor of gpucomm's in-kernel barrier and
// allreduce (gpucomm-bench-coll --in-kernel): nvshmem_barrier_all (one thread),
// nvshmemx_barrier_all_block, nvshmem_float_sum_reduce (one thread, 8 B) and
// nvshmemx_float_sum_reduce_block over the sizes, each a loop of back-to-back operations in one
// kernel of one block. Built by build.sh (-rdc, NVSHMEM's static device library), started by
// `gpucomm run -n N` with the unique id passed through the file NVSHMEM_ANCHOR_UID_FILE names.
#include <nvshmem.h>
#include <nvshmemx.h>

#include "anchor_common.hpp"

namespace {

constexpr const char* kUsage =
    "usage: gpucomm run -n N -- nvshmem_coll [--json FILE] [--sizes 8,64,...] [--iters N] [--samples N] "
    "[--threads T]\n";

__global__ void k_barrier_thread(int iters) {
  if (threadIdx.x == 0)
    for (int i = 0; i < iters; ++i) nvshmem_barrier_all();
}

__global__ void k_barrier_block(int iters) {
  for (int i = 0; i < iters; ++i) nvshmemx_barrier_all_block();
}

__global__ void k_reduce_thread(float* dst, const float* src, size_t n, int iters) {
  if (threadIdx.x == 0)
    for (int i = 0; i < iters; ++i) nvshmem_float_sum_reduce(NVSHMEM_TEAM_WORLD, dst, src, n);
}

__global__ void k_reduce_block(float* dst, const float* src, size_t n, int iters) {
  for (int i = 0; i < iters; ++i) nvshmemx_float_sum_reduce_block(NVSHMEM_TEAM_WORLD, dst, src, n);
}

// A collective launch (NVSHMEM's rule for kernels that call collectives: co-resident on every PE).
void launch(const void* fn, unsigned threads, void** args, cudaStream_t s) {
  if (nvshmemx_collective_launch(fn, dim3(1), dim3(threads), args, 0, s) != 0) {
    std::fprintf(stderr, "nvshmemx_collective_launch failed\n");
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const anchor::Options o = anchor::parse(argc, argv, kUsage);
  const anchor::Job j = anchor::job_from_env(kUsage);
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (j.rank == 0) nvshmemx_get_uniqueid(&id);
  if (!anchor::exchange_id(&id, sizeof id, std::getenv("NVSHMEM_ANCHOR_UID_FILE"), j.rank)) return 1;
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  nvshmemx_set_attr_uniqueid_args(j.rank, j.size, &id, &attr);
  if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
    std::fprintf(stderr, "nvshmemx_init_attr failed\n");
    return 1;
  }
  const int n = nvshmem_n_pes();
  size_t most = 8;
  for (size_t b : o.sizes) most = std::max(most, b);
  auto* src = static_cast<float*>(nvshmem_malloc(most));
  auto* dst = static_cast<float*>(nvshmem_malloc(most));
  if (!src || !dst) {
    std::fprintf(stderr, "nvshmem_malloc of %zu bytes failed\n", most);
    return 1;
  }
  std::vector<float> ones(most / sizeof(float), 1.0f);
  ANCHOR_CUDA(cudaMemcpy(src, ones.data(), most / sizeof(float) * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t s;
  ANCHOR_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto sync_all = [&] {
    nvshmemx_barrier_all_on_stream(s);
    ANCHOR_CUDA(cudaStreamSynchronize(s));
  };
  if (j.rank == 0)
    std::printf(
        "# NVSHMEM %d.%d.%d device collectives, %d PE(s), one block of %u threads, %d operations per "
        "kernel, median of %d kernels\n",
        NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION, NVSHMEM_VENDOR_PATCH_VERSION, n, o.threads, o.iters,
        o.samples);
  anchor::Report rep{o, j, {}};
  int iters = o.iters;
  {
    void* args[] = {&iters};
    rep.add({"nvshmem_barrier_all", "barrier", 0,
             anchor::time_kernel(
                 o, s, [&] { launch(reinterpret_cast<const void*>(k_barrier_thread), 32, args, s); }, sync_all)});
    rep.add({"nvshmemx_barrier_all_block", "barrier", 0,
             anchor::time_kernel(
                 o, s, [&] { launch(reinterpret_cast<const void*>(k_barrier_block), o.threads, args, s); }, sync_all)});
  }
  // Each result is n (every PE contributes ones): checked after the timed kernels.
  auto check = [&](size_t count) {
    std::vector<float> got(count);
    ANCHOR_CUDA(cudaMemcpy(got.data(), dst, count * sizeof(float), cudaMemcpyDeviceToHost));
    long long wrong = 0;
    for (float v : got) wrong += v != static_cast<float>(n);
    return wrong;
  };
  for (size_t bytes : o.sizes) {
    size_t count = std::max<size_t>(1, bytes / sizeof(float));
    void* args[] = {&dst, &src, &count, &iters};
    if (bytes == 8) {
      anchor::Row r{"nvshmem_float_sum_reduce", "allreduce", count * sizeof(float),
                    anchor::time_kernel(
                        o, s, [&] { launch(reinterpret_cast<const void*>(k_reduce_thread), 32, args, s); }, sync_all)};
      r.wrong = check(count);
      rep.add(r);
    }
    anchor::Row r{
        "nvshmemx_float_sum_reduce_block", "allreduce", count * sizeof(float),
        anchor::time_kernel(
            o, s, [&] { launch(reinterpret_cast<const void*>(k_reduce_block), o.threads, args, s); }, sync_all)};
    r.wrong = check(count);
    rep.add(r);
  }
  const int rc =
      rep.write("NVSHMEM " + std::to_string(NVSHMEM_VENDOR_MAJOR_VERSION) + "." +
                std::to_string(NVSHMEM_VENDOR_MINOR_VERSION) + "." + std::to_string(NVSHMEM_VENDOR_PATCH_VERSION));
  nvshmem_barrier_all();
  nvshmem_free(dst);
  nvshmem_free(src);
  ANCHOR_CUDA(cudaStreamDestroy(s));
  nvshmem_finalize();
  return rc;
}
