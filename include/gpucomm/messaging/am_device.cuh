#pragma once
// Active messages from device code (docs/MESSAGING.md, "Active messages"). A handler is a functor
// type of the program's own translation unit (no -rdc: the library never calls code of another
// module); the host registers the handler ids, the same on every PE (Messenger::register_am).
//
//   am_send(c, comm, dest, id, payload, bytes)      one-way; waits (progressing) for a request
//                                                   credit at `dest` and for ring slots
//   am_request(c, comm, dest, id, payload, bytes)   the same, and `dest`'s handler must answer
//                                                   once with am_reply (space for it is reserved)
//   am_reply(c, comm, msg, id, payload, bytes)      from a handler: the answer to `msg`; never
//                                                   waits for table space, only for ring slots
//   am_poll(c, comm, handler)                       a progress round, then handler(c, msg) for each
//                                                   active message that arrived (at most `max`)
//   launch_am_service(comm, handler, stop, s)       one block that polls until *stop != 0 (it also
//                                                   progresses every other request of the PE)
//   launch_progress_service(comm, stop, s)          one block that only progresses
//   load_kernels(k...), load_am_service<Handler>()  load kernels before a service block runs (below)
//
// Payloads are at most Config::am_max bytes of global memory. A handler runs with the cooperation
// level of the poll, outside the progress lock; its payload pointer is valid until it returns.
// The sends taking a handler poll with it while they wait for credits: PEs that send active
// messages to each other from kernels without a service block must use those (a sender waiting
// for a credit needs the receiver's handlers to run).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "gpucomm/base/load_kernels.hpp"
#include "gpucomm/messaging/messaging_device.cuh"
#include "gpucomm/messaging/protocol_am.hpp"

