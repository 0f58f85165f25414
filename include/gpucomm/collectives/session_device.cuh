#pragma once
// A session: a warp's or a block's run of collective calls on one team inside a kernel, with the
// LL lane's state in the group's registers (docs/COLLECTIVES.md, "Sessions").
//
//   __global__ void k(gpucomm::DeviceHandle h, gpucomm::coll::CollHandle ch, float* x, int steps) {
//     gpucomm::coll::device::Session s(gpucomm::coop::Block{}, h, ch);
//     for (int i = 0; i < steps; ++i) {
//       ...                                   // compute
//       s.allreduce(x, x, 2, gpucomm::coll::RedOp::sum);
//       s.barrier();
//     }
//   }                                         // the session hands its lane words back here
//
// A per-call collective (collectives_device.cuh) loads the channel's lane words (the lane epoch
// and the sequence number) and the peers' mapping from memory and stores the words back: after a
// fence or an acquire poll each of those is a trip to L2. It also recomputes the channel's layout
// and the call's signature, a chain of dependent integer arithmetic that one thread pays between
// the memory operations. A session loads the words once, when it opens, and every thread of the
// group keeps them with the layout, the barrier's call and the last signature: a barrier is then
// one release fence, one store and one acquire poll per peer; a small allreduce one store of LL
// words per peer and their poll.
// The protocol on the wire is the lane's (algo::barrier_ll, algo::reduce_ll): a PE in a session
// meets PEs calling the per-call API. Calls the lane does not serve (other operations, sizes over
// the LL range, peers behind the proxy, a one-member team without the forcing) hand the words back
// to memory and run the per-call path; the next lane call loads them again.
//
// Rules: while a session is open it is this PE's only caller of collectives on its team (as for
// any collective, one at a time per team), and every thread of the group makes every call.
// Warp and block level (a grid-level call begins and ends with a grid barrier anyway).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpucomm/collectives/collectives_device.cuh"

namespace gpucomm::coll {
namespace detail {

// The device backend of one session call: the lane's epoch from the session's registers, stores
// to the cached peer (the first of Others: the next team rank, or the PE itself when the
// protocol is forced at one) without loading its mapping.
template <class Coop>
class SessionBackend : public DeviceBackend<Coop> {
  using Base = DeviceBackend<Coop>;

 public:
  static constexpr bool kLaneInRegisters = true;
  __device__ SessionBackend(Coop c, const DeviceHandle& h, const CollHandle& ch, const Call& call, const ChanView& v,
                            uint64_t& lane, uint64_t seq, int peer, ptrdiff_t peer_offset)
      : Base(c, h, ch, call, 0, v), lane_(lane), peer_(peer), peer_offset_(peer_offset) {
    Base::seq_ = seq;
  }
  // The session bumped seq when the call began (every lane call is one collective).
  __device__ uint64_t lane_next(bool /*first*/) { return ++lane_; }
  __device__ void ll_store(int q, uint64_t* word, uint64_t value) {
    if (q != peer_) return Base::ll_store(q, word, value);
    mem::store<mem::kSystem>(reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(word) + peer_offset_), value,
                             mem::relaxed);
  }

 private:
  uint64_t& lane_;
  int peer_;
  ptrdiff_t peer_offset_;
};

}  // namespace detail

namespace device {

template <class Coop>
class Session {
  static_assert(std::is_same_v<Coop, coop::Warp> || std::is_same_v<Coop, coop::Block>,
                "a collective session is a warp's or a block's");

