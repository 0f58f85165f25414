#pragma once
// Two-sided messaging from device code (docs/MESSAGING.md): MPI point-to-point semantics inside
// running kernels. Header-only (no -rdc): include this from a .cu file, link gpucomm::device and
// gpucomm::gpucomm, and pass a CommHandle (Comm::device()) to the kernel by value.
//
// Every function takes the cooperation level first (coop::Thread, coop::Warp, coop::Block): all
// threads of the group call it with the same arguments, and every thread gets the result. A warp
// runs the protocol with its lanes; a block runs it on its warp 0 and joins once at the end (the
// whole block moves rendezvous data). Buffers must be global memory (device memory, the symmetric
// heap, mapped host memory); buffers in the heap go zero-copy for rendezvous, others are staged in
// chunks. Progress happens inside test, wait, recv, probe and blocking sends (docs/MESSAGING.md,
// "Who matches"); blocks that message each other must be resident at the same time. Bad arguments
// trap with a record naming the argument; every wait has the GPUCOMM_TIMEOUT limit
// (Messenger::check_device() raises the record on the host). The calls add about 17.5 KiB of static
// shared memory per block (device_backend_device.cuh; docs/MESSAGING.md, "Shared memory a call
// adds") and need no dynamic shared memory from the caller.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpucomm/base/team.hpp"
#include "gpucomm/messaging/comm_handle.hpp"
#include "gpucomm/messaging/device_backend_device.cuh"

