// Global Sum on GPU PEs. Every model launches the same local reduce (apps/global_sum_device.cuh)
// once per step; the models differ in the exchange, which runs in the reduce kernel's last block
// (load/store, put/signal, collective inside the kernel) or after the kernel ends (CPU-controlled).
// Timing: CUDA events recorded back to back on the runtime's stream, one between every two steps,
// so a step's interval includes the host's gaps (the CPU-controlled model's synchronization and
// relaunch).
#include <cuda_runtime.h>

#include <optional>
#include <string>

#include "gpucomm/apps/global_sum.hpp"
#include "gpucomm/apps/global_sum_device.cuh"
#include "gpucomm/apps/persistent_device.cuh"
#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/collectives/collectives_device.cuh"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/device/gpucomm_device.cuh"

namespace gpucomm::apps {
namespace {

using apps::device::device_alloc;
using apps::device::ReduceScratch;

// The symmetric mailbox (two generations of one slot and one flag per PE, as on host PEs) and the
// symmetric word holding this PE's local sum (the source of puts and of the collective).
struct Mailbox {
  double* slots;    // [2][n]
  uint64_t* flags;  // [2][n]
  double* stage;    // [1]
  int me, n;
  __device__ size_t index(uint64_t step, int pe) const {
    return static_cast<size_t>(step & 1) * static_cast<size_t>(n) + static_cast<size_t>(pe);
  }
};

// Thread 0 of the last block: waits for every PE's value of `step`, sums in rank order.
__device__ double gather_sum(const DeviceHandle& h, const Mailbox& box, uint64_t step) {
  double s = 0;
  for (int p = 0; p < box.n; ++p) {
    gpucomm::device::wait_until(coop::Thread{}, h, box.flags + box.index(step, p), Cmp::ge, step);
    s += box.slots[box.index(step, p)];
  }
  return s;
}

__global__ void k_cpu(const double* x, uint64_t n, ReduceScratch s, double corrupt, double* local_out) {
  __shared__ double local;
  if (!apps::device::local_reduce(x, n, s, &local)) return;
  if (threadIdx.x == 0) *local_out = local + corrupt;
}

__global__ void k_loadstore(const double* x, uint64_t n, ReduceScratch s, double corrupt, DeviceHandle h, Mailbox box,
                            uint64_t step, double* result) {
  __shared__ double local;
  if (!apps::device::local_reduce(x, n, s, &local) || threadIdx.x != 0) return;
  const double v = local + corrupt;
  const size_t mine = box.index(step, box.me);
  for (int p = 0; p < box.n; ++p) {
    *gpucomm::device::ptr(h, box.slots + mine, p) = v;  // a plain store into the peer's memory
    // Release at system scope: whoever sees the flag sees the value (the host checked every PE is mapped).
    mem::store<mem::kSystem>(gpucomm::device::ptr(h, box.flags + mine, p), step, mem::release);
  }
  *result = gather_sum(h, box, step);
}

__global__ void k_putget(const double* x, uint64_t n, ReduceScratch s, double corrupt, DeviceHandle h, Mailbox box,
                         uint64_t step, double* result) {
  __shared__ double local;
  if (!apps::device::local_reduce(x, n, s, &local) || threadIdx.x != 0) return;
  *box.stage = local + corrupt;
  const size_t mine = box.index(step, box.me);
  for (int p = 0; p < box.n; ++p) {
    gpucomm::device::put_signal(coop::Thread{}, h, box.slots + mine, box.stage, sizeof(double), box.flags + mine, step,
                                SignalOp::set, p);
  }
  *result = gather_sum(h, box, step);
}

__global__ void k_collective(const double* x, uint64_t n, ReduceScratch s, double corrupt, DeviceHandle h,
                             coll::CollHandle ch, Mailbox box, double* result) {
  __shared__ double local;
  if (!apps::device::local_reduce(x, n, s, &local)) return;
  if (threadIdx.x == 0) *box.stage = local + corrupt;
  __syncthreads();
  coll::device::allreduce(coop::Block{}, h, ch, box.stage, result, 1, coll::RedOp::sum);
}

}  // namespace

RunResult global_sum_gpu(Runtime& rt, Model model, const RunConfig& cfg) {
  if (model != Model::loadstore && model != Model::putget && model != Model::collective && model != Model::cpu) {
    raise_unavailable("global_sum", model, true);
  }
  GPUCOMM_CUDA_CHECK(cudaSetDevice(rt.device_id()));
  auto stream = reinterpret_cast<cudaStream_t>(rt.stream());
  const int me = rt.rank(), npes = rt.size();
  const uint64_t n = cfg.size;
  const int steps = cfg.warmup + cfg.iters;
  const double corrupt = me == cfg.corrupt_rank ? 1.0 : 0.0;

  const std::vector<double> host_x = global_sum_inputs(me, n);
  double* x = device_alloc<double>(n);
  GPUCOMM_CUDA_CHECK(cudaMemcpy(x, host_x.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  int sms = 0;
  GPUCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, rt.device_id()));
  const unsigned blocks = apps::device::reduce_blocks(n, 2u * static_cast<unsigned>(sms));
  ReduceScratch scratch{device_alloc<double>(blocks), device_alloc<unsigned>(1)};
  double* results = device_alloc<double>(static_cast<size_t>(steps));
  double* local = device_alloc<double>(1);
  double* pinned = nullptr;
  GPUCOMM_CUDA_CHECK(cudaMallocHost(&pinned, static_cast<size_t>(steps) * sizeof(double)));

  Mailbox box{static_cast<double*>(rt.calloc(2 * static_cast<size_t>(npes), sizeof(double))),
              static_cast<uint64_t*>(rt.calloc(2 * static_cast<size_t>(npes), sizeof(uint64_t))),
              static_cast<double*>(rt.calloc(1, sizeof(double))), me, npes};
  if (model == Model::loadstore) {
    for (int p = 0; p < npes; ++p) {
      if (!rt.ptr(box.slots, p)) {
        raise(Errc::unsupported, "global_sum loadstore",
              "PE " + std::to_string(p) + " is not reachable by loads and stores from this GPU");
      }
    }
  }
  std::optional<coll::Collectives> coll;
  coll::Collectives* host_coll = nullptr;  // the collective and CPU-controlled models
  coll::CollHandle ch{};
  if (model == Model::collective || model == Model::cpu) {
    host_coll = &coll.emplace(rt);
    ch = host_coll->handle(rt.world());
  }
  const DeviceHandle h = rt.device_handle();
  std::vector<cudaEvent_t> ev(static_cast<size_t>(steps) + 1);
  for (auto& e : ev) GPUCOMM_CUDA_CHECK(cudaEventCreate(&e));

  rt.barrier_all();
  GPUCOMM_CUDA_CHECK(cudaEventRecord(ev[0], stream));
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    double* result = results + it;
    switch (model) {
      case Model::loadstore:
        k_loadstore<<<blocks, apps::device::kReduceThreads, 0, stream>>>(x, n, scratch, corrupt, h, box, step, result);
        break;
      case Model::putget:
        k_putget<<<blocks, apps::device::kReduceThreads, 0, stream>>>(x, n, scratch, corrupt, h, box, step, result);
        break;
      case Model::collective:
        k_collective<<<blocks, apps::device::kReduceThreads, 0, stream>>>(x, n, scratch, corrupt, h, ch, box, result);
        break;
      default:  // cpu: the kernel ends; the host orders the allreduce and the copy, and waits once
        k_cpu<<<blocks, apps::device::kReduceThreads, 0, stream>>>(x, n, scratch, corrupt, local);
        GPUCOMM_CUDA_CHECK_LAUNCH("global_sum cpu reduce kernel");
        host_coll->allreduce(local, result, 1, coll::DataType::f64, coll::RedOp::sum, rt.world(), rt.stream());
        GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(pinned + it, result, sizeof(double), cudaMemcpyDeviceToHost, stream));
        GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
        break;
    }
    GPUCOMM_CUDA_CHECK_LAUNCH("global_sum kernel");
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev[static_cast<size_t>(it) + 1], stream));
  }
  GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (coll) coll->check_device();
  rt.check_device();

  RunResult r;
  r.model = model;
  r.size = n;
  std::vector<double> got(static_cast<size_t>(steps));
  GPUCOMM_CUDA_CHECK(cudaMemcpy(got.data(), results, got.size() * sizeof(double), cudaMemcpyDeviceToHost));
  const auto reference = static_cast<double>(global_sum_reference(npes, n));
  for (double g : got)
    if (g != reference) ++r.wrong;
  r.value = got.back();
  r.iter_us = apps::device::event_step_us(ev, cfg.warmup, steps);

  for (auto& e : ev) cudaEventDestroy(e);
  coll.reset();
  rt.barrier_all();
  rt.free(box.stage);
  rt.free(box.flags);
  rt.free(box.slots);
  cudaFreeHost(pinned);
  cudaFree(local);
  cudaFree(results);
  cudaFree(scratch.finished);
  cudaFree(scratch.partials);
  cudaFree(x);
  return r;
}

}  // namespace gpucomm::apps
