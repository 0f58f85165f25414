// Multi-matrix-vector on GPU PEs (include/gpucomm/apps/mmv.hpp): every PE's host thread streams
// batches to its own GPU and waits for each batch's products before writing the next one.
//
// loadstore, the persistent kernel's protocol (as GPUrdma's worker: the batch lands in GPU memory
// with its notification behind it, the products go back by the GPU's own stores):
//   producer  enqueues, on a copy stream, the batch into device memory and then the batch number
//             into the device word `go` (two copies in stream order: the number lands after the
//             batch);
//   block k   thread 0 polls `go` with acquire loads until go >= b (kStop ends the kernel), the block
//             synchronizes, every warp reads its vectors (ld.global.cv) and stores the products
//             into pinned host memory; the block synchronizes, thread 0 fences (acq_rel, system)
//             and stores done[k] = b in pinned host memory (the fence and the store form a
//             release: whoever sees done[k] = b sees the block's products);
//   producer  polls done[0..blocks) with acquire loads until each is >= b, then reads the products.
// The producer enqueues batch b + 1 only after every block's done[k] = b, so no block still reads
// batch b. Every wait has a timeout (GPUCOMM_TIMEOUT): a block that waits too long records who
// waited for what in pinned memory and ends; the producer reports it, or its own wait.
//
// (Reading the batch straight from pinned host memory, with every block polling a host word, was
// tried first: 5x slower than a launch per batch on an H200, the uncached loads of host memory and
// the polls crossing PCIe for every vector.)
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "gpucomm/apps/mmv.hpp"
#include "gpucomm/apps/mmv_device.cuh"
#include "gpucomm/base/ordering_device.cuh"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::apps {
namespace {

using apps::device::kMmvPitch;
using apps::device::kMmvThreads;
using Clock = std::chrono::steady_clock;

inline constexpr uint64_t kStop = ~uint64_t{0};

// What a persistent block that gave up waiting saw (pinned host memory; `set` written last).
struct Stuck {
  uint64_t block, batch, seen, waited_ns, set;
};

struct PersistentArgs {
  const float* matrix;      // device
  const float* in;          // the batch: pinned host memory (loadstore) or device memory (putget)
  float* out;               // pinned host: the products
  const uint64_t* host_go;  // loadstore: the batch handed over, in pinned host memory (putget: null)
  uint64_t* go;             // device: the batch handed over (kStop: end); loadstore: block 0 relays host_go
  uint64_t* done;           // pinned host: [blocks], the last batch each block finished
  Stuck* stuck;
  uint64_t vectors, timeout_ns;  // timeout_ns 0: no limit
  float corrupt;
};

// Thread 0 of a block: polls `word` (acquire, system scope) until it reaches `b`; returns what it
// saw, or kStop after recording a timeout in a.stuck.
__device__ uint64_t poll_batch(const PersistentArgs& a, const uint64_t* word, uint64_t b) {
  const uint64_t t0 = mem::globaltimer();
  uint64_t v = mem::load<mem::kSystem>(word, mem::acquire);
  while (v < b) {
    if (a.timeout_ns && mem::globaltimer() - t0 > a.timeout_ns) {
      a.stuck->block = blockIdx.x;
      a.stuck->batch = b;
      a.stuck->seen = v;
      a.stuck->waited_ns = mem::globaltimer() - t0;
      mem::store<mem::kSystem>(&a.stuck->set, uint64_t{1}, mem::release);
      return kStop;
    }
    v = mem::load<mem::kSystem>(word, mem::acquire);
  }
  return v;
}

__global__ void __launch_bounds__(kMmvThreads) k_persistent(PersistentArgs a) {
  __shared__ float m[kMmvDim * kMmvPitch];
  __shared__ uint64_t seen;
  apps::device::mmv_load_matrix(a.matrix, m);  // once for the whole run
  for (uint64_t b = 1;; ++b) {
    if (threadIdx.x == 0) {
      // loadstore: one poller crosses PCIe (block 0), the others poll its relay in device memory.
      if (a.host_go && blockIdx.x == 0) mem::store<mem::kSystem>(a.go, poll_batch(a, a.host_go, b), mem::release);
      seen = poll_batch(a, a.go, b);
    }
    __syncthreads();  // with thread 0's acquire: the batch written before `go` is visible to the block
    if (seen == kStop) return;
    apps::device::mmv_batch(m, a.in, a.out, a.vectors, a.corrupt);
    __syncthreads();
    if (threadIdx.x == 0) {
      mem::fence<mem::kSystem>(mem::acq_rel);
      mem::store<mem::kSystem>(a.done + blockIdx.x, b, mem::relaxed);
    }
  }
}

// One batch per launch: the matrix into shared memory again, then the block's share.
__global__ void __launch_bounds__(kMmvThreads)
    k_batch(const float* matrix, const float* in, float* out, uint64_t vectors, float corrupt) {
  __shared__ float m[kMmvDim * kMmvPitch];
  apps::device::mmv_load_matrix(matrix, m);
  apps::device::mmv_batch(m, in, out, vectors, corrupt);
}

template <class T>
T* pinned(size_t count) {
  void* p = nullptr;
  GPUCOMM_CUDA_CHECK(cudaHostAlloc(&p, count * sizeof(T), cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(p, 0, count * sizeof(T));
  return static_cast<T*>(p);
}

template <class T>
T* device_copy(const std::vector<T>& v) {
  void* p = nullptr;
  GPUCOMM_CUDA_CHECK(cudaMalloc(&p, v.size() * sizeof(T)));
  GPUCOMM_CUDA_CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return static_cast<T*>(p);
}

// Everything one run allocates, freed in the destructor (also when a wait raises).
struct Buffers {
  uint64_t vectors, floats;
  unsigned blocks;
  cudaStream_t stream = nullptr;
  float* matrix = nullptr;  // device
  float* d_in = nullptr;    // device (cpu, cpu_graph)
  float* d_out = nullptr;
  float* h_in = nullptr;  // pinned
  float* h_out = nullptr;
  cudaStream_t copies = nullptr;  // putget: the producer's copies, beside the persistent kernel
  uint64_t* go = nullptr;         // device
  uint64_t* go_value = nullptr;   // pinned: loadstore's host_go, putget's source of the copy into `go`
  uint64_t* done = nullptr;       // pinned
  Stuck* stuck = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool persistent_running = false;

  Buffers(uint64_t v, unsigned b) : vectors(v), floats(v * kMmvDim), blocks(b) {
    GPUCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    GPUCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking));
    matrix = device_copy(mmv_matrix_values());
    GPUCOMM_CUDA_CHECK(cudaMalloc(&d_in, floats * sizeof(float)));
    GPUCOMM_CUDA_CHECK(cudaMalloc(&d_out, floats * sizeof(float)));
    h_in = pinned<float>(floats);
    h_out = pinned<float>(floats);
    GPUCOMM_CUDA_CHECK(cudaMalloc(&go, sizeof(uint64_t)));
    GPUCOMM_CUDA_CHECK(cudaMemset(go, 0, sizeof(uint64_t)));
    go_value = pinned<uint64_t>(1);
    done = pinned<uint64_t>(b);
    stuck = pinned<Stuck>(1);
  }
  ~Buffers() {
    if (persistent_running) {  // a wait raised: end the kernel before freeing what it reads
      cudaStreamSynchronize(copies);
      mem::host_store(go_value, kStop, std::memory_order_release);
      cudaMemcpyAsync(go, go_value, sizeof(uint64_t), cudaMemcpyHostToDevice, copies);
      cudaStreamSynchronize(stream);
    }
    if (exec) cudaGraphExecDestroy(exec);
    cudaFreeHost(stuck);
    cudaFreeHost(done);
    cudaFreeHost(go_value);
    cudaFree(go);
    cudaFreeHost(h_out);
    cudaFreeHost(h_in);
    cudaFree(d_out);
    cudaFree(d_in);
    cudaFree(matrix);
    cudaStreamDestroy(copies);
    cudaStreamDestroy(stream);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  // Hands batch `b` over (kStop: ends the kernel). loadstore: a release store of the number into
  // pinned host memory (the batch is already there). putget: two copies in the copy stream's order,
  // the batch into device memory, then the number (the previous copy from go_value completed:
  // every block saw batch b - 1).
  void hand_over(Model model, uint64_t b) const {
    if (model == Model::loadstore) {
      mem::host_store(go_value, b, std::memory_order_release);
      return;
    }
    *go_value = b;
    if (b != kStop)
      GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(d_in, h_in, floats * sizeof(float), cudaMemcpyHostToDevice, copies));
    GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(go, go_value, sizeof(uint64_t), cudaMemcpyHostToDevice, copies));
  }

