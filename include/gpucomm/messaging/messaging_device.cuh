#pragma once
// Two-sided messaging from device code (docs/MESSAGING.md): MPI point-to-point semantics inside
// running kernels. Header-only (no -rdc): include this from a .cu file, link gpucomm::device and
// gpucomm::gpucomm, and pass a CommHandle (Comm::device()) to the kernel by value.
//
// Every function takes the cooperation level first (coop::Thread, coop::Warp, coop::Block): all
// threads of the group call it with the same arguments, and every thread gets the result.
// Buffers must be global memory (device memory, the symmetric heap, mapped host memory); buffers
// in the heap go zero-copy for rendezvous, others are staged in chunks. Progress happens inside
// test, wait, recv, probe and blocking sends; blocks that message each other must be resident at
// the same time. Bad arguments trap with a record naming the argument; every wait has the
// GPUCOMM_TIMEOUT limit (Messenger::check_device() raises the record on the host).
#include <cstddef>
#include <cstdint>

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
    d.kind = DiagKind::resource;
    d.op = op;
    d.arg = static_cast<uint32_t>(DiagArg::request);
    d.ctx = comm.ctx;
    d.peer = -1;
    d.limit = comm.state.cfg.requests;
    dev::DeviceBackend(comm.dev, comm.state).fail(d);
  }
}

}  // namespace detail

// ---- point-to-point ----

// Starts a send; complete it with test/wait. `event`, if given, counts its completion.
template <class C>
__device__ inline Request isend(C c, const CommHandle& comm, const void* buf, size_t bytes, int dest, int tag,
                                Event event = {}) {
  detail::check_comm(comm, DiagOp::isend);
  detail::check_peer(comm, DiagOp::isend, dest, false);
  detail::check_tag(comm, DiagOp::isend, tag, false);
  detail::check_buffer(comm, DiagOp::isend, buf, bytes);
  const StateView& s = comm.state;
  dev::DeviceBackend b(comm.dev, s);
  if (dest == kProcNull) {
    if (b.leader(c) && event.counter) b.fadd(event.counter, 1, Ord::release);
    b.sync(c);
    return Request{Request::kProcNull};
  }
  const proto::SendArgs a{buf, bytes,        team_world_rank(comm.team, dest), dest, tag, comm.ctx, comm.rank,
                          0,   event.counter};
  const proto::Started r = proto::send_start(b, c, s, s.comms[comm.ctx], a);
  detail::check_started(comm, DiagOp::isend, r);
  return Request{r.id};
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
  dev::DeviceBackend b(comm.dev, s);
  const proto::Started r =
      proto::recv_start(b, c, s, proto::RecvArgs{buf, bytes, source, tag, comm.ctx, 0, event.counter});
  detail::check_started(comm, DiagOp::irecv, r);
  return Request{r.id};
}

// True when the request completed (status in *status; the request becomes null).
template <class C>
__device__ inline bool test(C c, const CommHandle& comm, Request& r, Status* status = nullptr) {
  const StateView& s = comm.state;
  dev::DeviceBackend b(comm.dev, s);
  Status st{};
  const bool done = proto::test(b, c, s, r, st);
  if (done && status) *status = st;
  return done;
}

template <class C>
__device__ inline Status wait(C c, const CommHandle& comm, Request& r) {
  const StateView& s = comm.state;
  dev::DeviceBackend b(comm.dev, s);
  return proto::wait(b, c, s, r);
}

