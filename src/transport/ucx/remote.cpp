// Opening the transport (address and key exchange, endpoints) and issuing operations.
#include "remote.hpp"

#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>

#include "exchange.hpp"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/format.hpp"
#include "gpucomm/core/log.hpp"
#include "polling.hpp"
#include "ucx_status.hpp"

namespace gpucomm::transport::ucx {

namespace {
constexpr const char* kOpen = "ucx transport open";

// Endpoints without UCX error handling. With UCP_ERR_HANDLING_MODE_PEER, UCX 1.22 (protocols v2)
// has no protocol for fetching atomics emulated in software (TCP, shared memory: "cannot find
// remote protocol ... amo_fetch"), so a dead peer is detected through the bootstrap's liveness
// (Bootstrap::failed) and GPUCOMM_TIMEOUT instead; an endpoint error, where UCX reports one, still
// fails the peer through on_ep_error. docs/UCX.md has the details.
constexpr ucp_err_handling_mode_t kEndpointErrorMode = UCP_ERR_HANDLING_MODE_PEER;

void on_send(void* request, ucs_status_t status, void* user_data) {
  Op* op = static_cast<Op*>(user_data);
  op->owner->on_request(op, status);
  ucp_request_free(request);
}

void on_ep_error(void* arg, ucp_ep_h, ucs_status_t status) {
  Peer* p = static_cast<Peer*>(arg);
  p->owner->on_endpoint_error(*p, status);
}

void check_context(const RemoteContext& ctx) {
  if (ctx.size != ctx.bootstrap->size() || ctx.rank != ctx.bootstrap->rank()) {
    raise_arg(kOpen, "ctx.rank/ctx.size",
              "rank " + std::to_string(ctx.rank) + " of " + std::to_string(ctx.size) +
                  " disagrees with the bootstrap's " + std::to_string(ctx.bootstrap->rank()) + " of " +
                  std::to_string(ctx.bootstrap->size()));
  }
  if (ctx.remote_pes.size() != static_cast<size_t>(ctx.size)) {
    raise_arg(kOpen, "ctx.remote_pes",
              "lists " + std::to_string(ctx.remote_pes.size()) + " PEs, the job has " + std::to_string(ctx.size));
  }
  if (ctx.heap_bytes > 0 && !ctx.heap_base) raise_arg(kOpen, "ctx.heap_base", "null with heap_bytes > 0");
}

struct UcxAtomic {
  ucp_atomic_op_t op;
  bool fetches;  // UCX needs a reply buffer
};

// By AtomicOp.
constexpr UcxAtomic kUcxAtomics[] = {
    {UCP_ATOMIC_OP_ADD, true},    // fetch: adds 0
    {UCP_ATOMIC_OP_SWAP, true},   // set: the old value is dropped
    {UCP_ATOMIC_OP_ADD, false},   // fetch_add
    {UCP_ATOMIC_OP_SWAP, true},   // swap
    {UCP_ATOMIC_OP_CSWAP, true},  // compare_swap
    {UCP_ATOMIC_OP_AND, false},   // fetch_and
    {UCP_ATOMIC_OP_OR, false},    // fetch_or
    {UCP_ATOMIC_OP_XOR, false},   // fetch_xor
};
static_assert(std::size(kUcxAtomics) == static_cast<size_t>(AtomicOp::last) + 1);

void store_word(unsigned char* to, uint64_t v, unsigned width) {
  if (width == 4) {
    auto w = static_cast<uint32_t>(v);
    std::memcpy(to, &w, 4);
  } else {
    std::memcpy(to, &v, 8);
  }
}
}  // namespace

UcxRemote::UcxRemote(const RemoteContext& ctx)
    : bootstrap_(ctx.bootstrap),
      rank_(ctx.rank),
      size_(ctx.size),
      on_device_(ctx.heap_on_device),
      heap_base_(static_cast<char*>(ctx.heap_base)),
      heap_bytes_(ctx.heap_bytes),
      pool_(this) {
  if (!bootstrap_) raise_arg(kOpen, "ctx.bootstrap", "null: the transport exchanges its addresses through it");
  // Every PE takes part in the all-gather, also one whose set-up failed: it publishes the
  // error, so that nobody waits for it.
  PeerInfo mine;
  std::exception_ptr local_error;
  try {
    check_context(ctx);
    size_t reached = 0;
    for (bool r : ctx.remote_pes) reached += r ? 1 : 0;
    worker_ = std::make_unique<Worker>(reached);
    register_atomic_handlers();
    heap_ = std::make_unique<HeapRegistration>(worker_->context(), ctx.heap_base, ctx.heap_bytes, ctx.heap_on_device);
    mine.address = worker_->address();
    mine.rkey = heap_->packed_rkey();
    mine.heap_base = reinterpret_cast<uintptr_t>(ctx.heap_base);
    mine.heap_bytes = ctx.heap_bytes;
    mine.heap_on_device = ctx.heap_on_device;
    mine.reaches = ctx.remote_pes;
  } catch (const std::exception& e) {
    mine = PeerInfo{};
    mine.error = e.what();
    local_error = std::current_exception();
  }
  std::vector<std::string> all = bootstrap_->allgather(pack_info(mine));
  if (local_error) {
    heap_.reset();
    worker_.reset();
    std::rethrow_exception(local_error);
  }
  try {
    connect(all, ctx.remote_pes);
    handshake();
  } catch (...) {
    closing_ = true;
    for (Peer& p : peers_) p.rkey.reset();
    close_endpoints(false);
    heap_.reset();
    worker_.reset();
    throw;
  }
}

void UcxRemote::connect(const std::vector<std::string>& infos, const std::vector<bool>& remote_pes) {
  peers_.resize(static_cast<size_t>(size_));
  std::vector<PeerInfo> info;
  info.reserve(infos.size());
  for (int r = 0; r < size_; ++r) {
    info.push_back(unpack_info(infos[static_cast<size_t>(r)], r, size_));
    if (!info.back().error.empty())
      raise(Errc::unsupported, who(kOpen), "PE " + std::to_string(r) + " could not open it: " + info.back().error);
  }
  flush_queue_.reserve(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    Peer& p = peers_[static_cast<size_t>(r)];
    p.owner = this;
    p.pe = r;
    if (!remote_pes[static_cast<size_t>(r)]) continue;
    const PeerInfo& in = info[static_cast<size_t>(r)];
    ucp_ep_params_t ep{};
    ep.field_mask =
        UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(in.address.data());
    ep.err_mode = kEndpointErrorMode;
    ep.err_handler.cb = &on_ep_error;
    ep.err_handler.arg = &p;
    check(ucp_ep_create(worker_->get(), &ep, &p.ep), Errc::unsupported, "ucp_ep_create",
          who(kOpen, r) + ": connecting");
    p.reachable = true;
    p.base = in.heap_base;
    p.bytes = in.heap_bytes;
    p.device_heap = in.heap_on_device;
    if (!in.rkey.empty()) p.rkey = RemoteKey(p.ep, in.rkey, r);
  }
  GPUCOMM_LOG(debug, "ucx: transport open, " << library_description());
}

// Completes the wire-up of every endpoint, both ways, before the first operation: a read of one
// byte of each peer's heap (its reply travels back over the peer's side of the connection), then
// a barrier during which every PE keeps progressing for the others. A PE that cannot be reached
// fails the open (within GPUCOMM_TIMEOUT) instead of the first operation, and no operation is
// queued behind a wire-up (UCX 1.22 cannot re-route some requests queued that way: its
// software-emulated fetching atomics abort the process).
void UcxRemote::handshake() {
  std::vector<unsigned char> scratch(static_cast<size_t>(size_));
  for (Peer& p : peers_) {
    if (!p.reachable) continue;
    if (p.bytes > 0) {
      get(&scratch[static_cast<size_t>(p.pe)], p.pe, 0, 1, Completion{});
    } else {
      issue_flush(p);
    }
  }
  wait_for([this] { return in_flight_ == 0; }, "ucx transport open (connecting)");
  progressing_barrier([this] { return worker_->progress(); }, [this] { bootstrap_->barrier(); }, true);
  completed_ = 0;
}

std::string UcxRemote::who(const char* call, int pe) const {
  std::string s = "rank " + std::to_string(rank_) + " " + call;
  if (pe >= 0) s += " (PE " + std::to_string(pe) + ")";
  return s;
}

Peer& UcxRemote::peer(int pe, const char* call) {
  if (pe < 0 || pe >= size_)
    raise_arg(who(call), "pe", "PE " + std::to_string(pe) + " is not in [0, " + std::to_string(size_) + ")");
  Peer& p = peers_[static_cast<size_t>(pe)];
  if (!p.reachable) {
    raise_arg(who(call), "pe",
              "PE " + std::to_string(pe) + " is not among the PEs this transport reaches (RemoteContext::remote_pes)");
  }
  if (p.failed) raise_failed(p, call);
  return p;
}

Peer& UcxRemote::target(int pe, uint64_t offset, uint64_t bytes, const char* call, const char* arg) {
  Peer& p = peer(pe, call);
  if (offset > p.bytes || bytes > p.bytes - offset) {
    raise_arg(who(call, pe), arg,
              "[" + hex(offset) + ", " + hex(offset + bytes) + ") is outside PE " + std::to_string(pe) + "'s heap of " +
                  std::to_string(p.bytes) + " bytes");
  }
  return p;
}

Op* UcxRemote::start(OpKind kind, Peer& p, Completion c) {
  Op* op = pool_.acquire();
  op->kind = kind;
  op->pe = p.pe;
  op->done = c.done;
  unfenced_ = true;
  p.touched = true;
  return op;
}

// fence(pe) promised that what follows is performed at pe after what came before. UCX's fence
// covers RMA and UCX atomics; active-message atomics are ordered by waiting, before the first
// operation after the fence, until everything earlier to pe is complete at the target.
void UcxRemote::order(Peer& p, bool active_message, const char* call) {
  if (!p.fence_pending) return;
  const bool am_before = !p.device_heap && p.in_flight[static_cast<int>(OpKind::atomic)] > 0;
  if (active_message || am_before) {
    if (p.issued > p.flush_issued) issue_flush(p);
    const uint64_t upto = p.issued;
    wait_for(
        [&] {
          return p.failed || (p.flushed >= upto && p.in_flight[static_cast<int>(OpKind::get)] == 0 &&
                              p.in_flight[static_cast<int>(OpKind::atomic)] == 0);
        },
        call);
    if (p.failed) raise_failed(p, call);
  }
  p.fence_pending = false;  // kept while the wait failed: a retried operation waits again
}

ucp_request_param_t UcxRemote::request_param(Op* op) const {
  ucp_request_param_t prm{};
  prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  prm.cb.send = &on_send;
  prm.user_data = op;
  return prm;
}

// Takes the result of a UCX call that started `op`: in flight (a request), done at once (NULL),
// or failed, which releases the op and raises.
void UcxRemote::launch(Op* op, Peer& p, ucs_status_ptr_t sp, const char* call) {
  if (UCS_PTR_IS_ERR(sp)) {
    pool_.release(op);
    raise_send_error(p, call, UCS_PTR_STATUS(sp));
  }
  if (sp == nullptr) return;
  op->local_pending = true;
  ++in_flight_;
  ++p.in_flight[static_cast<int>(op->kind)];
}

void UcxRemote::raise_send_error(Peer& p, const char* call, ucs_status_t s) {
  Errc code = errc_for(s);
  if (code == Errc::peer_failure) {
    fail_peer(p, std::string(call) + " failed: UCX reports " + status_text(s), 0);
    raise_failed(p, call);  // names the job's first failure when there is one
  }
  raise(code, who(call, p.pe), "UCX reports " + status_text(s));
}

void UcxRemote::put(int pe, uint64_t dst_offset, const void* src, size_t bytes, Completion c) {
  Peer& p = target(pe, dst_offset, bytes, "ucx put", "dst_offset");
  if (bytes == 0) return complete_now(c.done);
  if (!src) raise_arg(who("ucx put", pe), "src", "null with bytes > 0");
  order(p, false, "ucx put");
  Op* op = start(OpKind::put, p, c);
  const void* from = src;
  if (bytes <= kInlineBytes && !on_device_) {
    std::memcpy(op->data, src, bytes);
    from = op->data;
  }
  ucp_request_param_t prm = request_param(op);
  launch(op, p, ucp_put_nbx(p.ep, from, bytes, p.base + dst_offset, p.rkey.get(), &prm), "ucx put");
  op->seq = ++p.issued;
  ++pending_remote_;
  if (c.done) {
    op->remote_pending = true;
    p.waiting.push(op);
    queue_flush(p);
  }
  if (!op->local_pending) finish(op, UCS_OK);
}

void UcxRemote::get(void* dst, int pe, uint64_t src_offset, size_t bytes, Completion c) {
  Peer& p = target(pe, src_offset, bytes, "ucx get", "src_offset");
  if (bytes == 0) return complete_now(c.done);
  if (!dst) raise_arg(who("ucx get", pe), "dst", "null with bytes > 0");
  order(p, false, "ucx get");
  Op* op = start(OpKind::get, p, c);
  ucp_request_param_t prm = request_param(op);
  launch(op, p, ucp_get_nbx(p.ep, dst, bytes, p.base + src_offset, p.rkey.get(), &prm), "ucx get");
  if (!op->local_pending) finish(op, UCS_OK);
}

void UcxRemote::atomic(int pe, uint64_t offset, AtomicOp aop, unsigned width, uint64_t operand, uint64_t compare,
                       uint64_t* result, Completion c) {
  constexpr const char* call = "ucx atomic";
  if (width != 4 && width != 8)
    raise_arg(who(call, pe), "width", std::to_string(width) + " bytes; atomics work on 4- and 8-byte words");
  if (aop > AtomicOp::last)
    raise_arg(who(call, pe), "op", "AtomicOp " + std::to_string(static_cast<unsigned>(aop)) + " does not exist");
  Peer& p = target(pe, offset, width, call, "offset");
  if (offset % width != 0 || (p.base + offset) % width != 0)
    raise_arg(who(call, pe), "offset", hex(offset) + " is not aligned to the " + std::to_string(width) + "-byte word");
  order(p, !p.device_heap, call);
  Op* op = start(OpKind::atomic, p, c);
  op->width = static_cast<uint8_t>(width);
  op->result = result;
  if (p.device_heap) {
    atomic_native(op, p, offset, aop, operand, compare);
  } else {
    send_atomic(op, p, offset, aop, operand, compare);
  }
}

// UCX's own atomics, for heaps in device memory (the target's CPU cannot operate on them; UCX
// uses the network adapter's atomics). The reply buffer receives the old value; operations
// without a result or completion flag are posted and complete with a flush, like puts.
void UcxRemote::atomic_native(Op* op, Peer& p, uint64_t offset, AtomicOp aop, uint64_t operand, uint64_t compare) {
  const UcxAtomic u = kUcxAtomics[static_cast<size_t>(aop)];
  const bool fetching = u.fetches || op->result || op->done;
  if (!fetching) op->kind = OpKind::put;
  const unsigned width = op->width;
  if (aop == AtomicOp::compare_swap) {
    store_word(op->operand, compare, width);  // compared with the target word
    store_word(op->reply, operand, width);    // stored when equal; replaced by the old value
  } else {
    store_word(op->operand, aop == AtomicOp::fetch ? 0 : operand, width);
  }
  ucp_request_param_t prm = request_param(op);
  prm.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  prm.datatype = ucp_dt_make_contig(width);
  if (fetching) {
    prm.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    prm.reply_buffer = op->reply;
  }
  launch(op, p, ucp_atomic_op_nbx(p.ep, u.op, op->operand, 1, p.base + offset, p.rkey.get(), &prm), "ucx atomic");
  if (!fetching) {
    op->seq = ++p.issued;
    ++pending_remote_;
  }
  if (!op->local_pending) finish(op, UCS_OK);
}

void UcxRemote::fence(int pe) {
  Peer& p = peer(pe, "ucx fence");
  if (!p.touched) return;
  p.touched = false;
  p.fence_pending = true;
  if (!unfenced_) return;
  check(ucp_worker_fence(worker_->get()), Errc::internal, "ucp_worker_fence", who("ucx fence", pe));
  unfenced_ = false;
}

void UcxRemote::flush() {
  for (Peer& p : peers_)
    if (p.reachable && !p.failed && p.issued > p.flush_issued) issue_flush(p);
  for (int pe : flush_queue_) peers_[static_cast<size_t>(pe)].flush_queued = false;
  flush_queue_.clear();
  raise_lost("ucx flush");
  wait_for([this] { return in_flight_ == 0 && pending_remote_ == 0; }, "ucx flush");
}

size_t UcxRemote::progress() {
  worker_->progress();
  if (!flush_queue_.empty()) {
    for (int pe : flush_queue_) {
      Peer& p = peers_[static_cast<size_t>(pe)];
      p.flush_queued = false;
      if (!p.failed && p.issued > p.flush_issued) issue_flush(p);
    }
    flush_queue_.clear();
  }
  if (new_failure_) {
    new_failure_ = false;
    for (Peer& p : peers_) {
      if (p.failed && !p.reported && p.lost > 0) {
        p.reported = true;
        raise_failed(p, "ucx progress");
      }
    }
  }
  if ((++progress_calls_ & 255) == 0 && (in_flight_ > 0 || pending_remote_ > 0) && !job_failure_reported_ &&
      bootstrap_->failed()) {
    job_failure_reported_ = true;
    raise(Errc::peer_failure, who("ucx progress"),
          "the job failed (" + bootstrap_->failure() + ") with operations outstanding: " + describe_outstanding());
  }
  uint64_t n = completed_;
  completed_ = 0;
  return static_cast<size_t>(n);
}

}  // namespace gpucomm::transport::ucx
