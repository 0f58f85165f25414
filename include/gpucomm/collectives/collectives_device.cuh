#pragma once
// Collectives inside kernels (docs/COLLECTIVES.md): the device memory backend of the algorithm
// templates (algorithms.hpp) on a DeviceHandle, the typed device API, and the launch helper for
// grid-level calls.
//
//   __global__ void k(gpucomm::DeviceHandle h, gpucomm::coll::CollHandle ch, float* x, size_t n) {
//     gpucomm::coll::device::allreduce(gpucomm::coop::Block{}, h, ch, x, x, n, gpucomm::coll::RedOp::sum);
//   }
//
// Cooperation levels: coop::Warp and coop::Block (one group per member PE, channel 0) and
// coll::Grid (every block of a co-resident grid; block b works on channel b; the call begins and
// ends with a grid barrier). Only one collective per team runs on a PE at a time.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/base/group_device.cuh"
#include "gpucomm/base/handle_device.cuh"
#include "gpucomm/base/team.hpp"
#include "gpucomm/collectives/cost_model.hpp"
#include "gpucomm/collectives/dispatch.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/device/rma_device.cuh"

namespace gpucomm::coll {

// Every block of the grid calls, each with its own channel (blockIdx.x).
struct Grid {};

namespace detail {

// The proxy part of a collective's quiet, out of line: call sites on PEs without a proxy route
// (every peer reached by direct stores, h.num_queues == 0) carry only the test.
template <class Coop>
__device__ __noinline__ void quiet_queues(Coop c, const DeviceHandle& h) {
  proxy::quiet_group(c, h);
}
template <class Coop>
__device__ inline void quiet_proxy(Coop c, const DeviceHandle& h) {
  if (h.num_queues != 0) quiet_queues(c, h);
}

// What a collective's failure record names about the call and the failure, by value: the failure
// paths are out of line (report_failure), so a call site keeps its backend and call in registers.
struct FailSite {
  uint32_t op, algorithm;
  uint64_t count;
  int32_t root;
  uint32_t channels, channel;
  const uint64_t* epoch;  // the channel's epoch word (seq follows it)
  uint64_t seq;           // kSeqInMemory: read it there (a session holds it in registers)
};
inline constexpr uint64_t kSeqInMemory = ~uint64_t{0};
struct FailReport {
  uint32_t kind;  // CollDiag::Kind
  int q;          // team rank waited for or disagreeing (-1: none)
  uint64_t seen, expected, elapsed_ns;
  uint32_t sig_mine, sig_theirs;
  DeviceFault fault;  // and the device failure record's fields
  const void* addr;
  Cmp cmp;
  uint64_t want, got;
};

// The first failing thread of this PE writes the team's record (CollDiag), then every failing
// thread raises the device failure (gpucomm::detail::fail: the record, then the trap).
__device__ __noinline__ inline void report_failure(const DeviceHandle& h, const CollHandle& ch, FailSite s,
                                                   FailReport r, const uint64_t* missing) {
  const int world = r.q >= 0 && r.q < ch.team.size ? team_world_rank(ch.team, r.q) : -1;
  CollDiag* d = ch.diag;
  if (d && mem::compare_exchange<mem::kSystem>(&d->state, CollDiag::kEmpty, CollDiag::kWriting, mem::relaxed) ==
               CollDiag::kEmpty) {
    d->kind = r.kind;
    d->team_slot = ch.team.slot;
    d->team_size = ch.team.size;
    d->team_rank = ch.team.rank;
    d->world_rank = h.rank;
    d->op = s.op;
    d->algorithm = s.algorithm;
    d->count = s.count;
    d->root = s.root;
    d->channels = s.channels;
    d->channel = s.channel;
    d->seq = s.seq != kSeqInMemory ? s.seq : mem::load<mem::kDevice>(s.epoch + 1, mem::relaxed);
    d->epoch = mem::load<mem::kDevice>(s.epoch, mem::relaxed);
    d->peer = r.q;
    d->peer_world = world;
    d->sig_mine = r.sig_mine;
    d->sig_theirs = r.sig_theirs;
    d->seen = r.seen;
    d->expected = r.expected;
    d->elapsed_ns = r.elapsed_ns;
    for (int i = 0; i < 16; ++i) d->missing[i] = missing ? missing[i] : 0;
    mem::store<mem::kSystem>(&d->state, CollDiag::kReady, mem::release);
  }
  gpucomm::detail::fail(h, r.fault, DeviceOp::wait_until, world, r.addr, r.cmp, r.want, r.got, r.elapsed_ns);
}

// The memory backend of a warp or a block (algorithms.hpp lists what it provides). Data moves with
// the one-sided layer's put-with-signal (direct stores over NVLink, or one descriptor through the
// proxy), flags and acknowledgements are release stores at system scope, waits are acquire polls
// with the handle's timeout and job-state checks.
template <class Coop>
class DeviceBackend {
 public:
  __device__ DeviceBackend(Coop c, const DeviceHandle& h, const CollHandle& ch, const Call& call, uint32_t channel)
      : c_(c), h_(h), ch_(ch), call_(call), chan_(channel), v_(chan_view(ch, channel)) {}
  // With the channel's view computed already (a session keeps it).
  __device__ DeviceBackend(Coop c, const DeviceHandle& h, const CollHandle& ch, const Call& call, uint32_t channel,
                           const ChanView& v)
      : c_(c), h_(h), ch_(ch), call_(call), chan_(channel), v_(v) {}

