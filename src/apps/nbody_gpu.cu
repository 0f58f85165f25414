// N-Body on GPU PEs. Every model runs the same compute (apps/nbody_device.cuh) over the PE's
// bodies; the ring buffer is symmetric, two generations (step parity) of P slots with one flag
// each, as on host PEs (src/apps/nbody_host.cpp argues why a PE never overwrites a block its
// neighbour still reads).
//
// loadstore, putget: every step of the run in one persistent kernel per PE (a cooperative launch,
// every block resident). Stage k of a step: block 0 sends the held block to the next PE
// (loadstore: plain stores through device::ptr, a system-scope fence, then thread 0 release-stores
// the flag; putget: device::put_signal, block level); every block adds the interactions of its
// share of the own bodies with the held block; thread 0 of block 0 waits for pass k + 1; grid
// barrier. After the P stages every block integrates its share; grid barrier; block 0 reads the
// global timer (a step's time is the difference of two readings).
//
// cpu: one kernel per stage and one integration kernel per step; the host enqueues, on the
// runtime's stream, the library's stream-ordered put-with-signal of the held block before each
// stage's kernel and the stream-ordered wait for the next pass after it, and synchronizes once per
// step. Times are CUDA events between steps.
//
// Every step's positions are copied into a history in device memory (3 doubles per body and step);
// the host computes each step's checksum from it after the run, so the checks are not timed.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "gpucomm/apps/nbody.hpp"
#include "gpucomm/apps/nbody_device.cuh"
#include "gpucomm/apps/persistent_device.cuh"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/device/gpucomm_device.cuh"

namespace gpucomm::apps {
namespace {

using apps::device::device_alloc;
using apps::device::grid_barrier;
using apps::device::kNbodyThreads;

// The PE's state as the kernels see it.
struct Part {
  double* own;      // symmetric [nb * kNbodyStride]: this PE's bodies
  double* slots;    // symmetric [2][pes][nb * kNbodyStride]: the ring buffer
  uint64_t* flags;  // symmetric [2][pes]: the step whose block each slot holds
  uint32_t* bar;    // symmetric [2]: the grid barrier's count and generation
  double* vel;      // [nb * 3]
  double* acc;      // [nb * 3]
  double* history;  // [steps][nb * 3]: the positions after each step
  uint64_t* times;  // [steps + 1]: global timer before the first and after every step
  uint64_t nb;
  int pes, next;
  __host__ __device__ size_t index(uint64_t step, int k) const {
    return (step & 1) * static_cast<size_t>(pes) + static_cast<size_t>(k - 1);
  }
  __host__ __device__ double* slot(uint64_t step, int k) const { return slots + index(step, k) * nb * kNbodyStride; }
  __host__ __device__ uint64_t* flag(uint64_t step, int k) const { return flags + index(step, k); }
  __host__ __device__ double* held(uint64_t step, int k) const { return k == 0 ? own : slot(step, k); }
};

// Block 0: the held block into the next PE's slot k + 1 by plain stores, then its flag.
__device__ void pass_loadstore(const DeviceHandle& h, const Part& p, uint64_t step, int k) {
  const double* src = p.held(step, k);
  double* dst = gpucomm::device::ptr(h, p.slot(step, k + 1), p.next);
  for (uint64_t e = threadIdx.x; e < p.nb * kNbodyStride; e += blockDim.x) dst[e] = src[e];
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0)  // release at system scope: whoever sees the flag sees the block
    mem::store<mem::kSystem>(gpucomm::device::ptr(h, p.flag(step, k + 1), p.next), step, mem::release);
}

// Block 0: the held block into the next PE's slot k + 1 by put-with-signal.
__device__ void pass_putget(const DeviceHandle& h, const Part& p, uint64_t step, int k) {
  gpucomm::device::put_signal(coop::Block{}, h, p.slot(step, k + 1), p.held(step, k),
                              p.nb * kNbodyStride * sizeof(double), p.flag(step, k + 1), step, SignalOp::set, p.next);
}

template <Model M>
__global__ void k_persistent(Part p, DeviceHandle h, int steps) {
  const uint64_t thread = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  if (blockIdx.x == 0 && threadIdx.x == 0) p.times[0] = mem::globaltimer();
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    for (int k = 0; k < p.pes; ++k) {
      if (blockIdx.x == 0) {
        if constexpr (M == Model::loadstore) {
          pass_loadstore(h, p, step, k);
        } else {
          pass_putget(h, p, step, k);
        }
      }
      apps::device::nbody_accumulate(p.own, p.held(step, k), p.acc, p.nb, blockIdx.x, gridDim.x);
      if (blockIdx.x == 0 && threadIdx.x == 0)
        gpucomm::device::wait_until(coop::Thread{}, h, p.flag(step, k + 1), Cmp::ge, step);
      grid_barrier(h, p.bar);  // pass k + 1 arrived; every block is done with the held block
    }
    apps::device::nbody_integrate(p.own, p.vel, p.acc, p.history + static_cast<uint64_t>(it) * p.nb * 3, p.nb, thread,
                                  threads);
    grid_barrier(h, p.bar);  // the own block is integrated before stage 0 of the next step sends it
    if (blockIdx.x == 0 && threadIdx.x == 0) p.times[step] = mem::globaltimer();
  }
}