 public:
  // Every thread of the group constructs it: the leader loads the lane words once and broadcasts
  // them (two group barriers); on teams the lane does not serve it holds nothing.
  __device__ Session(Coop c, const DeviceHandle& h, const CollHandle& ch) : c_(c), h_(h), ch_(ch) {
    gpucomm::detail::check_handle(h, DeviceOp::wait_until);
    gpucomm::detail::check_team(h, ch.team, DeviceOp::team_barrier);
    const int n = ch.team.size, me = ch.team.rank;
    lane_ok_ = (ch.flags & kCollAllDirect) != 0 && (n > 1 || (ch.flags & kCollForceProtocol) != 0);
    if (!lane_ok_) return;
    peer_ = n == 1 ? me : (me + 1) % n;
    const char* base = h.peer_bases[team_world_rank(ch.team, peer_)];
    peer_offset_ = base - h.heap_base;
    v_ = chan_view(ch, 0);
    barrier_.op = CollOp::barrier;
    barrier_.dt = DataType::u64;
    barrier_.root = -1;
    barrier_.algo = Algorithm::oneshot_ll;
    barrier_.channels = 1;
    barrier_.sig = signature(barrier_.op, barrier_.dt, barrier_.redop, barrier_.algo, 0, -1, 1);
    barrier_auto_ = detail::resolve(ch, CollOp::barrier, 0, Algorithm::automatic);
    load();
  }
  // Hands the lane words back to memory (the leader's two stores) for the per-call API and the
  // next session.
  __device__ ~Session() { flush(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  __device__ void barrier(Algorithm a = Algorithm::automatic) {
    const Algorithm algo = a == Algorithm::automatic ? barrier_auto_ : a;
    if (!lane_ok_ || algo != Algorithm::oneshot_ll) {
      flush();
      return device::barrier(c_, h_, ch_, algo);
    }
    if (!held_) load();
    ++seq_;
    detail::SessionBackend<Coop> b(c_, h_, ch_, barrier_, v_, lane_, seq_, peer_, peer_offset_);
    algo::barrier_ll(b, barrier_);  // ends with the group barrier
  }
  template <class T>
  __device__ void allreduce(const T* send, T* recv, size_t count, RedOp op, Algorithm a = Algorithm::automatic) {
    reduction(CollOp::allreduce, send, recv, count, op, a);
  }
  template <class T>
  __device__ void reduce_scatter(const T* send, T* recv, size_t count, RedOp op, Algorithm a = Algorithm::automatic) {
    reduction(CollOp::reduce_scatter, send, recv, count, op, a);
  }
  // The operations the lane does not serve: the per-call path, the words handed back first.
  template <class T>
  __device__ void broadcast(const T* send, T* recv, size_t count, int root, Algorithm a = Algorithm::automatic) {
    flush();
    device::broadcast(c_, h_, ch_, send, recv, count, root, a);
  }
  template <class T>
  __device__ void reduce(const T* send, T* recv, size_t count, RedOp op, int root, Algorithm a = Algorithm::automatic) {
    flush();
    device::reduce(c_, h_, ch_, send, recv, count, op, root, a);
  }
  template <class T>
  __device__ void allgather(const T* send, T* recv, size_t count, Algorithm a = Algorithm::automatic) {
    flush();
    device::allgather(c_, h_, ch_, send, recv, count, a);
  }
  template <class T>
  __device__ void alltoall(const T* send, T* recv, size_t count, Algorithm a = Algorithm::automatic) {
    flush();
    device::alltoall(c_, h_, ch_, send, recv, count, a);
  }

 private:
  // Whether `call` runs on the lane from the registers (the per-call API's straight_to_lane).
  __device__ bool on_lane(const Call& call) const { return lane_ok_ && detail::straight_to_lane(ch_, call); }

  template <class T>
  __device__ void reduction(CollOp op, const T* send, T* recv, size_t count, RedOp red, Algorithm a) {
    Call call = detail::make_call(op, send, recv, count, red, -1, a, ch_);
    if (!count) return;
    if (!on_lane(call)) {
      flush();
      return detail::run<detail::TypeOf<T>::value>(c_, h_, ch_, call);
    }
    detail::SessionBackend<Coop> b = begin(call);
    algo::reduce_ll<detail::TypeOf<T>::value>(b, call, Range{0, count});
    coop::sync(c_);
  }

  // A lane call: its signature (the last one again when its fields are), the words in registers,
  // seq bumped (one collective).
  __device__ detail::SessionBackend<Coop> begin(Call& call) {
    call.channels = 1;
    const uint32_t kind = static_cast<uint32_t>(call.op) | static_cast<uint32_t>(call.dt) << 8 |
                          static_cast<uint32_t>(call.redop) << 16 | static_cast<uint32_t>(call.algo) << 24;
    if (kind != sig_kind_ || call.count != sig_count_) {
      sig_kind_ = kind;
      sig_count_ = call.count;
      sig_ = signature(call.op, call.dt, call.redop, call.algo, call.count, call.root, 1);
    }
    call.sig = sig_;
    if (!held_) load();
    ++seq_;
    return detail::SessionBackend<Coop>(c_, h_, ch_, call, v_, lane_, seq_, peer_, peer_offset_);
  }
  // The leader's words to the whole group (the group barrier inside broadcast orders the loads
  // after every earlier call's stores of this PE's groups).
  __device__ void load() {
    const bool lead = gpucomm::detail::leader(c_);
    seq_ = gpucomm::detail::broadcast(c_, lead ? mem::load<mem::kDevice>(v_.seq(), mem::relaxed) : 0);
    lane_ = gpucomm::detail::broadcast(c_, lead ? mem::load<mem::kDevice>(v_.lane(), mem::relaxed) : 0);
    held_ = true;
  }
  __device__ void flush() {
    if (!held_) return;
    if (gpucomm::detail::leader(c_)) {
      mem::store<mem::kDevice>(v_.seq(), seq_, mem::relaxed);
      mem::store<mem::kDevice>(v_.lane(), lane_, mem::relaxed);
    }
    held_ = false;
  }

  Coop c_;
  const DeviceHandle& h_;
  const CollHandle& ch_;
  bool lane_ok_ = false, held_ = false;
  int peer_ = -1;
  ptrdiff_t peer_offset_ = 0;
  uint64_t seq_ = 0, lane_ = 0;
  ChanView v_{};
  Call barrier_{};  // the lane barrier's call, its signature included
  Algorithm barrier_auto_ = Algorithm::automatic;
  uint32_t sig_kind_ = ~0u, sig_ = 0;  // the last lane call's fields and signature
  uint64_t sig_count_ = 0;
};

}  // namespace device
}  // namespace gpucomm::coll