  __device__ int tid() const { return static_cast<int>(coop::thread_rank(c_)); }
  __device__ int nthreads() const { return static_cast<int>(coop::size(c_)); }
  __device__ bool leader() const { return gpucomm::detail::leader(c_); }
  __device__ void sync() { coop::sync(c_); }
  __device__ int rank() const { return ch_.team.rank; }
  __device__ int size() const { return ch_.team.size; }
  __device__ bool forced() const { return (ch_.flags & kCollForceProtocol) != 0; }
  __device__ uint32_t channel() const { return chan_; }
  __device__ const ChanView& view() const { return v_; }
  __device__ uint64_t bcast(uint64_t v) { return gpucomm::detail::broadcast(c_, v); }
  __device__ uint64_t local_load(const uint64_t* p) { return mem::load<mem::kDevice>(p, mem::relaxed); }
  __device__ void local_store(uint64_t* p, uint64_t v) { mem::store<mem::kDevice>(p, v, mem::relaxed); }

  // Not inlined: the copy loop behind it exists once per kernel instead of at every call site.
  __device__ __noinline__ void put_signal(int q, void* dst, const void* src, size_t bytes, uint64_t* flag,
                                          uint64_t value) {
    const int pe = team_world_rank(ch_.team, q);
    if (bytes) {
      gpucomm::device::put_signal(c_, h_, dst, src, bytes, flag, value, SignalOp::set, pe);
      return;
    }
    gpucomm::detail::publish_group(c_);
    if (leader()) gpucomm::device::signal(h_, flag, value, SignalOp::set, pe);
    coop::sync(c_);
  }
  __device__ void signal(int q, uint64_t* word, uint64_t value) {
    gpucomm::device::signal(h_, word, value, SignalOp::set, team_world_rank(ch_.team, q));
  }
  __device__ void publish() { gpucomm::detail::publish_group(c_); }
  __device__ void quiet() { gpucomm::device::quiet(c_, h_); }

