// The session test (coll_kernels.cuh, run_session): rounds of allreduce, barrier, reduce-scatter
// and allgather in one kernel, through a coll::device::Session or each call on its own, checked
// against the sums on the host. Odd ranks may take the per-call path while even ranks run the
// session: both speak the lane's protocol, so they must meet.
#include <cuda_runtime.h>

#include <cstdio>
#include <random>
#include <vector>

#include "coll_kernels.cuh"
#include "gpucomm/collectives/session_device.cuh"

namespace coll_check {

namespace {

constexpr int kRounds = 24;
constexpr size_t kStride = 1024;  // elements per round in every buffer

struct SessionArgs {
  const int32_t* in;   // [kRounds][kStride]
  int32_t* sum;        // allreduce results
  int32_t* scattered;  // reduce-scatter results
  int32_t* gathered;   // [kRounds][team size]
  const uint32_t* counts;
};

// Round r: allreduce of counts[r] elements, a barrier, every fifth round a reduce-scatter of
// counts[r] / 4 + 1 elements per rank, every fourth an allgather of one element (outside the lane:
// the session hands its words back and takes them again).
template <class Calls>
__device__ void session_rounds(Calls& c, const SessionArgs& a, int n) {
  for (int r = 0; r < kRounds; ++r) {
    const int32_t* in = a.in + static_cast<size_t>(r) * kStride;
    const size_t cnt = a.counts[r];
    c.allreduce(in, a.sum + static_cast<size_t>(r) * kStride, cnt, RedOp::sum, Algorithm::oneshot_ll);
    c.barrier(Algorithm::oneshot_ll);
    if (r % 5 == 0) {
      c.reduce_scatter(in, a.scattered + static_cast<size_t>(r) * kStride, cnt / 4 + 1 <= kStride / n ? cnt / 4 + 1 : 1,
                       RedOp::sum, Algorithm::oneshot_ll);
    }
    if (r % 4 == 3) c.allgather(in, a.gathered + static_cast<size_t>(r) * n, 1);
  }
}

// The per-call API in the session's shape.
template <class Coop>
struct PerCall {
  Coop c;
  const DeviceHandle& h;
  const CollHandle& ch;
  template <class T>
  __device__ void allreduce(const T* s, T* d, size_t cnt, RedOp op, Algorithm a) {
    gpucomm::coll::device::allreduce(c, h, ch, s, d, cnt, op, a);
  }
  template <class T>
  __device__ void reduce_scatter(const T* s, T* d, size_t cnt, RedOp op, Algorithm a) {
    gpucomm::coll::device::reduce_scatter(c, h, ch, s, d, cnt, op, a);
  }
  template <class T>
  __device__ void allgather(const T* s, T* d, size_t cnt) {
    gpucomm::coll::device::allgather(c, h, ch, s, d, cnt);
  }
  __device__ void barrier(Algorithm a) { gpucomm::coll::device::barrier(c, h, ch, a); }
};

template <class Coop>
__global__ void k_session(const __grid_constant__ DeviceHandle h, const __grid_constant__ CollHandle ch, SessionArgs a,
                          bool session) {
  if (session) {
    gpucomm::coll::device::Session<Coop> s(Coop{}, h, ch);
    session_rounds(s, a, ch.team.size);
  } else {
    PerCall<Coop> p{Coop{}, h, ch};
    session_rounds(p, a, ch.team.size);
  }
}

int32_t input(uint64_t seed, int rank, int r, size_t i) {
  uint64_t x = seed ^ (static_cast<uint64_t>(rank) * 0x9E3779B97F4A7C15ull) ^ (static_cast<uint64_t>(r) << 40) ^ i;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<int32_t>(x % 2001) - 1000;
}

}  // namespace

int run_session(Runtime& rt, Collectives& coll, uint64_t seed) {
  const int n = rt.size(), me = rt.rank();
  const DeviceHandle h = rt.device_handle();
  const CollHandle ch = coll.handle(rt.world());
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> counts(kRounds);
  for (auto& c : counts) c = static_cast<uint32_t>(1 + rng() % (rng() % 2 ? 8 : 700));
  std::vector<int32_t> in(kRounds * kStride);
  for (int r = 0; r < kRounds; ++r)
    for (size_t i = 0; i < kStride; ++i) in[r * kStride + i] = input(seed, me, r, i);
  DeviceMem mem;
  auto d_in = mem.alloc(in.size() * 4, 0), d_sum = mem.alloc(in.size() * 4, 0), d_sc = mem.alloc(in.size() * 4, 0),
       d_g = mem.alloc(kRounds * static_cast<size_t>(n) * 4, 0), d_counts = mem.alloc(counts.size() * 4, 0);
  d_in.write(std::vector<uint8_t>(reinterpret_cast<uint8_t*>(in.data()),
                                  reinterpret_cast<uint8_t*>(in.data()) + in.size() * 4));
  d_counts.write(std::vector<uint8_t>(reinterpret_cast<uint8_t*>(counts.data()),
                                      reinterpret_cast<uint8_t*>(counts.data()) + counts.size() * 4));
  const SessionArgs args{reinterpret_cast<const int32_t*>(d_in.data()), reinterpret_cast<int32_t*>(d_sum.data()),
                         reinterpret_cast<int32_t*>(d_sc.data()), reinterpret_cast<int32_t*>(d_g.data()),
                         reinterpret_cast<const uint32_t*>(d_counts.data())};
  auto s = reinterpret_cast<cudaStream_t>(rt.stream());
  int failures = 0;
  // Styles: 0 every rank in a session; 1 even ranks in a session, odd ranks call by call.
  for (const Level level : {Level::warp, Level::block}) {
    for (int style = 0; style < 2; ++style) {
      const bool session = style == 0 || me % 2 == 0;
      if (level == Level::warp) {
        k_session<gpucomm::coop::Warp><<<1, 32, 0, s>>>(h, ch, args, session);
      } else {
        k_session<gpucomm::coop::Block><<<1, 256, 0, s>>>(h, ch, args, session);
      }
      DeviceMem::check(cudaGetLastError(), "k_session launch");
      if (cudaStreamSynchronize(s) != cudaSuccess) coll.check_device();
      const auto sum = d_sum.read(), sc = d_sc.read(), g = d_g.read();
      const auto* got = reinterpret_cast<const int32_t*>(sum.data());
      const auto* got_sc = reinterpret_cast<const int32_t*>(sc.data());
      const auto* got_g = reinterpret_cast<const int32_t*>(g.data());
      int wrong = 0;
      for (int r = 0; r < kRounds; ++r) {
        const size_t cnt = counts[r];
        for (size_t i = 0; i < cnt; ++i) {
          int32_t want = 0;
          for (int q = 0; q < n; ++q) want += input(seed, q, r, i);
          if (got[r * kStride + i] != want && wrong++ < 5) {
            std::fprintf(stderr, "CHECK failed: rank %d %s style %d round %d: allreduce[%zu] = %d, expected %d\n", me,
                         level_name(level), style, r, i, got[r * kStride + i], want);
          }
        }
        if (r % 5 == 0) {
          const size_t blk = cnt / 4 + 1 <= kStride / static_cast<size_t>(n) ? cnt / 4 + 1 : 1;
          for (size_t i = 0; i < blk; ++i) {
            int32_t want = 0;
            for (int q = 0; q < n; ++q) want += input(seed, q, r, static_cast<size_t>(me) * blk + i);
            if (got_sc[r * kStride + i] != want && wrong++ < 5) {
              std::fprintf(stderr,
                           "CHECK failed: rank %d %s style %d round %d: reduce_scatter[%zu] = %d, expected %d\n", me,
                           level_name(level), style, r, i, got_sc[r * kStride + i], want);
            }
          }
        }
        if (r % 4 == 3) {
          for (int q = 0; q < n; ++q) {
            const int32_t want = input(seed, q, r, 0);
            if (got_g[r * n + q] != want && wrong++ < 5) {
              std::fprintf(stderr, "CHECK failed: rank %d %s style %d round %d: allgather[%d] = %d, expected %d\n", me,
                           level_name(level), style, r, q, got_g[r * n + q], want);
            }
          }
        }
      }
      if (wrong) {
        std::fprintf(stderr, "rank %d: %d wrong values (%s level, style %d, seed %llu)\n", me, wrong, level_name(level),
                     style, static_cast<unsigned long long>(seed));
      }
      failures += wrong;
    }
  }
  std::printf("rank %d: %d rounds of session calls at warp and block level checked\n", me, kRounds);
  return failures;
}

}  // namespace coll_check