  // The cpu model's three operations on the stream.
  void enqueue_batch(float corrupt) const {
    const size_t bytes = floats * sizeof(float);
    GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(d_in, h_in, bytes, cudaMemcpyHostToDevice, stream));
    k_batch<<<blocks, kMmvThreads, 0, stream>>>(matrix, d_in, d_out, vectors, corrupt);
    GPUCOMM_CUDA_CHECK_LAUNCH("mmv batch kernel");
    GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, stream));
  }
};

// The producer's wait for every block's done word (loadstore).
void wait_blocks(const Buffers& buf, uint64_t batch, int rank) {
  const int64_t limit_ms = env::wait_timeout_ms();
  const auto start = Clock::now();
  for (unsigned k = 0; k < buf.blocks; ++k) {
    uint32_t spins = 0;
    while (mem::host_load(buf.done + k, std::memory_order_acquire) < batch) {
      if (mem::host_load(&buf.stuck->set, std::memory_order_acquire)) {
        const Stuck s = *buf.stuck;
        raise(Errc::timeout, "mmv loadstore",
              "PE " + std::to_string(rank) + ": persistent block " + std::to_string(s.block) + " waited " +
                  std::to_string(s.waited_ns / 1000000) + " ms for batch " + std::to_string(s.batch) +
                  " (the go word: expected >= " + std::to_string(s.batch) + ", seen " + std::to_string(s.seen) + ")");
      }
      if (++spins % 1024 == 0 && limit_ms > 0 &&
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count() > limit_ms) {
        raise(Errc::timeout, "mmv loadstore",
              "PE " + std::to_string(rank) + " waited " + std::to_string(limit_ms) + " ms for block " +
                  std::to_string(k) + "'s products of batch " + std::to_string(batch) +
                  " (its done word in pinned memory: expected >= " + std::to_string(batch) + ", seen " +
                  std::to_string(mem::host_load(buf.done + k, std::memory_order_acquire)) + ")");
      }
    }
  }
}

}  // namespace