  template <class FlagOf, class Each>
  __device__ void wait_flags(FlagOf flag_of, uint32_t stamp, uint32_t sig, Each each) {
    if (leader()) {
      each([&](int q) {
        const uint64_t* f = flag_of(q);
        const uint64_t seen = poll(
            f, [&](uint64_t w) { return stamp_reached(static_cast<uint32_t>(w), stamp); }, q, stamp,
            [&](uint64_t* missing) {
              each([&](int r) {
                if (!stamp_reached(static_cast<uint32_t>(mem::load<mem::kSystem>(flag_of(r), mem::relaxed)), stamp) &&
                    r < 1024)
                  missing[r / 64] |= uint64_t{1} << (r % 64);
              });
            });
        const auto theirs = static_cast<uint32_t>(seen >> 32);
        if (theirs != sig) fail_mismatch(q, sig, theirs);
      });
    }
    coop::sync(c_);
  }
  __device__ void wait_ack(const uint64_t* ack, uint64_t round, int q) {
    poll(ack, [&](uint64_t w) { return w >= round; }, q, round, [](uint64_t*) {});
  }
  __device__ void ll_store(int q, uint64_t* word, uint64_t value) {
    uint64_t* r = gpucomm::device::ptr(h_, word, team_world_rank(ch_.team, q));
    if (r == nullptr) fail_argument(q, 0, 0);
    mem::store<mem::kSystem>(r, value, mem::relaxed);
  }
  __device__ uint64_t ll_wait(const uint64_t* word, uint32_t flag, int q) {
    return poll_ll<mem::kSystem>(word, flag, q, mem::relaxed);
  }
  // A one-member team (the protocol forced) orders only its own GPU's accesses: device scope.
  __device__ uint64_t ll_wait_acquire(const uint64_t* word, uint32_t flag, int q) {
    return ch_.team.size == 1 ? poll_ll<mem::kDevice>(word, flag, q, mem::acquire)
                              : poll_ll<mem::kSystem>(word, flag, q, mem::acquire);
  }
  // Every thread's accesses (and the proxy's completion of the group's puts) before the group
  // barrier, then one release fence by the leader: cumulative, it covers the whole group's.
  __device__ void release_group() {
    quiet_proxy(c_, h_);
    coop::sync(c_);
    if (leader()) {
      if (ch_.team.size == 1) {
        mem::fence<mem::kDevice>(mem::acq_rel);
      } else {
        mem::fence<mem::kSystem>(mem::acq_rel);
      }
    }
  }
  __device__ void fail_mismatch(int q, uint32_t mine, uint32_t theirs) {
    FailReport r{CollDiag::mismatch,        q,       0,       0,    0,     mine, theirs,
                 DeviceFault::bad_argument, nullptr, Cmp::ne, mine, theirs};
    report_failure(h_, ch_, site(), r, nullptr);
  }
  __device__ void fail_counts(int q, uint64_t sent, uint64_t expected) {
    FailReport r{CollDiag::count_mismatch,  q,       sent,    expected, 0,   0, 0,
                 DeviceFault::bad_argument, nullptr, Cmp::ne, expected, sent};
    report_failure(h_, ch_, site(), r, nullptr);
  }
  __device__ void fail_argument(int q, uint64_t value, uint64_t limit) {
    FailReport r{CollDiag::bad_argument,    q,       value,   limit, 0,    0, 0,
                 DeviceFault::bad_argument, nullptr, Cmp::le, value, limit};
    report_failure(h_, ch_, site(), r, nullptr);
  }

 protected:
  __device__ FailSite site() const {
    return FailSite{static_cast<uint32_t>(call_.op),
                    static_cast<uint32_t>(call_.algo),
                    call_.count,
                    call_.root,
                    call_.channels,
                    chan_,
                    v_.epoch(),
                    seq_};
  }

