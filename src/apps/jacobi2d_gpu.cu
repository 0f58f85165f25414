// Jacobi 2-D on GPU PEs. Every model runs the same compute (apps/jacobi2d_device.cuh) over the
// PE's n x n points; the grid is symmetric, two buffers (iteration parity), as on host PEs.
//
// loadstore, putget: the whole loop in one persistent kernel per PE (a cooperative launch, every
// block resident), two grid barriers per iteration. Block 0 stores (loadstore: plain stores
// through device::ptr, then a system-scope release store of the neighbour's flag) or puts
// (putget: device::put_signal) the PE's edge rows into the neighbours' halo rows and waits for
// its own halo rows; grid barrier; every block updates its share and leaves its largest change;
// grid barrier; block 0 takes the maximum and all-reduces it with coll::device::allreduce (block
// level). Per-iteration times come from the global timer, read by block 0 after each allreduce.
//
// cpu: one update kernel per iteration; the host enqueues, on the runtime's stream, the
// stream-ordered put-with-signal of the edge rows and the waits for the halo rows, the update
// kernel, the stream-ordered allreduce of the residual and a copy into pinned memory, and
// synchronizes once per iteration. Times are CUDA events between iterations.
#include <cuda_runtime.h>

#include <optional>
#include <string>

#include "gpucomm/apps/jacobi2d.hpp"
#include "gpucomm/apps/jacobi2d_device.cuh"
#include "gpucomm/apps/persistent_device.cuh"
#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/collectives/collectives_device.cuh"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/device/gpucomm_device.cuh"

namespace gpucomm::apps {
namespace {

using apps::device::device_alloc;
using apps::device::grid_barrier;
using apps::device::jacobi_update;
using apps::device::kJacobiThreads;

// The PE's state as the kernels see it.
struct Part {
  double* u;           // symmetric [2][w * w]
  uint64_t* flags;     // symmetric [2]: [0] row 0 (from above) holds iteration flags[0]; [1] row n + 1 (from below)
  uint32_t* bar;       // symmetric [2]: the grid barrier's count and generation
  double* stage;       // symmetric [1]: this PE's residual, the allreduce's source
  double* partials;    // [blocks]: each block's largest change
  unsigned* finished;  // the update kernel's count of finished blocks (cpu model)
  double* residual;    // [steps]: every iteration's all-reduced residual
  uint64_t* times;     // [steps + 1]: global timer before the first and after every iteration
  uint64_t n, w;
  int up, down;  // -1 at the top and bottom
  double corrupt;
  __device__ double* buf(uint64_t step) const { return u + ((step - 1) & 1) * w * w; }
};

// Block 0: the edge rows into the neighbours' halo rows by plain stores, then the flags.
__device__ void halo_loadstore(const DeviceHandle& h, const Part& p, uint64_t step) {
  double* b = p.buf(step);
  if (p.up >= 0) {
    double* dst = gpucomm::device::ptr(h, b + (p.n + 1) * p.w, p.up);
    for (uint64_t c = 1 + threadIdx.x; c <= p.n; c += blockDim.x) dst[c] = b[p.w + c];
  }
  if (p.down >= 0) {
    double* dst = gpucomm::device::ptr(h, b, p.down);
    for (uint64_t c = 1 + threadIdx.x; c <= p.n; c += blockDim.x) dst[c] = b[p.n * p.w + c];
  }
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) {  // release at system scope: whoever sees the flag sees the row
    if (p.up >= 0) mem::store<mem::kSystem>(gpucomm::device::ptr(h, p.flags + 1, p.up), step, mem::release);
    if (p.down >= 0) mem::store<mem::kSystem>(gpucomm::device::ptr(h, p.flags + 0, p.down), step, mem::release);
  }
}

// Block 0: the edge rows into the neighbours' halo rows by put-with-signal.
__device__ void halo_putget(const DeviceHandle& h, const Part& p, uint64_t step) {
  double* b = p.buf(step);
  const size_t bytes = p.n * sizeof(double);
  if (p.up >= 0) {
    gpucomm::device::put_signal(coop::Block{}, h, b + (p.n + 1) * p.w + 1, b + p.w + 1, bytes, p.flags + 1, step,
                                SignalOp::set, p.up);
  }
  if (p.down >= 0) {
    gpucomm::device::put_signal(coop::Block{}, h, b + 1, b + p.n * p.w + 1, bytes, p.flags + 0, step, SignalOp::set,
                                p.down);
  }
}

template <Model M>
__global__ void k_persistent(Part p, DeviceHandle h, coll::CollHandle ch, int steps) {
  if (blockIdx.x == 0 && threadIdx.x == 0) p.times[0] = mem::globaltimer();
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    if (blockIdx.x == 0) {
      if constexpr (M == Model::loadstore) {
        halo_loadstore(h, p, step);
      } else {
        halo_putget(h, p, step);
      }
      if (threadIdx.x == 0) {
        if (p.up >= 0) gpucomm::device::wait_until(coop::Thread{}, h, p.flags + 0, Cmp::ge, step);
        if (p.down >= 0) gpucomm::device::wait_until(coop::Thread{}, h, p.flags + 1, Cmp::ge, step);
      }
    }
    grid_barrier(h, p.bar);
    const double mine = jacobi_update(p.buf(step), p.buf(step + 1), p.n, blockIdx.x, gridDim.x);
    if (threadIdx.x == 0) p.partials[blockIdx.x] = mine;
    grid_barrier(h, p.bar);
    if (blockIdx.x == 0) {
      if (threadIdx.x == 0) {
        double m = 0;
        for (unsigned b = 0; b < gridDim.x; ++b) m = fmax(m, p.partials[b]);
        *p.stage = m + p.corrupt;
      }
      __syncthreads();
      coll::device::allreduce(coop::Block{}, h, ch, p.stage, p.residual + it, 1, coll::RedOp::max);
      if (threadIdx.x == 0) p.times[step] = mem::globaltimer();
    }
  }
}

