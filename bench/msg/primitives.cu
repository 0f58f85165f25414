// gpucomm-bench-primitives: what the messaging protocol's steps cost on this GPU, one thread at a
// time (docs/MESSAGING.md, "Latency model"). Each row is the median over trials of a loop of
// dependent operations timed with %globaltimer inside one thread, in ns per operation:
//   chains      atomics and loads whose address depends on the previous result (latency)
//   fences      a relaxed store followed by a fence, repeated (what a publish costs)
//   stores      release stores, repeated (each carries its fence)
//   flags       a flag passed between two blocks (device and system scope): ns per round trip
//   sleep       __nanosleep(n) as the scheduler grants it
//   group       one block of 256 threads: the pieces of the collectives' lane barrier and 8-byte LL
//               allreduce at one PE (the PE its own peer), ns per call (docs/COLLECTIVES.md)
// Usage: gpucomm-bench-primitives [--json FILE]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpucomm/base/ordering_device.cuh"

namespace {

using namespace gpucomm;

constexpr int kIters = 2000;

enum Op : int {
  kAtomAddGpu,
  kAtomAddSys,
  kCasGpu,
  kLdRelaxedGpu,
  kLdAcquireGpu,
  kLdAcquireSys,
  kLdPlain,
  kStFenceGpu,
  kStFenceSys,
  kStFenceScSys,
  kStReleaseGpu,
  kStReleaseSys,
  kRedAddGpu,
  kGlobaltimer,
  kSleep64,
  kSleep1000,
  kLocalAfterAcquire,
  kLocalAfterRelaxed,
  kLocalAfterFence,
  kPlainChain,
  kPlainAfterRelease,
  kPlainAfterRed,
  kPlainAfterRelaxedLd,
  kPlainAfterFence,
  kLd8RelaxedGpu,
  kLd8RelaxedSys,
  kLd8Volatile,
  kLdV2x4RelaxedGpu,
  kSt8RelaxedSys,
  kOps
};
const char* const kNames[kOps] = {"atom_add_relaxed_gpu",
                                  "atom_add_relaxed_sys",
                                  "cas_acquire_gpu",
                                  "ld_relaxed_gpu",
                                  "ld_acquire_gpu",
                                  "ld_acquire_sys",
                                  "ld_plain_l1",
                                  "st_then_fence_acq_rel_gpu",
                                  "st_then_fence_acq_rel_sys",
                                  "st_then_fence_sc_sys",
                                  "st_release_gpu",
                                  "st_release_sys",
                                  "red_add_relaxed_gpu",
                                  "globaltimer_read",
                                  "nanosleep_64",
                                  "nanosleep_1000",
                                  "ld_acquire_gpu_then_local",
                                  "ld_relaxed_gpu_then_local",
                                  "fence_acq_rel_gpu_then_local",
                                  "plain_ld_chain",
                                  "st_release_gpu_then_plain_ld",
                                  "red_then_plain_ld",
                                  "ld_relaxed_gpu_then_plain_ld",
                                  "fence_then_plain_ld",
                                  "ld_relaxed_gpu_x8_independent",
                                  "ld_relaxed_sys_x8_independent",
                                  "ld_volatile_x8_independent",
                                  "ld_relaxed_gpu_v2_x4",
                                  "st_relaxed_sys_x8"};

// The word index a value leads to: always 0, but the compiler cannot know it, so every operation
// waits for the previous one's result.
__device__ __forceinline__ uint32_t dep(uint64_t x) {
  return static_cast<uint32_t>(x >> 62);
}

__global__ void k_op(int op, uint64_t* w, uint64_t* out_ns) {
  if (threadIdx.x != 0) return;
  uint64_t x = 0;
  uint64_t* st = w + 64;  // another line, for stores
  // A stack array (local memory): does an acquire (its L1 invalidation) send its next load to L2?
  volatile uint64_t loc[32];
  for (int i = 0; i < 32; ++i) loc[i] = static_cast<uint64_t>(i) << 63 >> 63;  // zeros the compiler cannot see
  const uint64_t t0 = mem::globaltimer();
  for (int i = 0; i < kIters; ++i) {
    switch (op) {
      case kAtomAddGpu:
        x = mem::fetch_add<mem::kDevice>(&w[dep(x)], uint64_t{1}, mem::relaxed);
        break;
      case kAtomAddSys:
        x = mem::fetch_add<mem::kSystem>(&w[dep(x)], uint64_t{1}, mem::relaxed);
        break;
      case kCasGpu:
        x = mem::compare_exchange<mem::kDevice>(&w[dep(x)], x, x + 1, mem::acquire);
        break;
      case kLdRelaxedGpu:
        x = mem::load<mem::kDevice>(&w[dep(x)], mem::relaxed);
        break;
      case kLdAcquireGpu:
        x = mem::load<mem::kDevice>(&w[dep(x)], mem::acquire);
        break;
      case kLdAcquireSys:
        x = mem::load<mem::kSystem>(&w[dep(x)], mem::acquire);
        break;
      case kLdPlain:
        x = *static_cast<volatile uint64_t*>(&w[dep(x) + 128]) & 1;
        break;
      case kStFenceGpu:
        mem::store<mem::kDevice>(&st[i & 7], uint64_t(i), mem::relaxed);
        mem::fence<mem::kDevice>(mem::acq_rel);
        break;
      case kStFenceSys:
        mem::store<mem::kSystem>(&st[i & 7], uint64_t(i), mem::relaxed);
        mem::fence<mem::kSystem>(mem::acq_rel);
        break;
      case kStFenceScSys:
        mem::store<mem::kSystem>(&st[i & 7], uint64_t(i), mem::relaxed);
        mem::fence<mem::kSystem>(mem::seq_cst);
        break;
      case kStReleaseGpu:
        mem::store<mem::kDevice>(&st[i & 7], uint64_t(i), mem::release);
        break;
      case kStReleaseSys:
        mem::store<mem::kSystem>(&st[i & 7], uint64_t(i), mem::release);
        break;
      case kRedAddGpu:
        mem::red_add<mem::kDevice>(&st[i & 7], 1, mem::relaxed);
        break;
      case kGlobaltimer:
        x += mem::globaltimer() & 1;
        break;
      case kSleep64:
        __nanosleep(64);
        break;
      case kSleep1000:
        __nanosleep(1000);
        break;
      case kLocalAfterAcquire:
        x = mem::load<mem::kDevice>(&w[dep(x)], mem::acquire);
        x = loc[(x + static_cast<uint64_t>(i)) & 31];
        break;
      case kLocalAfterRelaxed:
        x = mem::load<mem::kDevice>(&w[dep(x)], mem::relaxed);
        x = loc[(x + static_cast<uint64_t>(i)) & 31];
        break;
      case kLocalAfterFence:
        mem::fence<mem::kDevice>(mem::acq_rel);
        x = loc[(x + static_cast<uint64_t>(i)) & 31];
        break;
      // Plain (cached) loads of a table a thread keeps reading: do they stay in L1 across the
      // protocol's other accesses?
      case kPlainChain:
        x = w[256 + dep(x) + (i & 15) * 16];
        break;
      case kPlainAfterRelease:
        mem::store<mem::kDevice>(&st[i & 7], uint64_t(i), mem::release);
        x = w[256 + dep(x) + (i & 15) * 16];
        break;
      case kPlainAfterRed:
        mem::red_add<mem::kDevice>(&st[i & 7], 1, mem::relaxed);
        x = w[256 + dep(x) + (i & 15) * 16];
        break;
      case kPlainAfterRelaxedLd:
        x = mem::load<mem::kDevice>(&w[dep(x)], mem::relaxed);
        x = w[256 + dep(x) + (i & 15) * 16];
        break;
      case kPlainAfterFence:
        mem::fence<mem::kDevice>(mem::acq_rel);
        x = w[256 + dep(x) + (i & 15) * 16];
        break;
      // Eight independent loads of one 64-byte line (a slot, a submission): in flight together,
      // or one after another?
      case kLd8RelaxedGpu: {
        uint64_t a = 0;
        const uint64_t* p = &w[dep(x)];
#pragma unroll
        for (int k = 0; k < 8; ++k) a += mem::load<mem::kDevice>(p + k, mem::relaxed);
        x = a;
        break;
      }
      case kLd8RelaxedSys: {
        uint64_t a = 0;
        const uint64_t* p = &w[dep(x)];
#pragma unroll
        for (int k = 0; k < 8; ++k) a += mem::load<mem::kSystem>(p + k, mem::relaxed);
        x = a;
        break;
      }
      case kLd8Volatile: {
        uint64_t a = 0;
        const volatile uint64_t* p = &w[dep(x)];
#pragma unroll
        for (int k = 0; k < 8; ++k) a += p[k];
        x = a;
        break;
      }
      case kLdV2x4RelaxedGpu: {
        uint64_t a = 0;
        const uint64_t* p = &w[dep(x)];
#pragma unroll
        for (int k = 0; k < 8; k += 2) {
          uint64_t u, v;
          asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(u), "=l"(v) : "l"(p + k) : "memory");
          a += u + v;
        }
        x = a;
        break;
      }
      case kSt8RelaxedSys: {
#pragma unroll
        for (int k = 0; k < 8; ++k) mem::store<mem::kSystem>(&st[k], uint64_t(i), mem::relaxed);
        break;
      }
      default:
        break;
    }
  }
  const uint64_t t1 = mem::globaltimer();
  out_ns[0] = t1 - t0;
  out_ns[1] = x;  // keeps the chains alive
}