  template <class Missing>
  __device__ void fail_wait(const uint64_t* addr, int q, uint64_t expected, uint64_t seen, uint64_t waited,
                            uint32_t failed, Missing&& missing) {
    uint64_t who[16] = {};  // only on this path: the backend itself stays in registers
    missing(who);
    const uint64_t got = failed ? static_cast<uint64_t>(failed - 1) : seen;
    FailReport r{failed ? CollDiag::aborted : CollDiag::timeout,
                 q,
                 seen,
                 failed ? failed - 1 : expected,
                 waited,
                 0,
                 0,
                 failed ? DeviceFault::aborted : DeviceFault::timeout,
                 addr,
                 Cmp::ge,
                 expected,
                 got};
    report_failure(h_, ch_, site(), r, who);
  }
  // Acquire polls of `addr` until ok(value); every 1024 polls the timeout, every 8192 the job state.
  template <class Ok, class Missing>
  __device__ uint64_t poll(const uint64_t* addr, Ok&& ok, int q, uint64_t expected, Missing&& missing) {
    uint64_t seen = mem::load<mem::kSystem>(addr, mem::acquire);
    if (ok(seen)) return seen;
    const uint64_t start = mem::globaltimer();
    for (uint32_t i = 1;; ++i) {
      seen = mem::load<mem::kSystem>(addr, mem::acquire);
      if (ok(seen)) return seen;
      if ((i & 1023u) == 0) check(addr, q, expected, seen, start, (i & 8191u) == 0, missing);
    }
  }
  // LL words: polls until the word carries `flag` (relaxed: the data is in the word itself;
  // acquire: the barrier's header word).
  template <mem::Scope S, class Order>
  __device__ uint64_t poll_ll(const uint64_t* addr, uint32_t flag, int q, Order order) {
    uint64_t seen = mem::load<S>(addr, order);
    if (static_cast<uint32_t>(seen >> 32) == flag) return seen;
    const uint64_t start = mem::globaltimer();
    for (uint32_t i = 1;; ++i) {
      seen = mem::load<S>(addr, order);
      if (static_cast<uint32_t>(seen >> 32) == flag) return seen;
      if ((i & 1023u) == 0) check(addr, q, flag, seen >> 32, start, (i & 8191u) == 0, [](uint64_t*) {});
    }
  }
  template <class Missing>
  __device__ void check(const uint64_t* addr, int q, uint64_t expected, uint64_t seen, uint64_t start, bool job,
                        Missing&& missing) {
    const uint64_t waited = mem::globaltimer() - start;
    const uint32_t failed = job ? gpucomm::detail::job_failed(h_) : 0u;
    if (failed || (h_.timeout_ns != 0 && waited > h_.timeout_ns))
      fail_wait(addr, q, expected, seen, waited, failed, missing);
  }

