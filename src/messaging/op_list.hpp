#pragma once
// A list of messaging operations run by one group with the protocol, written once for both
// backends: a GPU PE's host-called operations run it in one block (gpu_ops.cu), a host-memory
// PE's groups on the host. Sends and receives are all started first; with `wait`, the list then
// waits for every one, so a PE's group never blocks on one operation before it posted the others.
#include <cstdint>

#include "gpucomm/messaging/protocol_complete.hpp"

namespace gpucomm::msg::detail {

inline constexpr int kMaxLaunchOps = 64;  // operations of one list (a group)

enum class OpKind : uint32_t { send, recv, wait, test, cancel, progress, iprobe, improbe, mrecv };

struct Op {
  OpKind kind;
  int32_t ctx;
  int32_t pe;    // send: destination PE
  int32_t rank;  // send: destination rank; recv/probes: source (or kAnySource)
  int32_t tag;
  int32_t src;             // send: this PE's rank in the communicator
  uint32_t request;        // wait/test/cancel: the request; mrecv: the message
  uint32_t request_stamp;  // wait/test/cancel: the request's stamp
  uint32_t active;         // send: kWireActive for an active message (its tag is the handler id)
  uint32_t mode;           // the communicator's Mode
  uint32_t reserved;
  void* buf;
  uint64_t bytes;
  uint64_t* event;  // completion counter, or null
  Status* status;   // where the operation's status goes, or null
};

struct OpList {
  int32_t n;
  uint32_t wait;  // 1: wait for every request the list started (or names) before returning
  // Results, or null: per operation, the request started (send, recv, mrecv without wait: its id |
  // stamp << 32), 1/0 for test and iprobe, the message + 1 for improbe (0: none).
  uint64_t* out;
  Op ops[kMaxLaunchOps];
};

template <class B, class C>
GPUCOMM_MSG_OUTLINE void run_ops(const B& b, C c, const StateView& s, const OpList& list) {
  Request reqs[kMaxLaunchOps];
  auto result = [&](int i, uint64_t v) {
    if (b.leader(c) && list.out) list.out[i] = v;
  };
  auto status = [&](int i, const Status& st) {
    if (b.leader(c) && list.ops[i].status) *list.ops[i].status = st;
  };
  for (int i = 0; i < list.n; ++i) {
    const Op& op = list.ops[i];
    reqs[i] = Request{};
    switch (op.kind) {
      case OpKind::send: {
        const proto::SendArgs a{op.buf, op.bytes, op.pe, op.rank, op.tag, op.ctx, op.src, op.active, op.event, op.mode};
        const proto::Started r =
            op.pe == kProcNull ? proto::Started{Request::kProcNull, 0, 0} : proto::send_start(b, c, s, a, false);
        if (r.error && b.leader(c)) proto::request_table_full(b, s, DiagOp::isend, op.ctx);
        reqs[i] = Request{r.id, r.stamp};
        break;
      }
      case OpKind::recv: {
        const proto::Started r =
            proto::recv_start(b, c, s, proto::RecvArgs{op.buf, op.bytes, op.rank, op.tag, op.ctx, op.mode, op.event});
        if (r.error && b.leader(c)) proto::request_table_full(b, s, DiagOp::irecv, op.ctx);
        reqs[i] = Request{r.id, r.stamp};
        break;
      }
      case OpKind::mrecv: {
        const proto::Started r = proto::mrecv_start(b, c, s, op.ctx, op.mode, op.request, op.buf, op.bytes, op.event);
        if (r.error && b.leader(c)) proto::request_table_full(b, s, DiagOp::mrecv, op.ctx);
        reqs[i] = Request{r.id, r.stamp};
        break;
      }
      case OpKind::wait:
        reqs[i] = Request{op.request, op.request_stamp};
        break;
      case OpKind::test: {
        Request r{op.request, op.request_stamp};
        Status st{};
        const bool done = proto::test(b, c, s, r, st);
        result(i, done ? 1u : 0u);
        if (done) status(i, st);
        break;
      }
      case OpKind::cancel:
        proto::cancel(b, c, s, Request{op.request, op.request_stamp});
        break;
      case OpKind::progress:
        proto::progress(b, c, s);
        break;
      case OpKind::iprobe:
      case OpKind::improbe: {
        Status st{};
        uint32_t m = 0;
        const bool take = op.kind == OpKind::improbe;
        const DiagOp dop = take ? DiagOp::mprobe : DiagOp::probe;
        const bool found = proto::probe_any(b, c, s, op.ctx, op.mode, op.rank, op.tag, take, false, st, &m, dop);
        result(i, take ? (found ? m : 0u) : (found ? 1u : 0u));
        if (found) status(i, st);
        break;
      }
    }
  }
  const auto started = [&](OpKind k) { return k == OpKind::send || k == OpKind::recv || k == OpKind::mrecv; };
  if (list.wait) {
    for (int i = 0; i < list.n; ++i) {
      if (!started(list.ops[i].kind) && list.ops[i].kind != OpKind::wait) continue;
      status(i, proto::wait(b, c, s, reqs[i]));
    }
  } else {
    for (int i = 0; i < list.n; ++i)
      if (started(list.ops[i].kind)) result(i, reqs[i].id | (static_cast<uint64_t>(reqs[i].stamp) << 32));
  }
  b.sync(c);
}

}  // namespace gpucomm::msg::detail