// The cpu model's kernel: the update, then the last block to finish leaves the PE's residual.
__global__ void k_update(Part p, uint64_t step) {
  __shared__ bool last;
  const double mine = jacobi_update(p.buf(step), p.buf(step + 1), p.n, blockIdx.x, gridDim.x);
  if (threadIdx.x == 0) {
    p.partials[blockIdx.x] = mine;
    const unsigned done = mem::fetch_add<mem::kDevice>(p.finished, 1u, mem::acq_rel);
    last = done + 1 == gridDim.x;
    if (last) {
      double m = 0;
      for (unsigned b = 0; b < gridDim.x; ++b) m = fmax(m, p.partials[b]);  // after the acquire above
      *p.stage = m + p.corrupt;
      mem::store<mem::kDevice>(p.finished, 0u, mem::relaxed);
    }
  }
}

void launch_persistent(Model model, unsigned blocks, cudaStream_t stream, Part p, DeviceHandle h, coll::CollHandle ch,
                       int steps) {
  void* args[] = {&p, &h, &ch, &steps};
  const void* kernel = model == Model::loadstore ? reinterpret_cast<const void*>(&k_persistent<Model::loadstore>)
                                                 : reinterpret_cast<const void*>(&k_persistent<Model::putget>);
  GPUCOMM_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(kJacobiThreads), args, 0, stream));
}

// The most blocks of the persistent kernel that are resident at once on this GPU (at most two per SM).
unsigned resident_blocks(int dev) {
  return apps::device::resident_blocks(dev,
                                       {reinterpret_cast<const void*>(&k_persistent<Model::putget>),
                                        reinterpret_cast<const void*>(&k_persistent<Model::loadstore>)},
                                       kJacobiThreads, 2);
}

}  // namespace