  Coop c_;
  const DeviceHandle& h_;
  const CollHandle& ch_;
  const Call& call_;
  uint32_t chan_;
  ChanView v_;
  uint64_t seq_ = kSeqInMemory;  // a session's backend sets the call's seq
};

// The grid barrier of grid-level calls (workspace header: count, generation; device scope).
__device__ inline void grid_sync(const DeviceHandle& h, const CollHandle& ch) {
  mem::fence<mem::kDevice>(mem::acq_rel);
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    auto* count = reinterpret_cast<uint32_t*>(ch.ws);
    auto* gen = count + 1;
    const uint32_t g = mem::load<mem::kDevice>(gen, mem::acquire);
    const uint32_t blocks = gridDim.x * gridDim.y * gridDim.z;
    if (mem::fetch_add<mem::kDevice>(count, 1u, mem::acq_rel) == blocks - 1) {
      mem::store<mem::kDevice>(count, 0u, mem::relaxed);
      mem::store<mem::kDevice>(gen, g + 1, mem::release);
    } else {
      gpucomm::detail::wait<mem::kDevice>(h, gen, Cmp::ne, g, DeviceOp::wait_until, -1);
    }
  }
  __syncthreads();
}

// The typed entry points: DataType of a device type.
template <class T>
struct TypeOf;
template <>
struct TypeOf<__nv_fp8_e4m3> {
  static constexpr DataType value = DataType::f8e4m3;
};
template <>
struct TypeOf<__nv_fp8_e5m2> {
  static constexpr DataType value = DataType::f8e5m2;
};
template <>
struct TypeOf<__half> {
  static constexpr DataType value = DataType::f16;
};
template <>
struct TypeOf<__nv_bfloat16> {
  static constexpr DataType value = DataType::bf16;
};
template <>
struct TypeOf<float> {
  static constexpr DataType value = DataType::f32;
};
template <>
struct TypeOf<double> {
  static constexpr DataType value = DataType::f64;
};
template <>
struct TypeOf<int32_t> {
  static constexpr DataType value = DataType::i32;
};
template <>
struct TypeOf<int64_t> {
  static constexpr DataType value = DataType::i64;
};
template <>
struct TypeOf<uint32_t> {
  static constexpr DataType value = DataType::u32;
};
template <>
struct TypeOf<uint64_t> {
  static constexpr DataType value = DataType::u64;
};

// Algorithm::automatic in kernels: the rules the cost model wrote into the handle.
__device__ inline Algorithm resolve(const CollHandle& ch, CollOp op, uint64_t bytes, Algorithm a) {
  if (a != Algorithm::automatic) return a;
  return static_cast<Algorithm>(ch.auto_algo[static_cast<int>(op)][auto_rule(ch, op, bytes)]);
}

// This group's part of `call`, instantiated for the call's type only (DT; any type of the element
// size for the operations that only move data).
template <DataType DT, class B>
__device__ inline void run_typed(B& b, const Call& call, const CollHandle& ch) {
  if (reduces(call.op)) {
    run_reduction<DT>(b, call, ch);
  } else {
    run_movement<typename Bits<type_size(DT)>::type>(b, call);
  }
}

// Every algorithm of the dispatch for `call`, out of line: one copy per type and cooperation level
// in a kernel, however many call sites it has, and the call sites' own code (the lane below) keeps
// its state in registers: the backend's address escapes into the out-of-line algorithms only here.
template <DataType DT, class Coop>
__device__ __noinline__ void run_dispatch(Coop c, const DeviceHandle& h, const CollHandle& ch, Call call) {
  DeviceBackend<Coop> b(c, h, ch, call, 0);
  if (call.algo == Algorithm::oneshot_ll && !(ch.flags & kCollAllDirect)) b.fail_argument(-1, 1, 0);
  run_typed<DT>(b, call, ch);
}

// Whether a warp or block call runs on the LL lane straight from its call site: the barrier and
// the reductions that reduce_ll serves (allreduce, reduce-scatter), over peers that all take direct
// stores, on teams of two or more members or with the protocol forced at one.
__device__ inline bool straight_to_lane(const CollHandle& ch, const Call& call) {
  if (call.algo != Algorithm::oneshot_ll || !(ch.flags & kCollAllDirect)) return false;
  if (call.op != CollOp::barrier && call.op != CollOp::allreduce && call.op != CollOp::reduce_scatter) return false;
  return ch.team.size > 1 || ((ch.flags & kCollForceProtocol) && force_applies(call.op, call.algo));
}

// Whether a warp or block call of a one-member team (protocol not forced) takes the short-cut
// straight from the call site: the barrier (a quiet) and the reductions allreduce and
// reduce-scatter (a copy of the input). These calls do not count in the channel's `seq`.
__device__ inline bool straight_alone(const CollHandle& ch, const Call& call) {
  if (ch.team.size != 1 || ((ch.flags & kCollForceProtocol) && force_applies(call.op, call.algo))) return false;
  if (call.algo == Algorithm::oneshot_ll && !(ch.flags & kCollAllDirect)) return false;  // the dispatch fails it
  return call.op == CollOp::barrier || call.op == CollOp::allreduce || call.op == CollOp::reduce_scatter;
}

// Runs `call` at the cooperation level of `c`. The lane's protocol is the one the dispatch runs
// (algo::barrier_ll, algo::reduce_ll): a PE on either path meets a PE on the other.
template <DataType DT, class Coop>
__device__ inline void run(Coop c, const DeviceHandle& h, const CollHandle& ch, Call& call) {
  gpucomm::detail::check_handle(h, DeviceOp::wait_until);
  gpucomm::detail::check_team(h, ch.team, DeviceOp::team_barrier);
  call.channels = 1;
  call.sig =
      signature(call.op, call.dt, call.redop, call.algo, call.op == CollOp::alltoallv ? 0 : call.count, call.root, 1);
  if (straight_to_lane(ch, call)) {
    DeviceBackend<Coop> b(c, h, ch, call, 0);
    if (call.op == CollOp::barrier) return algo::barrier_ll(b, call);  // ends with the group barrier
    algo::reduce_ll<DT>(b, call, Range{0, call.count});
  } else if (straight_alone(ch, call)) {
    if (call.op == CollOp::barrier) {  // gpucomm::device::quiet, with the proxy part out of line
      mem::fence<mem::kSystem>(mem::acq_rel);
      quiet_proxy(c, h);
      return coop::sync(c);
    }
    DeviceBackend<Coop> b(c, h, ch, call, 0);
    using S = typename Num<DT>::S;
    if (call.recv) algo::convert_elems<DT>(b, static_cast<S*>(call.recv), static_cast<const S*>(call.send), call.count);
  } else {
    run_dispatch<DT>(c, h, ch, call);
  }
  coop::sync(c);
}
template <DataType DT>
__device__ inline void run(Grid, const DeviceHandle& h, const CollHandle& ch, Call& call) {
  gpucomm::detail::check_handle(h, DeviceOp::wait_until);
  const uint32_t blocks = gridDim.x * gridDim.y * gridDim.z;
  const uint32_t block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  call.channels = blocks;
  call.sig = signature(call.op, call.dt, call.redop, call.algo, call.op == CollOp::alltoallv ? 0 : call.count,
                       call.root, blocks);
  DeviceBackend<coop::Block> b(coop::Block{}, h, ch, call, block);
  if (blocks > ch.channels) b.fail_argument(-1, blocks, ch.channels);
  if (call.algo == Algorithm::oneshot_ll && !(ch.flags & kCollAllDirect)) b.fail_argument(-1, 1, 0);
  grid_sync(h, ch);
  run_typed<DT>(b, call, ch);
  grid_sync(h, ch);
}

template <class T>
__device__ inline Call make_call(CollOp op, const T* send, T* recv, size_t count, RedOp red, int root, Algorithm a,
                                 const CollHandle& ch) {
  Call call{};
  call.op = op;
  call.dt = TypeOf<T>::value;
  call.redop = red;
  call.root = root;
  call.count = count;
  call.send = send;
  call.recv = recv;
  call.algo = resolve(ch, op, count * sizeof(T), a);
  return call;
}

}  // namespace detail