RunResult mmv_gpu(Runtime& rt, Model model, const RunConfig& cfg) {
  const bool persistent = model == Model::loadstore || model == Model::putget;
  if (!persistent && model != Model::cpu && model != Model::cpu_graph) {
    raise_unavailable("mmv", model, true);
  }
  if (rt.pe_kind() != PeKind::gpu) raise(Errc::unsupported, "mmv", "needs GPU PEs (a kernel to keep or relaunch)");
  const uint64_t vectors = mmv_vectors(cfg.size);
  int sms = 0;
  GPUCOMM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, rt.device_id()));
  const uint64_t per_block = kMmvThreads / 32;  // vectors per block and pass
  const auto blocks =
      static_cast<unsigned>(std::min<uint64_t>(static_cast<uint64_t>(sms), (vectors + per_block - 1) / per_block));
  Buffers buf(vectors, blocks);
  // The kMmvPhases distinct batches, written into the pinned batch by a copy before each step.
  std::vector<float> batches(kMmvPhases * buf.floats);
  for (uint64_t b = 0; b < kMmvPhases; ++b) mmv_fill_batch(b, vectors, batches.data() + b * buf.floats);
  const std::vector<float>& ref = mmv_reference(vectors);
  const float corrupt = rt.rank() == cfg.corrupt_rank ? 1.0f : 0.0f;

  if (model == Model::cpu_graph) {
    cudaGraph_t graph = nullptr;
    GPUCOMM_CUDA_CHECK(cudaStreamBeginCapture(buf.stream, cudaStreamCaptureModeThreadLocal));
    buf.enqueue_batch(corrupt);
    GPUCOMM_CUDA_CHECK(cudaStreamEndCapture(buf.stream, &graph));
    const cudaError_t inst = cudaGraphInstantiate(&buf.exec, graph, 0);
    cudaGraphDestroy(graph);
    GPUCOMM_CUDA_CHECK(inst);
  }
  if (persistent) {
    const int64_t limit_ms = env::wait_timeout_ms();
    const bool zero_copy = model == Model::loadstore;
    const PersistentArgs a{buf.matrix,
                           zero_copy ? buf.h_in : buf.d_in,
                           buf.h_out,
                           zero_copy ? buf.go_value : nullptr,
                           buf.go,
                           buf.done,
                           buf.stuck,
                           vectors,
                           limit_ms > 0 ? static_cast<uint64_t>(limit_ms) * 1000000 : 0,
                           corrupt};
    k_persistent<<<blocks, kMmvThreads, 0, buf.stream>>>(a);
    GPUCOMM_CUDA_CHECK_LAUNCH("mmv persistent kernel");
    buf.persistent_running = true;
  }

  RunResult r;
  r.model = model;
  r.size = cfg.size;
  rt.barrier_all();
  const int steps = cfg.warmup + cfg.iters;
  for (int it = 0; it < steps; ++it) {
    const auto batch = static_cast<uint64_t>(it) + 1;
    const uint64_t phase = batch % kMmvPhases;
    std::memcpy(buf.h_in, batches.data() + phase * buf.floats, buf.floats * sizeof(float));  // the producer writes
    const auto t0 = Clock::now();
    switch (model) {
      case Model::loadstore:
      case Model::putget:
        buf.hand_over(model, batch);
        wait_blocks(buf, batch, rt.rank());
        break;
      case Model::cpu_graph:
        GPUCOMM_CUDA_CHECK(cudaGraphLaunch(buf.exec, buf.stream));
        GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(buf.stream));
        break;
      default:
        buf.enqueue_batch(corrupt);
        GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(buf.stream));
        break;
    }
    const auto t1 = Clock::now();
    if (it >= cfg.warmup) r.iter_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    const float* want = ref.data() + phase * buf.floats;
    uint64_t differ = 0;
    for (uint64_t j = 0; j < buf.floats; ++j) differ += buf.h_out[j] != want[j] ? 1 : 0;
    r.wrong += differ ? 1 : 0;
    r.wrong_cells += differ;
    r.value = mmv_checksum(buf.h_out, vectors);
    std::memset(buf.h_out, 0xff, buf.floats * sizeof(float));  // NaN: a batch not computed cannot pass
  }
  if (persistent) {
    buf.hand_over(model, kStop);
    GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(buf.copies));
    GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(buf.stream));
    buf.persistent_running = false;
  }
  rt.barrier_all();
  return r;
}

}  // namespace gpucomm::apps