RunResult jacobi2d_gpu(Runtime& rt, Model model, const RunConfig& cfg) {
  if (model != Model::loadstore && model != Model::putget && model != Model::cpu) {
    raise_unavailable("jacobi2d", model, true);
  }
  GPUCOMM_CUDA_CHECK(cudaSetDevice(rt.device_id()));
  auto stream = reinterpret_cast<cudaStream_t>(rt.stream());
  const int me = rt.rank(), npes = rt.size();
  const uint64_t n = cfg.size, w = jacobi_width(n);
  const int steps = cfg.warmup + cfg.iters;
  const JacobiReference& ref = jacobi_reference(npes, n, steps);
  const bool persistent = model != Model::cpu;
  const unsigned blocks = apps::device::jacobi_blocks(n, resident_blocks(rt.device_id()));
  if (persistent && blocks < 1) raise(Errc::unsupported, "jacobi2d", "the persistent kernel does not fit on this GPU");

  Part p{};
  p.u = static_cast<double*>(rt.calloc(2 * w * w, sizeof(double)));
  p.flags = static_cast<uint64_t*>(rt.calloc(2, sizeof(uint64_t)));
  p.bar = static_cast<uint32_t*>(rt.calloc(2, sizeof(uint32_t)));
  p.stage = static_cast<double*>(rt.calloc(1, sizeof(double)));
  p.partials = device_alloc<double>(blocks);
  p.finished = device_alloc<unsigned>(1);
  p.residual = device_alloc<double>(static_cast<size_t>(steps));
  p.times = device_alloc<uint64_t>(static_cast<size_t>(steps) + 1);
  p.n = n;
  p.w = w;
  p.up = me > 0 ? me - 1 : -1;
  p.down = me + 1 < npes ? me + 1 : -1;
  p.corrupt = me == cfg.corrupt_rank ? 1.0 : 0.0;
  const auto init = jacobi_initial_part(me, npes, n);
  for (int b = 0; b < 2; ++b) {
    GPUCOMM_CUDA_CHECK(cudaMemcpy(p.u + static_cast<uint64_t>(b) * w * w, init.data(), w * w * sizeof(double),
                                  cudaMemcpyHostToDevice));
  }
  if (model == Model::loadstore) {
    for (int q : {p.up, p.down}) {
      if (q >= 0 && !rt.ptr(p.u, q)) {
        raise(Errc::unsupported, "jacobi2d loadstore",
              "PE " + std::to_string(q) + " is not reachable by loads and stores from this GPU");
      }
    }
  }
  coll::Collectives coll(rt);
  const coll::CollHandle ch = coll.handle(rt.world());
  const DeviceHandle h = rt.device_handle();
  double* pinned = nullptr;
  GPUCOMM_CUDA_CHECK(cudaMallocHost(&pinned, static_cast<size_t>(steps) * sizeof(double)));
  std::vector<cudaEvent_t> ev(persistent ? 0 : static_cast<size_t>(steps) + 1);
  for (auto& e : ev) GPUCOMM_CUDA_CHECK(cudaEventCreate(&e));

  rt.barrier_all();  // every PE's grid is initialized
  if (persistent) {
    launch_persistent(model, blocks, stream, p, h, ch, steps);
    GPUCOMM_CUDA_CHECK_LAUNCH("jacobi2d persistent kernel");
  } else {
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev[0], stream));
    const size_t bytes = n * sizeof(double);
    for (int it = 0; it < steps; ++it) {
      const auto step = static_cast<uint64_t>(it) + 1;
      double* b = p.u + (static_cast<uint64_t>(it) & 1) * w * w;
      if (p.up >= 0) {
        rt.put_signal_on_stream(b + (n + 1) * w + 1, b + w + 1, bytes, p.flags + 1, step, SignalOp::set, p.up,
                                rt.stream());
      }
      if (p.down >= 0)
        rt.put_signal_on_stream(b + 1, b + n * w + 1, bytes, p.flags + 0, step, SignalOp::set, p.down, rt.stream());
      if (p.up >= 0) rt.wait_until_on_stream(p.flags + 0, Cmp::ge, step, rt.stream());
      if (p.down >= 0) rt.wait_until_on_stream(p.flags + 1, Cmp::ge, step, rt.stream());
      k_update<<<blocks, kJacobiThreads, 0, stream>>>(p, step);
      GPUCOMM_CUDA_CHECK_LAUNCH("jacobi2d update kernel");
      coll.allreduce(p.stage, p.residual + it, 1, coll::DataType::f64, coll::RedOp::max, rt.world(), rt.stream());
      GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(pinned + it, p.residual + it, sizeof(double), cudaMemcpyDeviceToHost, stream));
      GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
      GPUCOMM_CUDA_CHECK(cudaEventRecord(ev[static_cast<size_t>(it) + 1], stream));
    }
  }
  GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  coll.check_device();
  rt.check_device();

  RunResult r;
  r.model = model;
  r.size = n;
  std::vector<double> got(static_cast<size_t>(steps));
  GPUCOMM_CUDA_CHECK(cudaMemcpy(got.data(), p.residual, got.size() * sizeof(double), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != ref.residual[i]) ++r.wrong;
  r.value = got.back();
  std::vector<double> part(w * w);
  GPUCOMM_CUDA_CHECK(cudaMemcpy(part.data(), p.u + (static_cast<uint64_t>(steps) & 1) * w * w, w * w * sizeof(double),
                                cudaMemcpyDeviceToHost));
  r.wrong_cells = jacobi_wrong_cells(ref, me, part.data(), cfg.corrupt_rank);
  jacobi_dump(cfg, model, me, part.data());
  r.iter_us = persistent ? apps::device::timer_step_us(p.times, cfg.warmup, steps)
                         : apps::device::event_step_us(ev, cfg.warmup, steps);

  for (auto& e : ev) cudaEventDestroy(e);
  rt.barrier_all();
  cudaFreeHost(pinned);
  cudaFree(p.times);
  cudaFree(p.residual);
  cudaFree(p.finished);
  cudaFree(p.partials);
  rt.free(p.stage);
  rt.free(p.bar);
  rt.free(p.flags);
  rt.free(p.u);
  return r;
}

}  // namespace gpucomm::apps