namespace gpucomm::msg {

namespace detail {

// Traps with a bad-argument record naming `arg` (the value and its limit).
__device__ __noinline__ inline void bad_argument(const CommHandle& comm, DiagOp op, DiagArg arg, int64_t value,
                                                 int64_t limit) {
  Diag d{};
  d.kind = DiagKind::bad_argument;
  d.op = op;
  d.arg = static_cast<uint32_t>(arg);
  d.ctx = comm.ctx;
  d.mode = static_cast<uint32_t>(comm.mode);
  d.peer = -1;
  d.rank = static_cast<int32_t>(value);
  d.value = static_cast<uint64_t>(value);
  d.limit = static_cast<uint64_t>(limit);
  dev::DeviceBackend(comm.dev, comm.state).fail(d);
}

// A handle made by this library's headers and version, for a live communicator (every build: a
// foreign or stale handle would corrupt the state).
__device__ inline void check_comm(const CommHandle& comm, DiagOp op) {
  if (comm.magic != kCommMagic || comm.version != kCommVersion || comm.bytes != sizeof(CommHandle) ||
      comm.state.ctl == nullptr) {
    gpucomm::detail::fail(comm.dev, DeviceFault::bad_handle, DeviceOp::message, -1, nullptr, Cmp::eq, kCommMagic,
                          comm.magic, 0);
  }
  if (static_cast<uint32_t>(comm.ctx) >= static_cast<uint32_t>(kMaxComms) || !comm.state.comms[comm.ctx].live)
    bad_argument(comm, op, DiagArg::comm, comm.ctx, kMaxComms);
}

__device__ inline void check_peer(const CommHandle& comm, DiagOp op, int r, bool wildcard) {
  if (r == kProcNull || (wildcard && r == kAnySource)) {
    if (r == kAnySource && (comm.mode == Mode::no_any_source || comm.mode == Mode::unordered))
      bad_argument(comm, op, DiagArg::mode, r, static_cast<int64_t>(comm.mode));
    return;
  }
  if (static_cast<unsigned>(r) >= static_cast<unsigned>(comm.size)) bad_argument(comm, op, DiagArg::rank, r, comm.size);
}

__device__ inline void check_tag(const CommHandle& comm, DiagOp op, int tag, bool wildcard) {
  if (wildcard && tag == kAnyTag) {
    if (comm.mode == Mode::unordered) bad_argument(comm, op, DiagArg::mode, tag, static_cast<int64_t>(comm.mode));
    return;
  }
  if (tag < 0 || tag > kTagUpperBound) bad_argument(comm, op, DiagArg::tag, tag, kTagUpperBound);
}

__device__ inline void check_buffer(const CommHandle& comm, DiagOp op, const void* buf, size_t bytes) {
  if (bytes == 0) return;
  if (buf == nullptr) bad_argument(comm, op, DiagArg::buffer, 0, static_cast<int64_t>(bytes));
  if (!__isGlobal(buf))
    bad_argument(comm, op, DiagArg::buffer, reinterpret_cast<intptr_t>(buf), static_cast<int64_t>(bytes));
  if (bytes > (uint64_t(1) << 48))
    bad_argument(comm, op, DiagArg::bytes, static_cast<int64_t>(bytes), int64_t(1) << 48);
}

__device__ inline void check_started(const CommHandle& comm, DiagOp op, const proto::Started& r) {
  if (r.error) {
    Diag d{};
    d.kind = r.error == static_cast<uint32_t>(DiagKind::timeout) ? DiagKind::timeout : DiagKind::resource;
    d.op = op;
    d.arg = static_cast<uint32_t>(DiagArg::request);
    d.ctx = comm.ctx;
    d.peer = -1;
    d.limit = comm.state.cfg.requests;
    dev::DeviceBackend(comm.dev, comm.state).fail(d);
  }
}

// The level that runs the protocol for a group: a block's warp 0 runs it as a warp.
template <class C>
struct core {
  using type = C;
};
template <>
struct core<coop::Block> {
  using type = coop::Warp;
};
template <class C>
using core_t = typename core<C>::type;
template <class C>
__device__ __forceinline__ bool runs_core(C) {
  return !std::is_same_v<C, coop::Block> || coop::warp_id() == 0;
}

// f(core group) on the threads that run the protocol; its value to every thread of the group.
template <class C, class F>
__device__ inline auto on_core(C c, F f) {
  using R = decltype(f(core_t<C>{}));
  if constexpr (std::is_same_v<C, coop::Block>) {
    R r{};
    if (coop::warp_id() == 0) r = f(coop::Warp{});
    return dev::bcast_value(c, r);
  } else {
    return f(c);
  }
}

// f(coop::Thread) on the group's first thread (calls that need no group: posting, sending, probes);
// its value to every thread of the group.
template <class C, class F>
__device__ inline auto on_leader(C c, F f) {
  if constexpr (std::is_same_v<C, coop::Thread>) {
    return f(c);
  } else {
    using R = decltype(f(coop::Thread{}));
    R r{};
    if (coop::thread_rank(c) == 0) r = f(coop::Thread{});
    return dev::bcast_value(c, r);
  }
}

}  // namespace detail

// ---- point-to-point ----

namespace detail {
template <class C>
__device__ inline proto::Started send_started(C c, const CommHandle& comm, const void* buf, size_t bytes, int dest,
                                              int tag, Event event, bool blocking, DiagOp op) {
  check_comm(comm, op);
  check_peer(comm, op, dest, false);
  check_tag(comm, op, tag, false);
  check_buffer(comm, op, buf, bytes);
  const StateView& s = comm.state;
  if (dest == kProcNull) {
    if (coop::thread_rank(c) == 0 && event.counter) mem::red_add<mem::kDevice>(event.counter, 1, mem::release);
    coop::sync(c);
    return proto::Started{Request::kProcNull, 0, 0};
  }
  const proto::SendArgs a{buf, bytes,         team_world_rank(comm.team, dest), dest, tag, comm.ctx, comm.rank,
                          0,   event.counter, static_cast<uint32_t>(comm.mode)};
  const proto::Started r = on_leader(c, [&](auto g) {
    const dev::DeviceBackend b(comm.dev, s);
    return proto::send_start(b, g, s, a, blocking);
  });
  check_started(comm, op, r);
  return r;
}
}  // namespace detail

// Starts a send; complete it with test/wait. `event`, if given, counts its completion.
template <class C>
__device__ inline Request isend(C c, const CommHandle& comm, const void* buf, size_t bytes, int dest, int tag,
                                Event event = {}) {
  const proto::Started r = detail::send_started(c, comm, buf, bytes, dest, tag, event, false, DiagOp::isend);
  return Request{r.id, r.stamp};
}

// Starts a receive from `source` (a rank, kAnySource or kProcNull) with `tag` (or kAnyTag).
template <class C>
__device__ inline Request irecv(C c, const CommHandle& comm, void* buf, size_t bytes, int source, int tag,
                                Event event = {}) {
  detail::check_comm(comm, DiagOp::irecv);
  detail::check_peer(comm, DiagOp::irecv, source, true);
  detail::check_tag(comm, DiagOp::irecv, tag, true);
  detail::check_buffer(comm, DiagOp::irecv, buf, bytes);
  const StateView& s = comm.state;
  const proto::RecvArgs a{buf, bytes, source, tag, comm.ctx, static_cast<uint32_t>(comm.mode), event.counter};
  const proto::Started r = detail::on_leader(c, [&](auto g) {
    const dev::DeviceBackend b(comm.dev, s);
    return proto::recv_start(b, g, s, a);
  });
  detail::check_started(comm, DiagOp::irecv, r);
  return Request{r.id, r.stamp};
}

// True when the request completed (status in *status; the request becomes null).
template <class C>
__device__ inline bool test(C c, const CommHandle& comm, Request& r, Status* status = nullptr) {
  const StateView& s = comm.state;
  const dev::DeviceBackend b(comm.dev, s);
  Status st{};
  if (proto::trivially_done(r, st)) {
    if (status) *status = st;
    return true;
  }
  const proto::Look l = detail::on_core(c, [&](auto g) { return proto::test_look(b, g, s, r); });
  if (!l.done) return false;
  st = proto::finish_look(b, c, s, r, l, DiagOp::test);
  if (status) *status = st;
  return true;
}

namespace detail {
template <class C>
__device__ inline Status wait_op(C c, const CommHandle& comm, Request& r, DiagOp op) {
  const StateView& s = comm.state;
  const dev::DeviceBackend b(comm.dev, s);
  Status st{};
  if (proto::trivially_done(r, st)) return st;
  const proto::Look l = on_core(c, [&](auto g) {
    const dev::DeviceBackend bb(comm.dev, s);
    bb.fast_release(g);
    return proto::wait_completion(bb, g, s, r, op);
  });
  return proto::finish_look(b, c, s, r, l, op);
}
}  // namespace detail

template <class C>
__device__ inline Status wait(C c, const CommHandle& comm, Request& r) {
  return detail::wait_op(c, comm, r, DiagOp::wait);
}

// Waits for all of rs[0..n). With arrays the whole group sees (global or shared memory), the
// group's threads check and finish the requests in parallel (a thread per request, a round of
// progress between passes; a block's warp 0 does it); with per-thread arrays (local memory) it
// waits for one after another.
template <class C>
__device__ inline void waitall(C c, const CommHandle& comm, Request* rs, int n, Status* statuses = nullptr) {
  const StateView& s = comm.state;
  bool shared_arrays = coop::size(c) > 1;
#if defined(__CUDA_ARCH__)
  shared_arrays = shared_arrays && !__isLocal(rs) && (statuses == nullptr || !__isLocal(statuses));
#else
  shared_arrays = false;
#endif
  if (shared_arrays) {
    if (detail::runs_core(c)) {
      const dev::DeviceBackend b(comm.dev, s);
      proto::waitall(b, detail::core_t<C>{}, s, rs, n, statuses);
    }
    coop::sync(c);
    return;
  }
  for (int i = 0; i < n; ++i) {
    const Status st = wait(c, comm, rs[i]);
    if (statuses) statuses[i] = st;
  }
}

// Index of a completed request (reset to null), or -1 when all are null.
template <class C>
__device__ inline int waitany(C c, const CommHandle& comm, Request* rs, int n, Status* status = nullptr) {
  bool open = false;
  for (int i = 0; i < n; ++i) open = open || !rs[i].null();
  if (!open) return -1;
  for (;;) {
    for (int i = 0; i < n; ++i)
      if (!rs[i].null() && test(c, comm, rs[i], status)) return i;
  }
}

// Whether any of rs[0..n) completed: its index in *index (reset to null, status in *status);
// true with *index = -1 when all are null.
template <class C>
__device__ inline bool testany(C c, const CommHandle& comm, Request* rs, int n, int* index, Status* status = nullptr) {
  bool open = false;
  for (int i = 0; i < n; ++i) {
    if (rs[i].null()) continue;
    open = true;
    if (test(c, comm, rs[i], status)) {
      *index = i;
      return true;
    }
  }
  *index = -1;
  return !open;
}

// Waits until at least one of rs[0..n) completed and finishes all that did: their indices in
// indices[0..k) and statuses in statuses[0..k) (when given); returns k, or -1 when all are null.
// Per-thread arrays (every thread of the group the same values).
template <class C>
__device__ inline int waitsome(C c, const CommHandle& comm, Request* rs, int n, int* indices,
                               Status* statuses = nullptr) {
  for (;;) {
    bool open = false;
    int k = 0;
    for (int i = 0; i < n; ++i) {
      if (rs[i].null()) continue;
      open = true;
      Status st{};
      if (!test(c, comm, rs[i], &st)) continue;
      if (indices) indices[k] = i;
      if (statuses) statuses[k] = st;
      ++k;
    }
    if (!open) return -1;
    if (k > 0) return k;
  }
}

template <class C>
__device__ inline void send(C c, const CommHandle& comm, const void* buf, size_t bytes, int dest, int tag) {
  const proto::Started r = detail::send_started(c, comm, buf, bytes, dest, tag, Event{}, true, DiagOp::send);
  Request q{r.id, r.stamp};
  detail::wait_op(c, comm, q, DiagOp::send);
}

template <class C>
__device__ inline Status recv(C c, const CommHandle& comm, void* buf, size_t bytes, int source, int tag) {
  Request r = irecv(c, comm, buf, bytes, source, tag);
  return detail::wait_op(c, comm, r, DiagOp::recv);
}

// Sends `sbuf` to `dest` and receives into `rbuf` from `source` at once (MPI_Sendrecv): the
// receive is posted first, so two groups that exchange with each other never wait on each other.
template <class C>
__device__ inline Status sendrecv(C c, const CommHandle& comm, const void* sbuf, size_t sbytes, int dest, int stag,
                                  void* rbuf, size_t rbytes, int source, int rtag) {
  Request r = irecv(c, comm, rbuf, rbytes, source, rtag);
  Request q = isend(c, comm, sbuf, sbytes, dest, stag);
  const Status st = detail::wait_op(c, comm, r, DiagOp::recv);
  detail::wait_op(c, comm, q, DiagOp::send);
  return st;
}

// ---- probes, matched probes, cancel ----

namespace detail {
struct ProbeResult {
  uint32_t found, id;
  Status st;
};
template <class C>
__device__ inline bool probe_call(C c, const CommHandle& comm, int source, int tag, Message* msg, Status* status,
                                  bool standing) {
  const DiagOp op = msg ? DiagOp::mprobe : DiagOp::probe;
  check_comm(comm, op);
  check_peer(comm, op, source, true);
  check_tag(comm, op, tag, true);
  if (source == kProcNull) {
    if (status) *status = proto::proc_null_status();
    if (msg) *msg = Message{Message::kProcNull};
    return true;
  }
  const StateView& s = comm.state;
  const ProbeResult f = on_leader(c, [&](auto g) {
    const dev::DeviceBackend b(comm.dev, s);
    ProbeResult r{};
    r.found = proto::probe_any(b, g, s, comm.ctx, static_cast<uint32_t>(comm.mode), source, tag, msg != nullptr,
                               standing, r.st, &r.id, op)
                  ? 1u
                  : 0u;
    return r;
  });
  if (!f.found) return false;
  if (status) *status = f.st;
  if (msg) *msg = Message{f.id};
  return true;
}
}  // namespace detail

template <class C>
__device__ inline bool improbe(C c, const CommHandle& comm, int source, int tag, Message* msg,
                               Status* status = nullptr) {
  return detail::probe_call(c, comm, source, tag, msg, status, false);
}

template <class C>
__device__ inline bool iprobe(C c, const CommHandle& comm, int source, int tag, Status* status = nullptr) {
  return detail::probe_call(c, comm, source, tag, nullptr, status, false);
}

// Waits until a message matches (not received); the GPUCOMM_TIMEOUT limit applies.
template <class C>
__device__ inline Status probe(C c, const CommHandle& comm, int source, int tag, Message* msg = nullptr) {
  Status st{};
  detail::probe_call(c, comm, source, tag, msg, &st, true);
  return st;
}

template <class C>
__device__ inline Message mprobe(C c, const CommHandle& comm, int source, int tag, Status* status = nullptr) {
  Message m{};
  const Status st = probe(c, comm, source, tag, &m);
  if (status) *status = st;
  return m;
}

template <class C>
__device__ inline Request imrecv(C c, const CommHandle& comm, void* buf, size_t bytes, Message& msg, Event event = {}) {
  detail::check_comm(comm, DiagOp::mrecv);
  detail::check_buffer(comm, DiagOp::mrecv, buf, bytes);
  const StateView& s = comm.state;
  if (msg.id != Message::kProcNull && (msg.id == 0 || msg.id > s.cfg.unexpected))
    detail::bad_argument(comm, DiagOp::mrecv, DiagArg::message, msg.id, s.cfg.unexpected);
  const uint32_t id = msg.id;
  msg.id = 0;
  const proto::Started r = detail::on_leader(c, [&](auto g) {
    const dev::DeviceBackend b(comm.dev, s);
    return proto::mrecv_start(b, g, s, comm.ctx, static_cast<uint32_t>(comm.mode), id, buf, bytes, event.counter);
  });
  detail::check_started(comm, DiagOp::mrecv, r);
  return Request{r.id, r.stamp};
}

template <class C>
__device__ inline Status mrecv(C c, const CommHandle& comm, void* buf, size_t bytes, Message& msg) {
  Request r = imrecv(c, comm, buf, bytes, msg);
  return wait(c, comm, r);
}

// Cancels a receive that has not matched; wait then reports kErrCancelled.
template <class C>
__device__ inline void cancel(C c, const CommHandle& comm, const Request& r) {
  const StateView& s = comm.state;
  if (coop::thread_rank(c) == 0) proto::cancel(dev::DeviceBackend(comm.dev, s), coop::Thread{}, s, r);
  coop::sync(c);
}

// One progress round if progress can be taken now.
template <class C>
__device__ inline bool progress(C c, const CommHandle& comm) {
  const StateView& s = comm.state;
  return detail::on_core(c, [&](auto g) { return proto::progress(dev::DeviceBackend(comm.dev, s), g, s); });
}

// Gives progress back if this block holds it parked (a kernel about to exit: another kernel's
// waiters then take it at once instead of after GPUCOMM_MSG_STEAL_US). Optional.
template <class C>
__device__ inline void release_progress(C c, const CommHandle& comm) {
  const StateView& s = comm.state;
  const dev::DeviceBackend b(comm.dev, s);
  b.fast_release(c);
  if (coop::thread_rank(c) == 0) {
    const uint64_t t = b.cache_tenure();
    uint64_t* w = &s.ctl->holder;
    const uint64_t v = mem::load<mem::kDevice>(w, mem::relaxed);
    if (t != ~uint64_t(0) && holder_state(v) == kHolderParked && holder_tenure(v) == t)
      (void)mem::compare_exchange<mem::kDevice>(w, v, holder_word(kHolderFree, t, 0), mem::relaxed);
  }
  coop::sync(c);
}

// ---- events ----

__device__ inline uint64_t event_value(const Event& e) {
  return mem::load<mem::kDevice>(e.counter, mem::acquire);
}
// Waits (progressing) until the event counted `value` completions.
template <class C>
__device__ inline void event_wait(C c, const CommHandle& comm, const Event& e, uint64_t value) {
  const StateView& s = comm.state;
  dev::DeviceBackend b(comm.dev, s);
  if (e.counter == nullptr) detail::bad_argument(comm, DiagOp::event_wait, DiagArg::event, 0, 0);
  const uint64_t start = b.now_ns();
  proto::StealWatch sw{};
  for (uint32_t i = 1; !b.bcast(c, b.leader(c) && event_value(e) >= value); ++i) {
    const bool steal = (i & 15u) == 0 && b.bcast(c, b.leader(c) && proto::steal_due(b, s, sw));
    detail::on_core(c, [&](auto g) { return proto::progress(dev::DeviceBackend(comm.dev, s), g, s, steal); });
    b.pause(i);
    if ((i & 63u) == 0 && b.timeout_ns() != 0 && b.now_ns() - start > b.timeout_ns() && b.leader(c)) {
      Diag d{};
      d.kind = DiagKind::timeout;
      d.op = DiagOp::event_wait;
      d.ctx = comm.ctx;
      d.peer = -1;
      d.value = event_value(e);
      d.limit = value;
      d.elapsed_ns = b.now_ns() - start;
      b.fail(d);
    }
  }
}

}  // namespace gpucomm::msg
