// GPU PEs: a flag ping-pong between two GPUs, each kernel storing into the other GPU's memory
// (mapped with CUDA IPC) and polling its own. Ordering: the payload is written by the block,
// then __syncthreads, then thread 0 issues a system-scope release store of the flag; the other
// side polls with system-scope acquire loads, so it sees the payload once it sees the flag.
#include <cuda_runtime.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "gpucomm/core/env.hpp"
#include "pingpong.hpp"

namespace gpucomm::bench {
namespace {

#define CHECK_CUDA(call)                                                     \
  do {                                                                       \
    cudaError_t e_ = (call);                                                 \
    if (e_ != cudaSuccess) raise(Errc::cuda, #call, cudaGetErrorString(e_)); \
  } while (0)

struct Status {
  int failed;  // 1: a wait timed out
  int iteration;
  uint64_t expected, seen;
  uint64_t t_start, t_end;  // %globaltimer after the first round trip and at the end
};

__device__ __forceinline__ uint64_t ld_acquire_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Thread 0 waits for *flag == v (with a timeout); returns false to every thread on timeout.
__device__ bool block_wait(const uint64_t* flag, uint64_t v, uint64_t timeout_ns, Status* st, int iteration) {
  __shared__ int ok;
  if (threadIdx.x == 0) {
    uint64_t start = globaltimer(), seen;
    ok = 1;
    while ((seen = ld_acquire_sys(flag)) != v) {
      if (timeout_ns && globaltimer() - start > timeout_ns) {
        st->expected = v;
        st->seen = seen;
        st->iteration = iteration;
        st->failed = 1;
        ok = 0;
        break;
      }
    }
  }
  __syncthreads();
  return ok;
}

// Messages that fit in the flag word: one thread, no block barriers.
__global__ void pingpong_thread_kernel(uint64_t* my_flag, uint64_t* peer_flag, int iters, uint64_t base, int initiator,
                                       uint64_t timeout_ns, Status* st) {
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (initiator) st_release_sys(peer_flag, v);
    uint64_t start = globaltimer(), seen;
    while ((seen = ld_acquire_sys(my_flag)) != v) {
      if (timeout_ns && globaltimer() - start > timeout_ns) {
        st->expected = v;
        st->seen = seen;
        st->iteration = i;
        st->failed = 1;
        return;
      }
    }
    if (!initiator) st_release_sys(peer_flag, v);
    if (initiator && i == 1) st->t_start = globaltimer();
  }
  st->t_end = globaltimer();
}

__global__ void pingpong_kernel(uint64_t* my_flag, uint64_t* peer_flag, uint4* peer_buf, const uint4* src, size_t bytes,
                                int iters, uint64_t base, int initiator, uint64_t timeout_ns, Status* st) {
  const size_t vecs = bytes / sizeof(uint4);
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (!initiator && !block_wait(my_flag, v, timeout_ns, st, i)) return;
    for (size_t k = threadIdx.x; k < vecs; k += blockDim.x) peer_buf[k] = src[k];
    for (size_t k = vecs * sizeof(uint4) + threadIdx.x; k < bytes; k += blockDim.x)
      reinterpret_cast<char*>(peer_buf)[k] = reinterpret_cast<const char*>(src)[k];
    __syncthreads();
    if (threadIdx.x == 0) {
      if (bytes) __threadfence_system();
      st_release_sys(peer_flag, v);
    }
    if (initiator && !block_wait(my_flag, v, timeout_ns, st, i)) return;
    if (initiator && i == 1 && threadIdx.x == 0) st->t_start = globaltimer();
  }
  if (threadIdx.x == 0) st->t_end = globaltimer();
}

}  // namespace

