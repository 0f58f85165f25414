// RandomAccess on GPU PEs. loadstore: one kernel per step whose threads make the PE's updates of the
// step (apps/random_access_device.cuh, the host models' stream) and XOR each one straight into the
// owner's table word with the device API's system-scope atomic (device::atomic_fetch_xor: a mapped
// peer GPU's memory is written directly), no buckets; the runtime's stream-ordered barrier then
// ends the step on every PE. Times: CUDA events around each step on the runtime's stream. After
// every step (untimed) the PE's table is copied to the host, its XOR all-gathered and compared with
// the reference, and after the last step every word, as on host PEs.
//
// putget and cpu bucket: a kernel makes the PE's updates, XORs its own ones into its table and
// appends the others to one list per owner (a counter word, then the updates; symmetric memory).
// Each list goes to its owner's inbox as one put_signal per owner and step (the signal set to the
// step): the step's updates are all made before any moves, so these models aggregate beyond
// kRaBucket. An apply kernel then XORs the inbox into the table (atomicXor: threads collide), and
// the stream-ordered barrier ends the step.
//   putget: no host between: the bucketing kernel's last block to finish issues the puts
//   (device::put_signal, block level) and waits for every other PE's signal.
//   cpu (CPU-controlled): the bucketing kernel ends; the host synchronizes to read the counts,
//   enqueues the library's stream-ordered put_signal_on_stream of each list and
//   wait_until_on_stream of every other PE's signal, then the apply kernel and the barrier; a
//   second synchronization follows (the check). Two synchronizations per step.
// No PE overwrites an inbox its owner still reads: the puts of step s + 1 follow a stream-ordered
// barrier that every PE enqueues after its apply kernel of step s.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gpucomm/apps/random_access.hpp"
#include "gpucomm/apps/random_access_device.cuh"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/device/gpucomm_device.cuh"

namespace gpucomm::apps {
namespace {

using apps::device::kRaChunk;
using apps::device::kRaThreads;

__global__ void k_init(uint64_t* t, uint64_t n, uint64_t base) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    t[i] = base + i;
}

__global__ void k_loadstore(RaShape sh, int rank, uint64_t step, uint64_t* t, DeviceHandle h) {
  apps::device::ra_updates(sh, rank, step, [&](uint64_t ran) {
    (void)gpucomm::device::atomic_fetch_xor<mem::kSystem>(h, t + sh.local(ran), ran, sh.owner(ran));
  });
}

// The bucketing of the cpu and putget models: the PE's own updates XORed into its table, the others
// appended to one list per owner in `out`, [P][1 + per_step] (a counter, then the updates).
__device__ void ra_bucket(const RaShape& sh, int rank, uint64_t step, uint64_t* t, unsigned long long* out) {
  const uint64_t stride = 1 + sh.per_step();
  apps::device::ra_updates(sh, rank, step, [&](uint64_t ran) {
    const int d = sh.owner(ran);
    if (d == rank) {
      atomicXor(reinterpret_cast<unsigned long long*>(t + sh.local(ran)), static_cast<unsigned long long>(ran));
      return;
    }
    unsigned long long* list = out + static_cast<uint64_t>(d) * stride;
    const unsigned long long at = atomicAdd(list, 1ull);
    list[1 + at] = ran;
  });
}

__global__ void k_bucket(RaShape sh, int rank, uint64_t step, uint64_t* t, unsigned long long* out) {
  ra_bucket(sh, rank, step, t, out);
}

// putget: the bucketing, then the last block to finish puts each list into its owner's inbox with
// device::put_signal (block level, the signal set to the step) and waits for every other PE's
// signal. The apply kernel follows on the stream.
__global__ void k_putget(RaShape sh, int rank, uint64_t step, uint64_t* t, unsigned long long* out, uint64_t* inbox,
                         uint64_t* sig, unsigned* finished, DeviceHandle h) {
  ra_bucket(sh, rank, step, t, out);
  __shared__ bool last;
  mem::fence<mem::kDevice>(mem::acq_rel);  // this thread's list entries, before the block's count
  __syncthreads();
  if (threadIdx.x == 0) {
    // Release the block's entries to the last block; acquire the others' when this block is the last.
    const unsigned done = mem::fetch_add<mem::kDevice>(finished, 1u, mem::acq_rel);
    last = done + 1 == gridDim.x;
    if (last) mem::store<mem::kDevice>(finished, 0u, mem::relaxed);  // ready for the next launch
  }
  __syncthreads();
  if (!last) return;
  mem::fence<mem::kDevice>(mem::acq_rel);
  const uint64_t stride = 1 + sh.per_step();
  for (int d = 0; d < sh.pes; ++d) {
    if (d == rank) continue;
    const unsigned long long* list = out + static_cast<uint64_t>(d) * stride;
    const uint64_t words = 1 + static_cast<uint64_t>(list[0]);  // the counter, then the updates
    gpucomm::device::put_signal(coop::Block{}, h, inbox + static_cast<uint64_t>(rank) * stride, list,
                                words * sizeof(uint64_t), sig + rank, step, SignalOp::set, d);
  }
  if (threadIdx.x == 0) {
    for (int src = 0; src < sh.pes; ++src)
      if (src != rank) gpucomm::device::wait_until(coop::Thread{}, h, sig + src, Cmp::ge, step);
  }
}

// The apply kernel of the cpu and putget models: every other PE's list in the inbox [P][1 + per_step].
__global__ void k_apply(RaShape sh, int rank, uint64_t* t, const uint64_t* inbox) {
  const uint64_t stride = 1 + sh.per_step();
  for (int src = 0; src < sh.pes; ++src) {
    if (src == rank) continue;
    const uint64_t* list = inbox + static_cast<uint64_t>(src) * stride;
    const uint64_t count = list[0];
    for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
      const uint64_t ran = list[1 + i];
      atomicXor(reinterpret_cast<unsigned long long*>(t + sh.local(ran)), static_cast<unsigned long long>(ran));
    }
  }
}