// A counter passed between block 0 and block 1 (thread 0 of each), `iters` round trips.
template <mem::Scope S>
__global__ void k_flag(uint64_t* w, int iters, uint64_t base, uint64_t* out_ns) {
  if (threadIdx.x != 0) return;
  uint64_t* ping = w;
  uint64_t* pong = w + 16;
  const uint64_t t0 = mem::globaltimer();
  for (int i = 1; i <= iters; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (blockIdx.x == 0) {
      mem::store<S>(ping, v, mem::release);
      while (mem::load<S>(pong, mem::acquire) < v) {
      }
    } else {
      while (mem::load<S>(ping, mem::acquire) < v) {
      }
      mem::store<S>(pong, v, mem::release);
    }
  }
  if (blockIdx.x == 0) out_ns[0] = mem::globaltimer() - t0;
}

// The lane's pieces at one PE, one block, `iters` calls back to back (thread 0 times them).
enum GroupOp : int {
  kTwoSyncs,          // the entry and exit group barriers alone
  kSyncsFence,        // + the leader's release fence (device scope)
  kSyncsStorePoll,    // + the leader's store of its word and acquire poll of it, no fence
  kLaneBarrier,       // fence, relaxed store (system scope, as the lane stores), acquire poll
  kLaneBarrierGpu,    // the same with a device-scope store
  kReleaseStorePoll,  // a release store instead of fence + store
  kLlAllreduce8,      // 3 threads store LL words (header + 2 payload), each polls its own back
  kGroupOps
};
const char* const kGroupNames[kGroupOps] = {
    "block_two_syncs",           "block_syncs_fence_gpu",    "block_syncs_store_poll", "block_lane_barrier",
    "block_lane_barrier_st_gpu", "block_release_store_poll", "block_ll_allreduce_8b"};