namespace device {

// Barrier over the team (includes quiet: earlier puts of the group are complete and visible).
template <class Coop>
__device__ inline void barrier(Coop c, const DeviceHandle& h, const CollHandle& ch,
                               Algorithm a = Algorithm::automatic) {
  Call call{};
  call.op = CollOp::barrier;
  call.dt = DataType::u64;
  call.root = -1;
  call.algo = detail::resolve(ch, CollOp::barrier, 0, a);
  detail::run<DataType::u64>(c, h, ch, call);
}
template <class Coop, class T>
__device__ inline void broadcast(Coop c, const DeviceHandle& h, const CollHandle& ch, const T* send, T* recv,
                                 size_t count, int root, Algorithm a = Algorithm::automatic) {
  Call call = detail::make_call(CollOp::broadcast, send, recv, count, RedOp::sum, root, a, ch);
  if (count) detail::run<detail::TypeOf<T>::value>(c, h, ch, call);
}
template <class Coop, class T>
__device__ inline void reduce(Coop c, const DeviceHandle& h, const CollHandle& ch, const T* send, T* recv, size_t count,
                              RedOp op, int root, Algorithm a = Algorithm::automatic) {
  Call call = detail::make_call(CollOp::reduce, send, recv, count, op, root, a, ch);
  if (count) detail::run<detail::TypeOf<T>::value>(c, h, ch, call);
}
template <class Coop, class T>
__device__ inline void allreduce(Coop c, const DeviceHandle& h, const CollHandle& ch, const T* send, T* recv,
                                 size_t count, RedOp op, Algorithm a = Algorithm::automatic) {
  Call call = detail::make_call(CollOp::allreduce, send, recv, count, op, -1, a, ch);
  if (count) detail::run<detail::TypeOf<T>::value>(c, h, ch, call);
}
template <class Coop, class T>
__device__ inline void allgather(Coop c, const DeviceHandle& h, const CollHandle& ch, const T* send, T* recv,
                                 size_t count, Algorithm a = Algorithm::automatic) {
  Call call = detail::make_call(CollOp::allgather, send, recv, count, RedOp::sum, -1, a, ch);
  if (count) detail::run<detail::TypeOf<T>::value>(c, h, ch, call);
}
template <class Coop, class T>
__device__ inline void reduce_scatter(Coop c, const DeviceHandle& h, const CollHandle& ch, const T* send, T* recv,
                                      size_t count, RedOp op, Algorithm a = Algorithm::automatic) {
  Call call = detail::make_call(CollOp::reduce_scatter, send, recv, count, op, -1, a, ch);
  if (count) detail::run<detail::TypeOf<T>::value>(c, h, ch, call);
}
template <class Coop, class T>
__device__ inline void alltoall(Coop c, const DeviceHandle& h, const CollHandle& ch, const T* send, T* recv,
                                size_t count, Algorithm a = Algorithm::automatic) {
  Call call = detail::make_call(CollOp::alltoall, send, recv, count, RedOp::sum, -1, a, ch);
  if (count) detail::run<detail::TypeOf<T>::value>(c, h, ch, call);
}
// Counts and displacements in elements, resident in device memory (one entry per team rank).
template <class Coop, class T>
__device__ inline void alltoallv(Coop c, const DeviceHandle& h, const CollHandle& ch, const T* send,
                                 const uint64_t* send_counts, const uint64_t* send_displs, T* recv,
                                 const uint64_t* recv_counts, const uint64_t* recv_displs) {
  Call call = detail::make_call(CollOp::alltoallv, send, recv, 0, RedOp::sum, -1, Algorithm::oneshot, ch);
  call.send_counts = send_counts;
  call.send_displs = send_displs;
  call.recv_counts = recv_counts;
  call.recv_displs = recv_displs;
  detail::run<detail::TypeOf<T>::value>(c, h, ch, call);
}

}  // namespace device