// Waits for all of rs[0..n). With arrays the whole group sees (global or shared memory), the
// group's threads check and finish the requests in parallel (a thread per request, a round of
// progress between passes); with per-thread arrays (local memory) it waits for one after another.
template <class C>
__device__ inline void waitall(C c, const CommHandle& comm, Request* rs, int n, Status* statuses = nullptr) {
  const StateView& s = comm.state;
  dev::DeviceBackend b(comm.dev, s);
  bool shared_arrays = coop::size(c) > 1;
#if defined(__CUDA_ARCH__)
  shared_arrays = shared_arrays && !__isLocal(rs) && (statuses == nullptr || !__isLocal(statuses));
#else
  shared_arrays = false;
#endif
  if (shared_arrays) {
    proto::waitall(b, c, s, rs, n, statuses);
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

template <class C>
__device__ inline void send(C c, const CommHandle& comm, const void* buf, size_t bytes, int dest, int tag) {
  Request r = isend(c, comm, buf, bytes, dest, tag);
  const StateView& s = comm.state;
  proto::wait(dev::DeviceBackend(comm.dev, s), c, s, r, DiagOp::send);
}

template <class C>
__device__ inline Status recv(C c, const CommHandle& comm, void* buf, size_t bytes, int source, int tag) {
  Request r = irecv(c, comm, buf, bytes, source, tag);
  const StateView& s = comm.state;
  return proto::wait(dev::DeviceBackend(comm.dev, s), c, s, r, DiagOp::recv);
}

// ---- probes, matched probes, cancel ----

template <class C>
__device__ inline bool improbe(C c, const CommHandle& comm, int source, int tag, Message* msg,
                               Status* status = nullptr) {
  const DiagOp op = msg ? DiagOp::mprobe : DiagOp::probe;
  detail::check_comm(comm, op);
  detail::check_peer(comm, op, source, true);
  detail::check_tag(comm, op, tag, true);
  if (source == kProcNull) {
    if (status) *status = proto::proc_null_status();
    if (msg) *msg = Message{Message::kProcNull};
    return true;
  }
  const StateView& s = comm.state;
  dev::DeviceBackend b(comm.dev, s);
  Status st{};
  uint32_t id = 0;
  const bool found = proto::iprobe(b, c, s, s.comms[comm.ctx], source, tag, st, msg != nullptr, &id);
  if (found) {
    if (status) *status = st;
    if (msg) *msg = Message{id};
  }
  return found;
}

template <class C>
__device__ inline bool iprobe(C c, const CommHandle& comm, int source, int tag, Status* status = nullptr) {
  return improbe(c, comm, source, tag, nullptr, status);
}

// Waits until a message matches (not received); the GPUCOMM_TIMEOUT limit applies.
template <class C>
__device__ inline Status probe(C c, const CommHandle& comm, int source, int tag, Message* msg = nullptr) {
  const StateView& s = comm.state;
  dev::DeviceBackend b(comm.dev, s);
  Status st{};
  const uint64_t start = b.now_ns();
  for (uint32_t i = 1; !improbe(c, comm, source, tag, msg, &st); ++i) {
    b.pause(i);
    if ((i & 63u) == 0 && b.timeout_ns() != 0 && b.now_ns() - start > b.timeout_ns()) {
      Diag d{};
      d.kind = DiagKind::timeout;
      d.op = msg ? DiagOp::mprobe : DiagOp::probe;
      d.ctx = comm.ctx;
      d.mode = static_cast<uint32_t>(comm.mode);
      d.peer = -1;
      d.rank = source;
      d.tag = tag;
      d.req_state = kReqRecvPosted;
      d.umq = s.comms[comm.ctx].umq_n;
      d.prq = s.comms[comm.ctx].prq_n;
      d.elapsed_ns = b.now_ns() - start;
      if (b.leader(c)) b.fail(d);
    }
  }
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
  dev::DeviceBackend b(comm.dev, s);
  const uint32_t id = msg.id;
  msg.id = 0;
  const proto::Started r = proto::mrecv_start(b, c, s, s.comms[comm.ctx], id, buf, bytes, event.counter);
  detail::check_started(comm, DiagOp::mrecv, r);
  return Request{r.id};
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
  proto::cancel(dev::DeviceBackend(comm.dev, s), c, s, r);
}

// One progress round if no other group is progressing this PE.
template <class C>
__device__ inline bool progress(C c, const CommHandle& comm) {
  const StateView& s = comm.state;
  return proto::progress(dev::DeviceBackend(comm.dev, s), c, s);
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
  for (uint32_t i = 1; !b.bcast(c, b.leader(c) && event_value(e) >= value); ++i) {
    proto::progress(b, c, s);
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
