// Atomics on host-memory heaps as a request/reply protocol over UCP active messages: the origin
// sends {token, offset, op, width, operand, compare}; the target performs the operation with a
// CPU atomic on its heap word while it progresses its worker, and replies {token, old value}.
//
// Why not ucp_atomic_op_nbx: where UCX emulates atomics in software (TCP, shared memory), UCX
// 1.22 offers no protocol for fetching atomics on endpoints with error handling
// (UCP_ERR_HANDLING_MODE_PEER), and without error handling a peer that dies makes UCX abort the
// survivors. Every atomic on a host heap takes this path, so all of them are CPU atomics of the
// target and atomic with respect to each other and to the target's own std::atomic_ref use.
#include <atomic>
#include <cstring>

#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/core/log.hpp"
#include "remote.hpp"
#include "ucx_status.hpp"

namespace gpucomm::transport::ucx {

namespace {
constexpr unsigned kAtomicRequest = 0x6763;  // active-message ids of this worker
constexpr unsigned kAtomicReply = 0x6764;

struct AtomicRequest {
  uint64_t token;  // origin's op: index << 32 | generation
  uint64_t offset;
  uint64_t operand;
  uint64_t compare;
  uint32_t op;
  uint32_t width;
};

struct AtomicReply {
  uint64_t token;
  uint64_t old;
  uint32_t status;  // 0, or 1 when the target refused the request (out of its heap)
  uint32_t pad;
};

ucs_status_t on_atomic_request(void* arg, const void* header, size_t header_length, void*, size_t,
                               const ucp_am_recv_param_t* param) {
  static_cast<UcxRemote*>(arg)->serve_atomic(header, header_length, param);
  return UCS_OK;
}

ucs_status_t on_atomic_reply(void* arg, const void* header, size_t header_length, void*, size_t,
                             const ucp_am_recv_param_t*) {
  static_cast<UcxRemote*>(arg)->take_atomic_reply(header, header_length);
  return UCS_OK;
}

// Sends a header-only active message; the header is copied, the request released at once (a
// failure reaches the endpoint's error handler).
ucs_status_t send_header(ucp_ep_h ep, unsigned id, const void* header, size_t bytes, uint32_t flags) {
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  prm.flags = flags | UCP_AM_SEND_FLAG_COPY_HEADER;
  ucs_status_ptr_t sp = ucp_am_send_nbx(ep, id, header, bytes, nullptr, 0, &prm);
  if (UCS_PTR_IS_ERR(sp)) return UCS_PTR_STATUS(sp);
  if (sp) ucp_request_free(sp);
  return UCS_OK;
}
}  // namespace

void UcxRemote::register_atomic_handlers() {
  for (auto [id, cb] : {std::pair{kAtomicRequest, &on_atomic_request}, std::pair{kAtomicReply, &on_atomic_reply}}) {
    ucp_am_handler_param_t hp{};
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.id = id;
    hp.cb = cb;
    hp.arg = this;
    check(ucp_worker_set_am_recv_handler(worker_->get(), &hp), Errc::unsupported, "ucp_worker_set_am_recv_handler",
          "ucx transport open");
  }
}

void UcxRemote::send_atomic(Op* op, Peer& p, uint64_t offset, AtomicOp aop, uint64_t operand, uint64_t compare) {
  AtomicRequest rq{};
  rq.token = static_cast<uint64_t>(op->index) << 32 | op->generation;
  rq.offset = offset;
  rq.operand = operand;
  rq.compare = compare;
  rq.op = static_cast<uint32_t>(aop);
  rq.width = op->width;
  ucs_status_t s = send_header(p.ep, kAtomicRequest, &rq, sizeof rq, UCP_AM_SEND_FLAG_REPLY);
  if (s != UCS_OK) {
    pool_.release(op);
    raise_send_error(p, "ucx atomic", s);
  }
  op->local_pending = true;  // until the reply arrives
  ++in_flight_;
  ++p.in_flight[static_cast<int>(OpKind::atomic)];
}

void UcxRemote::serve_atomic(const void* header, size_t bytes, const ucp_am_recv_param_t* param) {
  if (bytes != sizeof(AtomicRequest) || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) return;
  AtomicRequest rq;
  std::memcpy(&rq, header, sizeof rq);
  AtomicReply rp{};
  rp.token = rq.token;
  const bool ok = (rq.width == 4 || rq.width == 8) && rq.op <= static_cast<uint32_t>(AtomicOp::last) &&
                  rq.offset % rq.width == 0 && rq.offset < heap_bytes_ && rq.width <= heap_bytes_ - rq.offset;
  if (ok) {
    char* word = heap_base_ + rq.offset;
    const auto op = static_cast<AtomicOp>(rq.op);
    rp.old = mem::host_apply_atomic(word, rq.width, op, rq.operand, rq.compare);
  } else {
    rp.status = 1;
  }
  // A reply that cannot be sent means the origin is gone; it has nothing left to tell.
  send_header(param->reply_ep, kAtomicReply, &rp, sizeof rp, 0);
}

void UcxRemote::take_atomic_reply(const void* header, size_t bytes) {
  if (bytes != sizeof(AtomicReply)) return;
  AtomicReply rp;
  std::memcpy(&rp, header, sizeof rp);
  Op* op = pool_.find(rp.token >> 32);
  // A reply for an op given up on (its peer failed) finds the record reused or idle.
  if (!op || op->generation != static_cast<uint32_t>(rp.token) || op->kind != OpKind::atomic || !op->local_pending)
    return;
  Peer& p = peers_[static_cast<size_t>(op->pe)];
  if (p.failed) return;  // counted as lost already
  op->local_pending = false;
  --in_flight_;
  --p.in_flight[static_cast<int>(OpKind::atomic)];
  if (rp.status != 0) {
    fail_peer(p, "it refused an atomic as outside its heap", 1);
    pool_.release(op);
    return;
  }
  std::memcpy(op->reply, &rp.old, 8);
  op->width = 8;  // the target already zero-extended a 4-byte old value
  finish(op, UCS_OK);
}

}  // namespace gpucomm::transport::ucx