__global__ void k_group(int op, uint64_t* w, int iters, uint64_t base, uint64_t* out_ns) {
  const bool lead = threadIdx.x == 0;
  uint64_t* word = w + 256 + threadIdx.x % 32;
  __shared__ uint64_t sum;
  if (lead) sum = 0;
  const uint64_t t0 = mem::globaltimer();
  for (int i = 1; i <= iters; ++i) {
    const uint64_t e = (base + static_cast<uint64_t>(i)) << 32;
    __syncthreads();
    switch (op) {
      case kSyncsFence:
        if (lead) mem::fence<mem::kDevice>(mem::acq_rel);
        break;
      case kSyncsStorePoll:
      case kLaneBarrier:
      case kLaneBarrierGpu:
        if (lead) {
          if (op != kSyncsStorePoll) mem::fence<mem::kDevice>(mem::acq_rel);
          if (op == kLaneBarrierGpu) {
            mem::store<mem::kDevice>(word, e, mem::relaxed);
          } else {
            mem::store<mem::kSystem>(word, e, mem::relaxed);
          }
          while (mem::load<mem::kDevice>(word, mem::acquire) != e) {
          }
        }
        break;
      case kReleaseStorePoll:
        if (lead) {
          mem::store<mem::kDevice>(word, e, mem::release);
          while (mem::load<mem::kDevice>(word, mem::acquire) != e) {
          }
        }
        break;
      case kLlAllreduce8:
        if (threadIdx.x < 3) {
          mem::store<mem::kSystem>(word, e | threadIdx.x, mem::relaxed);
          uint64_t seen = 0;
          while (((seen = mem::load<mem::kSystem>(word, mem::relaxed)) >> 32) != (e >> 32)) {
          }
          if (threadIdx.x == 1) sum = seen & 0xffffffffu;
        }
        break;
      default:
        break;
    }
    __syncthreads();
  }
  if (lead) {
    out_ns[0] = mem::globaltimer() - t0;
    out_ns[1] = sum;
  }
}

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpucomm-bench-primitives: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json = argv[++i];
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf(
          "usage: gpucomm-bench-primitives [--json FILE]\n"
          "ns per operation of the protocol's building blocks on GPU 0 (one thread, dependent chains)\n");
      return 0;
    } else {
      std::fprintf(stderr, "gpucomm-bench-primitives: unknown argument '%s' (see --help)\n", argv[i]);
      return 2;
    }
  }
  uint64_t *w = nullptr, *host_out = nullptr, *out = nullptr;
  ck(cudaMalloc(&w, 8192), "cudaMalloc");
  ck(cudaMemset(w, 0, 8192), "cudaMemset");
  ck(cudaMalloc(&out, 2 * sizeof(uint64_t)), "cudaMalloc");
  ck(cudaMallocHost(&host_out, 2 * sizeof(uint64_t)), "cudaMallocHost");
  cudaDeviceProp prop{};
  ck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::vector<std::pair<std::string, double>> rows;
  constexpr int kTrials = 7;
  for (int op = 0; op < kOps; ++op) {
    std::vector<double> t;
    for (int trial = 0; trial < kTrials + 1; ++trial) {
      ck(cudaMemset(w, 0, 8192), "cudaMemset");
      k_op<<<1, 32>>>(op, w, out);
      ck(cudaGetLastError(), "launch");
      ck(cudaMemcpy(host_out, out, 2 * sizeof(uint64_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (trial > 0) t.push_back(static_cast<double>(host_out[0]) / kIters);  // trial 0 warms up
    }
    rows.emplace_back(kNames[op], median(t));
  }
  uint64_t base = 0;
  for (int sys = 0; sys < 2; ++sys) {
    std::vector<double> t;
    for (int trial = 0; trial < kTrials + 1; ++trial) {
      if (sys) {
        k_flag<mem::kSystem><<<2, 32>>>(w, kIters, base, out);
      } else {
        k_flag<mem::kDevice><<<2, 32>>>(w, kIters, base, out);
      }
      base += kIters;
      ck(cudaGetLastError(), "launch");
      ck(cudaMemcpy(host_out, out, sizeof(uint64_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (trial > 0) t.push_back(static_cast<double>(host_out[0]) / kIters);
    }
    rows.emplace_back(sys ? "flag_round_trip_sys" : "flag_round_trip_gpu", median(t));
  }
  for (int op = 0; op < kGroupOps; ++op) {
    std::vector<double> t;
    for (int trial = 0; trial < kTrials + 1; ++trial) {
      k_group<<<1, 256>>>(op, w, kIters, base, out);
      base += kIters;
      ck(cudaGetLastError(), "launch");
      ck(cudaMemcpy(host_out, out, 2 * sizeof(uint64_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (trial > 0) t.push_back(static_cast<double>(host_out[0]) / kIters);
    }
    rows.emplace_back(kGroupNames[op], median(t));
  }
  std::printf("%-28s %10s\n", "operation (one thread; block_*: per call)", "ns");
  for (const auto& [name, ns] : rows) std::printf("%-28s %10.1f\n", name.c_str(), ns);
  if (json) {
    FILE* f = std::fopen(json, "w");
    if (!f) {
      std::fprintf(stderr, "gpucomm-bench-primitives: cannot write '%s'\n", json);
      return 1;
    }
    std::fprintf(f, "{\"device\": \"%s\", \"iters\": %d, \"unit\": \"ns\", \"results\": {", prop.name, kIters);
    for (size_t i = 0; i < rows.size(); ++i)
      std::fprintf(f, "%s\"%s\": %.2f", i ? ", " : "", rows[i].first.c_str(), rows[i].second);
    std::fprintf(f, "}}\n");
    std::fclose(f);
  }
  return 0;
}