// Launches `kernel` with `blocks` co-resident blocks (a cooperative launch), as grid-level
// collectives need. Raises Errc::invalid_argument naming the kernel's limits when the blocks do
// not fit on the GPU at once, Errc::cuda when the launch fails.
template <class... Params, class... Args>
inline void launch_grid(void (*kernel)(Params...), unsigned blocks, unsigned threads, size_t shared_bytes,
                        cudaStream_t stream, Args&&... args) {
  int dev = 0, sms = 0, per_sm = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice", "coll::launch_grid");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute",
             "coll::launch_grid");
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(threads), shared_bytes),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "coll::launch_grid");
  const unsigned most = static_cast<unsigned>(per_sm) * static_cast<unsigned>(sms);
  if (blocks == 0 || blocks > most) {
    raise_arg("coll::launch_grid", "blocks",
              std::to_string(blocks) + " blocks of " + std::to_string(threads) + " threads (" +
                  std::to_string(shared_bytes) + " bytes of shared memory) cannot all be resident: at most " +
                  std::to_string(most) + " fit (" + std::to_string(per_sm) + " per SM, " + std::to_string(sms) +
                  " SMs)");
  }
  if (blocks > static_cast<unsigned>(kMaxChannels)) {
    raise_arg("coll::launch_grid", "blocks",
              std::to_string(blocks) + " is more than a team workspace's channels can serve (" +
                  std::to_string(kMaxChannels) + "; GPUCOMM_COLL_MAX_CTAS sets the workspace's)");
  }
  std::tuple<Params...> values(std::forward<Args>(args)...);
  void* argv[sizeof...(Params) + 1] = {};
  std::apply(
      [&](auto&... v) {
        int i = 0;
        ((argv[i++] = static_cast<void*>(&v)), ...);
      },
      values);
  check_cuda(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(blocks), dim3(threads), argv,
                                         shared_bytes, stream),
             "cudaLaunchCooperativeKernel", "coll::launch_grid");
}

}  // namespace gpucomm::coll