namespace gpucomm::msg {

template <class C, class Handler>
__device__ int am_poll(C c, const CommHandle& comm, Handler& handler, int max = 8);
template <class C, class Handler>
__device__ int am_poll_steal(C c, const CommHandle& comm, Handler& handler, int max, bool steal);

namespace detail {

struct NoHandler {
  template <class C>
  __device__ void operator()(C, const AmMessage&) const {}
};

// The common part of the sends: checks, the credit (for requests), the message. `poll` runs while
// waiting for a credit (NoHandler: progress only).
template <class C, class Handler>
__device__ inline void am_send_flags(C c, const CommHandle& comm, int dest, uint32_t id, const void* payload,
                                     size_t bytes, uint32_t flags, Handler* poll, Event event) {
  check_comm(comm, DiagOp::am_send);
  check_peer(comm, DiagOp::am_send, dest, false);
  check_buffer(comm, DiagOp::am_send, payload, bytes);
  const StateView& s = comm.state;
  dev::DeviceBackend b(comm.dev, s);
  if (!proto::am_registered(b, s, id))
    bad_argument(comm, DiagOp::am_send, DiagArg::handler, static_cast<int64_t>(id), kMaxAmHandlers);
  if (bytes > s.cfg.am_max)
    bad_argument(comm, DiagOp::am_send, DiagArg::bytes, static_cast<int64_t>(bytes), s.cfg.am_max);
  if (dest == kProcNull) {
    if (b.leader(c) && event.counter) b.fadd(event.counter, 1, Ord::release);
    b.sync(c);
    return;
  }
  const int32_t pe = team_world_rank(comm.team, dest);
  if ((flags & kAmReply) == 0) {
    uint64_t start = 0;
    for (uint32_t i = 1; !b.bcast(c, b.leader(c) && proto::am_take_credit(b, s, pe, (flags & kAmWantsReply) != 0));
         ++i) {
      if constexpr (std::is_same_v<Handler, NoHandler>) {
        (void)proto::progress(b, c, s);
      } else {
        (void)am_poll(c, comm, *poll);
      }
      b.pause(i);
      if ((i & 63u) == 0 && b.leader(c)) {
        const uint64_t now = b.now_ns();
        if (start == 0) start = now;
        if (b.timeout_ns() != 0 && now - start > b.timeout_ns()) {
          Diag d{};
          d.kind = DiagKind::timeout;
          d.op = DiagOp::am_send;
          d.ctx = comm.ctx;
          d.mode = static_cast<uint32_t>(comm.mode);
          d.peer = pe;
          d.rank = dest;
          d.tag = static_cast<int32_t>(id | flags);
          d.value = s.peers[pe].am_sent;
          d.limit = b.ld_sys(&s.am_credits[pe], Ord::relaxed) + s.cfg.am_per_sender;
          d.elapsed_ns = now - start;
          b.fail(d);
        }
      }
    }
  }
  const proto::SendArgs a{payload,  bytes,     pe,          dest,          static_cast<int32_t>(id | flags),
                          comm.ctx, comm.rank, kWireActive, event.counter, static_cast<uint32_t>(comm.mode)};
  const proto::Started r = proto::send_start(b, c, s, a, false);
  check_started(comm, DiagOp::am_send, r);
  Request q{r.id, r.stamp};
  proto::wait(b, c, s, q, DiagOp::am_send);
}

}  // namespace detail

// One progress round, then `handler(c, msg)` for each active message that arrived (at most `max`,
// in arrival order). Returns how many ran. `steal`: take progress from a parked holder at once.
template <class C, class Handler>
__device__ int am_poll_steal(C c, const CommHandle& comm, Handler& handler, int max, bool steal) {
  const StateView& s = comm.state;
  dev::DeviceBackend b(comm.dev, s);
  const proto::AmTaken t = proto::am_take(b, c, s, max < 0 ? 0u : static_cast<uint32_t>(max), steal);
  for (uint32_t k = 0; k < t.n; ++k) {
    const AmMessage m = proto::am_message(s, t.idx[k]);
    handler(c, m);
    b.sync(c);  // every thread is done with the payload
    if (b.leader(c) && !proto::am_release(b, s, t.idx[k]))
      detail::bad_argument(comm, DiagOp::am_send, DiagArg::reply, static_cast<int64_t>(m.id), 1);
  }
  return static_cast<int>(t.n);
}
template <class C, class Handler>
__device__ int am_poll(C c, const CommHandle& comm, Handler& handler, int max) {
  return am_poll_steal(c, comm, handler, max, false);
}

template <class C>
__device__ inline void am_send(C c, const CommHandle& comm, int dest, uint32_t id, const void* payload, size_t bytes,
                               Event event = {}) {
  detail::am_send_flags<C, detail::NoHandler>(c, comm, dest, id, payload, bytes, 0, nullptr, event);
}
// The same, polling with `handler` while it waits for a credit.
template <class C, class Handler>
__device__ inline void am_send(C c, const CommHandle& comm, int dest, uint32_t id, const void* payload, size_t bytes,
                               Handler& handler) {
  detail::am_send_flags(c, comm, dest, id, payload, bytes, 0, &handler, Event{});
}
template <class C>
__device__ inline void am_request(C c, const CommHandle& comm, int dest, uint32_t id, const void* payload,
                                  size_t bytes) {
  detail::am_send_flags<C, detail::NoHandler>(c, comm, dest, id, payload, bytes, kAmWantsReply, nullptr, Event{});
}
template <class C, class Handler>
__device__ inline void am_request(C c, const CommHandle& comm, int dest, uint32_t id, const void* payload, size_t bytes,
                                  Handler& handler) {
  detail::am_send_flags(c, comm, dest, id, payload, bytes, kAmWantsReply, &handler, Event{});
}

// From the handler of `msg` (sent with am_request): its one answer, to msg.source.
template <class C>
__device__ inline void am_reply(C c, const CommHandle& comm, const AmMessage& msg, uint32_t id, const void* payload,
                                size_t bytes) {
  const StateView& s = comm.state;
  dev::DeviceBackend b(comm.dev, s);
  if ((msg.flags & kAmWantsReply) == 0)
    detail::bad_argument(comm, DiagOp::am_send, DiagArg::reply, static_cast<int64_t>(msg.id), 0);
  AmEntry& e = proto::am_entry(s, msg.entry);
  if (b.bcast(c, b.leader(c) && e.replied != 0))
    detail::bad_argument(comm, DiagOp::am_send, DiagArg::reply, static_cast<int64_t>(msg.id), 1);
  if (b.leader(c)) e.replied = 1;
  detail::am_send_flags<C, detail::NoHandler>(c, comm, msg.source, id, payload, bytes, kAmReply, nullptr, Event{});
}

namespace detail {

// The service block: polls (handling active messages, or only progressing for NoHandler) until
// *stop != 0; idle polls back off to short sleeps. It takes progress from a holder that parked
// without waiting for GPUCOMM_MSG_STEAL_US (it is the PE's standing matcher) and keeps it.
template <class Handler>
__global__ void am_service_kernel(CommHandle comm, Handler handler, const uint32_t* stop) {
  const coop::Block c;
  dev::DeviceBackend b(comm.dev, comm.state);
  for (uint32_t i = 1;; ++i) {
    if (b.bcast(c, coop::thread_rank(c) == 0 && mem::load<mem::kSystem>(stop, mem::acquire) != 0)) break;
    bool busy = false;
    if constexpr (std::is_same_v<Handler, NoHandler>) {
      busy = proto::serve(b, c, comm.state);
    } else {
      busy = am_poll_steal(c, comm, handler, static_cast<int>(proto::kAmTakeMax), true) != 0;
    }
    if (busy) i = 1;
    b.pause(i > 128 ? 128 : i);
  }
}

}  // namespace detail

// A kernel launched for the first time while a service block runs, and that waits on the service
// block, never starts under lazy loading (the service block waits for its stop word, the load for
// the service block; gpucomm/base/load_kernels.hpp). So load every kernel that will wait on a
// service block before launching it (load_kernels), and load the service block (load_am_service)
// before any kernel that waits on it runs.
using gpucomm::load_kernels;
template <class Handler>
inline cudaError_t load_am_service() {
  return load_kernels(detail::am_service_kernel<Handler>);
}
inline cudaError_t load_progress_service() {
  return load_am_service<detail::NoHandler>();
}

// Launches one block of `threads` on `stream` that handles active messages with `handler` (and
// progresses the PE) until *stop (device or host-mapped memory) becomes non-zero. It must be
// resident beside the kernels that wait on it (leave it an SM), and those kernels must be loaded
// before it starts (load_kernels above); it is the only block messaging adds to the callers' own.
template <class Handler>
inline cudaError_t launch_am_service(const CommHandle& comm, const Handler& handler, const uint32_t* stop,
                                     cudaStream_t stream, int threads = 128) {
  detail::am_service_kernel<Handler><<<1, threads, 0, stream>>>(comm, handler, stop);
  return cudaGetLastError();
}

// A block that only progresses the PE until *stop != 0 (the communication CTAs of Klenk's software
// NIC on the GPU): the callers' waits then find their requests completed by it.
inline cudaError_t launch_progress_service(const CommHandle& comm, const uint32_t* stop, cudaStream_t stream,
                                           int threads = 128) {
  return launch_am_service(comm, detail::NoHandler{}, stop, stream, threads);
}

}  // namespace gpucomm::msg