std::vector<PingPongResult> gpu_pingpong(Runtime& rt, const PingPongConfig& cfg) {
  // This program's CUDA runtime is its own copy: make the PE's device current here too.
  CHECK_CUDA(cudaSetDevice(rt.device_id()));
  size_t max_bytes = 16;
  for (size_t s : cfg.sizes) max_bytes = std::max(max_bytes, (s + 15) / 16 * 16);
  const size_t flag_bytes = 256;
  char* mine = nullptr;
  CHECK_CUDA(cudaMalloc(&mine, flag_bytes + max_bytes));
  CHECK_CUDA(cudaMemset(mine, 0, flag_bytes + max_bytes));
  uint4* src = nullptr;
  CHECK_CUDA(cudaMalloc(&src, max_bytes));
  CHECK_CUDA(cudaMemset(src, 0x5a, max_bytes));
  Status* st = nullptr;
  CHECK_CUDA(cudaHostAlloc(&st, sizeof(Status), cudaHostAllocMapped));
  Status* st_dev = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&st_dev), st, 0));
  cudaIpcMemHandle_t handle;
  CHECK_CUDA(cudaIpcGetMemHandle(&handle, mine));
  struct Info {
    cudaIpcMemHandle_t handle;
    int device;
  } info{handle, rt.device_id()};
  auto all = rt.bootstrap().allgather(std::string(reinterpret_cast<const char*>(&info), sizeof info));
  std::vector<Info> peers(all.size());
  for (size_t r = 0; r < all.size(); ++r) std::memcpy(&peers[r], all[r].data(), sizeof(Info));

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const uint64_t timeout_ns = static_cast<uint64_t>(env::wait_timeout_ms()) * 1000000ULL;
  std::vector<PingPongResult> out;
  for (int a = 0; a < rt.size(); ++a) {
    for (int b = a + 1; b < rt.size(); ++b) {
      const bool in_pair = rt.rank() == a || rt.rank() == b;
      const int peer = rt.rank() == a ? b : a;
      char* peer_mem = nullptr;
      if (in_pair) {
        CHECK_CUDA(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&peer_mem), peers[static_cast<size_t>(peer)].handle,
                                        cudaIpcMemLazyEnablePeerAccess));
      }
      // PEs sharing one GPU time-slice: correct, but the latency is the scheduler's.
      const bool shared = peers[static_cast<size_t>(a)].device == peers[static_cast<size_t>(b)].device;
      const int iters = shared ? std::min(cfg.iters, 20) : cfg.iters;
      for (size_t bytes : cfg.sizes) {
        rt.bootstrap().barrier();
        PingPongResult r{a, b, bytes, {}, 0};
        if (in_pair) CHECK_CUDA(cudaMemset(mine, 0, sizeof(uint64_t)));
        CHECK_CUDA(cudaDeviceSynchronize());
        rt.bootstrap().barrier();
        for (int s = 0; s < cfg.samples + 1 && in_pair; ++s) {
          std::memset(st, 0, sizeof(Status));
          uint64_t base = static_cast<uint64_t>(s) * static_cast<uint64_t>(iters);
          if (bytes <= sizeof(uint64_t)) {
            pingpong_thread_kernel<<<1, 1, 0, stream>>>(reinterpret_cast<uint64_t*>(mine),
                                                        reinterpret_cast<uint64_t*>(peer_mem), iters, base,
                                                        rt.rank() == a, timeout_ns, st_dev);
          } else {
            pingpong_kernel<<<1, 256, 0, stream>>>(reinterpret_cast<uint64_t*>(mine),
                                                   reinterpret_cast<uint64_t*>(peer_mem),
                                                   reinterpret_cast<uint4*>(peer_mem + flag_bytes), src, bytes, iters,
                                                   base, rt.rank() == a, timeout_ns, st_dev);
          }
          CHECK_CUDA(cudaGetLastError());
          CHECK_CUDA(cudaStreamSynchronize(stream));
          if (st->failed) {
            raise(Errc::timeout, "gpu ping-pong",
                  "rank " + std::to_string(rt.rank()) + " waited for rank " + std::to_string(peer) +
                      "'s flag: expected " + std::to_string(st->expected) + ", seen " + std::to_string(st->seen) +
                      " at round trip " + std::to_string(st->iteration) + " of " + std::to_string(iters));
          }
          if (s > 0 && rt.rank() == a && iters > 1)
            r.one_way_us.push_back(static_cast<double>(st->t_end - st->t_start) / 1000.0 / (2.0 * (iters - 1)));
        }
        if (rt.rank() == a) {
          r.median_us = median(r.one_way_us);
          out.push_back(r);
        }
      }
      rt.bootstrap().barrier();
      if (in_pair) CHECK_CUDA(cudaIpcCloseMemHandle(peer_mem));
    }
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFreeHost(st));
  CHECK_CUDA(cudaFree(src));
  CHECK_CUDA(cudaFree(mine));
  return out;
}

}  // namespace gpucomm::bench