uint64_t gather_xor(Runtime& rt, uint64_t mine) {
  std::string s(sizeof mine, '\0');
  std::memcpy(s.data(), &mine, sizeof mine);
  uint64_t x = 0;
  for (const auto& v : rt.bootstrap().allgather(s)) {
    if (v.size() != sizeof(uint64_t))
      raise(Errc::protocol, "random_access", "a PE sent " + std::to_string(v.size()) + " bytes, not 8");
    uint64_t y = 0;
    std::memcpy(&y, v.data(), sizeof y);
    x ^= y;
  }
  return x;
}

RunResult run_model(Runtime& rt, Model model, const RunConfig& cfg) {
  GPUCOMM_CUDA_CHECK(cudaSetDevice(rt.device_id()));
  auto stream = reinterpret_cast<cudaStream_t>(rt.stream());
  const int steps = cfg.warmup + cfg.iters;
  const RaShape sh{rt.size(), cfg.size, steps};
  const RaReference& ref = ra_reference(rt.size(), cfg.size, steps);
  auto* t = static_cast<uint64_t*>(rt.calloc(sh.n, sizeof(uint64_t)));
  const DeviceHandle h = rt.device_handle();
  int sms = 0;
  GPUCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, rt.device_id()));
  const uint64_t chunks = (sh.per_step() + kRaChunk - 1) / kRaChunk;
  const auto blocks =
      static_cast<unsigned>(std::min<uint64_t>((chunks + kRaThreads - 1) / kRaThreads, static_cast<uint64_t>(sms) * 8));
  k_init<<<static_cast<unsigned>(std::min<uint64_t>((sh.n + kRaThreads - 1) / kRaThreads, 4096)), kRaThreads, 0,
           stream>>>(t, sh.n, static_cast<uint64_t>(rt.rank()) * sh.n);
  GPUCOMM_CUDA_CHECK_LAUNCH("random_access init kernel");
  GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  rt.barrier_all();  // every PE's table is initialized

  // putget, cpu: the lists to send and the inbox, [P][1 + per_step] each, and one signal per sender.
  const uint64_t stride = 1 + sh.per_step(), pes = static_cast<uint64_t>(rt.size());
  uint64_t* out = nullptr;
  uint64_t* inbox = nullptr;
  uint64_t* sig = nullptr;
  uint64_t* counts = nullptr;    // pinned: each list's counter, read after the bucket kernel
  unsigned* finished = nullptr;  // putget: the count of finished blocks of k_putget (0 between launches)
  if (model != Model::loadstore) {
    out = static_cast<uint64_t*>(rt.calloc(pes * stride, sizeof(uint64_t)));
    inbox = static_cast<uint64_t*>(rt.calloc(pes * stride, sizeof(uint64_t)));
    sig = static_cast<uint64_t*>(rt.calloc(pes, sizeof(uint64_t)));
    GPUCOMM_CUDA_CHECK(cudaMallocHost(&counts, pes * sizeof(uint64_t)));
    GPUCOMM_CUDA_CHECK(cudaMalloc(&finished, sizeof(unsigned)));
    GPUCOMM_CUDA_CHECK(cudaMemset(finished, 0, sizeof(unsigned)));
    rt.barrier_all();
  }
  RunResult r;
  r.model = model;
  r.size = cfg.size;
  r.updates = sh.per_step() * static_cast<uint64_t>(rt.size());
  std::vector<uint64_t> host(sh.n);
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  GPUCOMM_CUDA_CHECK(cudaEventCreate(&e0));
  GPUCOMM_CUDA_CHECK(cudaEventCreate(&e1));
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    rt.barrier_on_stream(rt.stream());  // aligns the PEs (the previous step's check ran on the host)
    GPUCOMM_CUDA_CHECK(cudaEventRecord(e0, stream));
    if (model == Model::loadstore) {
      k_loadstore<<<blocks, kRaThreads, 0, stream>>>(sh, rt.rank(), step, t, h);
      GPUCOMM_CUDA_CHECK_LAUNCH("random_access loadstore kernel");
    } else if (model == Model::putget) {
      for (uint64_t d = 0; d < pes; ++d)
        GPUCOMM_CUDA_CHECK(cudaMemsetAsync(out + d * stride, 0, sizeof(uint64_t), stream));
      k_putget<<<blocks, kRaThreads, 0, stream>>>(sh, rt.rank(), step, t, reinterpret_cast<unsigned long long*>(out),
                                                  inbox, sig, finished, h);
      GPUCOMM_CUDA_CHECK_LAUNCH("random_access putget kernel");
      k_apply<<<blocks, kRaThreads, 0, stream>>>(sh, rt.rank(), t, inbox);
      GPUCOMM_CUDA_CHECK_LAUNCH("random_access apply kernel");
    } else {
      for (uint64_t d = 0; d < pes; ++d)
        GPUCOMM_CUDA_CHECK(cudaMemsetAsync(out + d * stride, 0, sizeof(uint64_t), stream));
      k_bucket<<<blocks, kRaThreads, 0, stream>>>(sh, rt.rank(), step, t, reinterpret_cast<unsigned long long*>(out));
      GPUCOMM_CUDA_CHECK_LAUNCH("random_access bucket kernel");
      for (uint64_t d = 0; d < pes; ++d) {
        GPUCOMM_CUDA_CHECK(
            cudaMemcpyAsync(counts + d, out + d * stride, sizeof(uint64_t), cudaMemcpyDeviceToHost, stream));
      }
      GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));  // the kernel ended: the host learns the counts
      for (int d = 0; d < rt.size(); ++d) {
        if (d == rt.rank()) continue;
        const uint64_t* list = out + static_cast<uint64_t>(d) * stride;
        uint64_t* dst = inbox + static_cast<uint64_t>(rt.rank()) * stride;
        const uint64_t words = 1 + counts[d];  // the counter, then the updates
        rt.put_signal_on_stream(dst, list, words * sizeof(uint64_t), sig + rt.rank(), step, SignalOp::set, d,
                                rt.stream());
      }
      for (int src = 0; src < rt.size(); ++src)
        if (src != rt.rank()) rt.wait_until_on_stream(sig + src, Cmp::ge, step, rt.stream());
      k_apply<<<blocks, kRaThreads, 0, stream>>>(sh, rt.rank(), t, inbox);
      GPUCOMM_CUDA_CHECK_LAUNCH("random_access apply kernel");
    }
    rt.barrier_on_stream(rt.stream());  // the step ends when every PE's updates are in
    GPUCOMM_CUDA_CHECK(cudaEventRecord(e1, stream));
    GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(host.data(), t, sh.n * sizeof(uint64_t), cudaMemcpyDeviceToHost, stream));
    GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
    rt.check_device();
    float ms = 0;
    GPUCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    uint64_t x = 0;
    for (uint64_t v : host) x ^= v;
    if (rt.rank() == cfg.corrupt_rank) x ^= 1;
    const uint64_t global = gather_xor(rt, x);
    if (global != ref.step_xor[static_cast<size_t>(it)]) ++r.wrong;
    if (it >= cfg.warmup) r.iter_us.push_back(static_cast<double>(ms) * 1e3);
    r.value = ra_value(global);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  r.wrong_cells = ra_wrong_cells(ref, rt.rank(), host.data(), cfg.corrupt_rank);
  ra_dump(cfg, model, rt.rank(), host.data());
  rt.barrier_all();
  if (model != Model::loadstore) {
    cudaFree(finished);
    cudaFreeHost(counts);
    rt.free(sig);
    rt.free(inbox);
    rt.free(out);
  }
  rt.free(t);
  return r;
}

}  // namespace

RunResult random_access_gpu(Runtime& rt, Model model, const RunConfig& cfg) {
  if (model == Model::loadstore || model == Model::putget || model == Model::cpu) return run_model(rt, model, cfg);
  raise_unavailable("random_access", model, true);
}

}  // namespace gpucomm::apps