// The cpu model's kernels: one stage, and the integration.
__global__ void k_stage(Part p, const double* held) {
  apps::device::nbody_accumulate(p.own, held, p.acc, p.nb, blockIdx.x, gridDim.x);
}
__global__ void k_integrate(Part p, int it) {
  apps::device::nbody_integrate(p.own, p.vel, p.acc, p.history + static_cast<uint64_t>(it) * p.nb * 3, p.nb,
                                static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                                static_cast<uint64_t>(gridDim.x) * blockDim.x);
}

void launch_persistent(Model model, unsigned blocks, cudaStream_t stream, Part p, DeviceHandle h, int steps) {
  void* args[] = {&p, &h, &steps};
  const void* kernel = model == Model::loadstore ? reinterpret_cast<const void*>(&k_persistent<Model::loadstore>)
                                                 : reinterpret_cast<const void*>(&k_persistent<Model::putget>);
  GPUCOMM_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(kNbodyThreads), args, 0, stream));
}

}  // namespace

RunResult nbody_gpu(Runtime& rt, Model model, const RunConfig& cfg) {
  if (model != Model::loadstore && model != Model::putget && model != Model::cpu) {
    raise_unavailable("nbody", model, true);
  }
  GPUCOMM_CUDA_CHECK(cudaSetDevice(rt.device_id()));
  auto stream = reinterpret_cast<cudaStream_t>(rt.stream());
  const int me = rt.rank(), npes = rt.size();
  const uint64_t nb = nbody_per_pe(cfg.size, npes);
  const int steps = cfg.warmup + cfg.iters;
  const NbodyReference& ref = nbody_reference(npes, cfg.size, steps);
  const bool persistent = model != Model::cpu;
  const unsigned blocks =
      persistent ? apps::device::nbody_blocks(nb, apps::device::resident_blocks(
                                                      rt.device_id(),
                                                      {reinterpret_cast<const void*>(&k_persistent<Model::putget>),
                                                       reinterpret_cast<const void*>(&k_persistent<Model::loadstore>)},
                                                      kNbodyThreads, 4))
                 : apps::device::nbody_blocks(nb, 1u << 16);
  if (blocks < 1) raise(Errc::unsupported, "nbody", "the persistent kernel does not fit on this GPU");

  const uint64_t block_doubles = nb * kNbodyStride;
  Part p{};
  p.own = static_cast<double*>(rt.calloc(block_doubles, sizeof(double)));
  p.slots = static_cast<double*>(rt.calloc(2 * static_cast<uint64_t>(npes) * block_doubles, sizeof(double)));
  p.flags = static_cast<uint64_t*>(rt.calloc(2 * static_cast<uint64_t>(npes), sizeof(uint64_t)));
  p.bar = static_cast<uint32_t*>(rt.calloc(2, sizeof(uint32_t)));
  p.vel = device_alloc<double>(nb * 3);
  p.acc = device_alloc<double>(nb * 3);
  p.history = device_alloc<double>(static_cast<size_t>(steps) * nb * 3);
  p.times = device_alloc<uint64_t>(static_cast<size_t>(steps) + 1);
  p.nb = nb;
  p.pes = npes;
  p.next = (me + 1) % npes;
  const auto init = nbody_initial_part(me, nb);
  GPUCOMM_CUDA_CHECK(cudaMemcpy(p.own, init.data(), init.size() * sizeof(double), cudaMemcpyHostToDevice));
  if (model == Model::loadstore && !rt.ptr(p.slots, p.next)) {
    raise(Errc::unsupported, "nbody loadstore",
          "PE " + std::to_string(p.next) + " is not reachable by loads and stores from this GPU");
  }
  const DeviceHandle h = rt.device_handle();
  std::vector<cudaEvent_t> ev(persistent ? 0 : static_cast<size_t>(steps) + 1);
  for (auto& e : ev) GPUCOMM_CUDA_CHECK(cudaEventCreate(&e));

  rt.barrier_all();  // every PE's bodies are initialized
  if (persistent) {
    launch_persistent(model, blocks, stream, p, h, steps);
    GPUCOMM_CUDA_CHECK_LAUNCH("nbody persistent kernel");
  } else {
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev[0], stream));
    const size_t bytes = block_doubles * sizeof(double);
    for (int it = 0; it < steps; ++it) {
      const auto step = static_cast<uint64_t>(it) + 1;
      for (int k = 0; k < npes; ++k) {
        rt.put_signal_on_stream(p.slot(step, k + 1), p.held(step, k), bytes, p.flag(step, k + 1), step, SignalOp::set,
                                p.next, rt.stream());
        k_stage<<<blocks, kNbodyThreads, 0, stream>>>(p, p.held(step, k));
        GPUCOMM_CUDA_CHECK_LAUNCH("nbody stage kernel");
        rt.wait_until_on_stream(p.flag(step, k + 1), Cmp::ge, step, rt.stream());
      }
      k_integrate<<<blocks, kNbodyThreads, 0, stream>>>(p, it);
      GPUCOMM_CUDA_CHECK_LAUNCH("nbody integration kernel");
      GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
      GPUCOMM_CUDA_CHECK(cudaEventRecord(ev[static_cast<size_t>(it) + 1], stream));
    }
  }
  GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  rt.check_device();

  RunResult r;
  r.model = model;
  r.size = cfg.size;
  std::vector<double> history(static_cast<size_t>(steps) * nb * 3);
  GPUCOMM_CUDA_CHECK(cudaMemcpy(history.data(), p.history, history.size() * sizeof(double), cudaMemcpyDeviceToHost));
  std::vector<double> row(block_doubles, 0.0);  // one step's positions as a block (masses unused)
  for (int it = 0; it < steps; ++it) {
    for (uint64_t i = 0; i < nb; ++i)
      for (int c = 0; c < 3; ++c) row[i * kNbodyStride + c] = history[(static_cast<uint64_t>(it) * nb + i) * 3 + c];
    r.wrong += nbody_check_step(ref, me, it, nbody_checksum(row.data(), nb), cfg.corrupt_rank);
  }
  std::vector<double> own(block_doubles);
  GPUCOMM_CUDA_CHECK(cudaMemcpy(own.data(), p.own, own.size() * sizeof(double), cudaMemcpyDeviceToHost));
  r.wrong_cells = nbody_wrong_bodies(ref, me, own.data(), cfg.corrupt_rank);
  r.value = nbody_value(rt, nbody_checksum(own.data(), nb), cfg.corrupt_rank);
  nbody_dump(cfg, model, me, own.data(), nb);
  r.iter_us = persistent ? apps::device::timer_step_us(p.times, cfg.warmup, steps)
                         : apps::device::event_step_us(ev, cfg.warmup, steps);

  for (auto& e : ev) cudaEventDestroy(e);
  rt.barrier_all();
  cudaFree(p.times);
  cudaFree(p.history);
  cudaFree(p.acc);
  cudaFree(p.vel);
  rt.free(p.bar);
  rt.free(p.flags);
  rt.free(p.slots);
  rt.free(p.own);
  return r;
}

}  // namespace gpucomm::apps
