// Comm: argument checks and the host-called point-to-point operations (host-memory PEs run the
// protocol here with the host backend).
#include <atomic>
#include <cstring>

#include "core/nvtx_range.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/messenger.hpp"
#include "gpucomm/messaging/protocol_am.hpp"
#include "messenger_impl.hpp"

namespace gpucomm::msg {

namespace {

void check_peer(const char* op, const char* arg, int r, int size, bool wildcard) {
  if (r == kProcNull || (wildcard && r == kAnySource)) return;
  if (r < 0 || r >= size) {
    raise_arg(op, arg,
              std::to_string(r) + " is outside the communicator's ranks 0.." + std::to_string(size - 1) +
                  (wildcard ? " (or ANY_SOURCE, PROC_NULL)" : " (or PROC_NULL)"));
  }
}

void check_tag(const char* op, int tag, bool wildcard) {
  if (wildcard && tag == kAnyTag) return;
  if (tag < 0 || tag > kTagUpperBound) {
    raise_arg(
        op, "tag",
        std::to_string(tag) + " is outside 0.." + std::to_string(kTagUpperBound) + (wildcard ? " (or ANY_TAG)" : ""));
  }
}

void check_buffer(const char* op, const void* buf, size_t bytes) {
  if (bytes != 0 && buf == nullptr) raise_arg(op, "buf", "is null with a count of " + std::to_string(bytes) + " bytes");
  if (bytes > (uint64_t(1) << 48)) raise_arg(op, "bytes", std::to_string(bytes) + " is beyond 2^48");
}

// A wildcard the communicator's mode asserted away is a bad argument, never a silent wrong match.
void check_wildcards(const char* op, Mode mode, int source, int tag) {
  if (source == kAnySource && (mode == Mode::no_any_source || mode == Mode::unordered)) {
    raise_arg(op, "source",
              std::string("ANY_SOURCE on a communicator of mode ") + mode_name(mode) +
                  ", which asserted that receives name their source");
  }
  if (tag == kAnyTag && mode == Mode::unordered) {
    raise_arg(op, "tag", "ANY_TAG on a communicator of mode unordered, which matches exact envelopes only");
  }
}

// The arguments of a send (`dest`) and of a receive (`source`, wildcards as the mode allows).
void check_send_args(const char* op, int size, int dest, int tag, const void* buf, size_t bytes) {
  check_peer(op, "dest", dest, size, false);
  check_tag(op, tag, false);
  check_buffer(op, buf, bytes);
}
void check_recv_args(const char* op, int size, Mode mode, int source, int tag, const void* buf, size_t bytes) {
  check_peer(op, "source", source, size, true);
  check_tag(op, tag, true);
  check_buffer(op, buf, bytes);
  check_wildcards(op, mode, source, tag);
}

uint64_t* counter_of(const Event* e) {
  return e ? e->counter : nullptr;
}

}  // namespace

Comm::State& Comm::st() const {
  if (!state_) raise_arg("msg::Comm", "comm", "is not a communicator (default-constructed or moved from)");
  return *state_;
}

int Comm::rank() const {
  return st().team.rank();
}
int Comm::size() const {
  return st().team.size();
}
int Comm::context_id() const {
  return st().ctx;
}
Mode Comm::mode() const {
  return st().mode;
}
bool Comm::errors_return() const {
  return (st().flags & kCommErrorsReturn) != 0;
}
const Team& Comm::team() const {
  return st().team;
}
Messenger& Comm::messenger() const {
  return *st().m;
}

namespace {

[[noreturn]] void table_full(const Messenger::Impl& m, DiagOp op) {
  Diag d{};
  d.kind = DiagKind::resource;
  d.op = op;
  d.arg = static_cast<uint32_t>(DiagArg::request);
  detail::raise_diag(d, m.cfg);
}

detail::Op send_op(const Comm::State& s, const void* buf, size_t bytes, int dest, int tag, uint64_t* event) {
  detail::Op op{};
  op.kind = detail::OpKind::send;
  op.ctx = s.ctx;
  op.pe = dest == kProcNull ? kProcNull : s.team.world_rank(dest);
  op.rank = dest;
  op.tag = tag;
  op.src = s.team.rank();
  op.mode = static_cast<uint32_t>(s.mode);
  op.buf = const_cast<void*>(buf);
  op.bytes = bytes;
  op.event = event;
  return op;
}

detail::Op recv_op(const Comm::State& s, void* buf, size_t bytes, int source, int tag, uint64_t* event) {
  detail::Op op{};
  op.kind = detail::OpKind::recv;
  op.ctx = s.ctx;
  op.rank = source;
  op.tag = tag;
  op.mode = static_cast<uint32_t>(s.mode);
  op.buf = buf;
  op.bytes = bytes;
  op.event = event;
  return op;
}

// GPU PEs: one operation as a kernel on the Messenger's stream (waited for when `wait`); returns
// its result word and, when `st` is given, its status.
uint64_t run_one(Messenger::Impl& m, detail::Op op, bool wait, Status* st, const char* name) {
  detail::OpList l{};
  l.n = 1;
  l.wait = wait ? 1u : 0u;
  l.out = m.out_dev;
  l.ops[0] = op;
  l.ops[0].status = m.status_dev;
  m.out_host[0] = 0;
  m.run(l, nullptr, true, name);
  if (st) *st = m.status_host[0];
  return m.out_host[0];
}

void need_device_buffer(const Messenger::Impl& m, const void* buf, size_t bytes, const char* op) {
  if (bytes != 0 && !m.device_accessible(buf)) {
    raise_arg(op, "buf",
              "is not device-accessible: on GPU PEs the non-blocking and stream-ordered calls need device memory, "
              "the heap or mapped host memory (the blocking send and recv stage host memory)");
  }
}

// A send on a host-memory PE (the host backend): `blocking` waits for ring credits itself.
Request start_send_host(Comm::State& s, const void* buf, size_t bytes, int dest, int tag, const Event* event,
                        bool blocking, const char* op) {
  Messenger::Impl& m = s.m->impl();
  if (dest == kProcNull) {
    if (event) m.on_host(op, [&](detail::HostBackend& b) { return b.fadd(event->counter, 1, Ord::release); });
    return Request{Request::kProcNull, 0};
  }
  const proto::SendArgs a{buf,
                          bytes,
                          s.team.world_rank(dest),
                          dest,
                          tag,
                          s.ctx,
                          s.team.rank(),
                          0,
                          counter_of(event),
                          static_cast<uint32_t>(s.mode)};
  const proto::Started r =
      m.on_host(op, [&](detail::HostBackend& b) { return proto::send_start(b, coop::Thread{}, m.view, a, blocking); });
  if (r.error == static_cast<uint32_t>(DiagKind::timeout)) {
    raise(Errc::timeout, op,
          "rank " + std::to_string(m.rt.rank()) + " waited for ring credits at rank " + std::to_string(dest) +
              " (world PE " + std::to_string(a.pe) + "): its receiver drained nothing; timed out (GPUCOMM_TIMEOUT)");
  }
  if (r.error) table_full(m, DiagOp::isend);
  return Request{r.id, r.stamp};
}

}  // namespace

Request Comm::isend(const void* buf, size_t bytes, int dest, int tag, const Event* event) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::isend");
  State& s = st();
  const char* op = "msg::isend";
  check_send_args(op, s.team.size(), dest, tag, buf, bytes);
  Messenger::Impl& m = s.m->impl();
  if (m.gpu) {
    need_device_buffer(m, buf, bytes, op);
    if (dest == kProcNull) return Request{Request::kProcNull, 0};
    const uint64_t v = run_one(m, send_op(s, buf, bytes, dest, tag, counter_of(event)), false, nullptr, op);
    if (static_cast<uint32_t>(v) == 0) table_full(m, DiagOp::isend);
    return Request{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)};
  }
  return start_send_host(s, buf, bytes, dest, tag, event, false, op);
}

namespace {

// The host side of the active-message sends (host-memory PEs): checks, the credit (requests),
// the message. `poll` handles what arrives here while the send waits for a credit.
void am_send_host(Comm::State& s, int dest, uint32_t id, const void* payload, size_t bytes, uint32_t flags,
                  const Comm::AmHandler& poll, const char* op) {
  Messenger::Impl& m = s.m->impl();
  if (m.gpu) {
    raise(Errc::unsupported, op,
          "active messages of GPU PEs are sent and handled by kernels (gpucomm/messaging/am_device.cuh)");
  }
  check_send_args(op, s.team.size(), dest, 0, payload, bytes);
  if (id >= kMaxAmHandlers) raise_arg(op, "id", std::to_string(id) + " is not below " + std::to_string(kMaxAmHandlers));
  if (((std::atomic_ref<uint64_t>(m.view.ctl->am_valid).load(std::memory_order_acquire) >> id) & 1u) == 0)
    raise_arg(op, "id", std::to_string(id) + " was not registered (Messenger::register_am)");
  if (bytes > m.cfg.am_max)
    raise_arg(op, "bytes", std::to_string(bytes) + " exceeds am_max " + std::to_string(m.cfg.am_max));
  if (dest == kProcNull) return;
  const int pe = s.team.world_rank(dest);
  if ((flags & kAmReply) == 0) {
    const uint64_t start = detail::HostBackend::now_ns();
    for (uint32_t i = 1; !m.on_host(op,
                                    [&](detail::HostBackend& b) {
                                      return proto::am_take_credit(b, m.view, pe, (flags & kAmWantsReply) != 0);
                                    });
         ++i) {
      if (poll) {
        (void)s.m->am_poll(poll);
      } else {
        m.on_host(op, [&](detail::HostBackend& b) { return proto::progress(b, coop::Thread{}, m.view); });
      }
      detail::HostBackend::pause(i);
      if ((i & 63u) == 0 && m.host->timeout_ns() != 0 && detail::HostBackend::now_ns() - start > m.host->timeout_ns()) {
        raise(Errc::timeout, op,
              "no active-message credit at rank " + std::to_string(dest) + " for " +
                  std::to_string((detail::HostBackend::now_ns() - start) / 1000000) +
                  " ms: its handlers did not run (it must poll: Messenger::am_poll, or pass a handler to its own "
                  "sends)");
      }
    }
  }
  const proto::SendArgs a{payload, bytes,         pe,          dest,    static_cast<int32_t>(id | flags),
                          s.ctx,   s.team.rank(), kWireActive, nullptr, static_cast<uint32_t>(s.mode)};
  m.on_host(op, [&](detail::HostBackend& b) {
    const proto::Started r = proto::send_start(b, coop::Thread{}, m.view, a, false);
    if (r.error) table_full(m, DiagOp::am_send);
    Request q{r.id, r.stamp};
    return proto::wait(b, coop::Thread{}, m.view, q, DiagOp::am_send);
  });
}

}  // namespace

void Comm::am_send(int dest, uint32_t id, const void* payload, size_t bytes, const AmHandler& poll) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::am_send");
  am_send_host(st(), dest, id, payload, bytes, 0, poll, "msg::am_send");
}

void Comm::am_request(int dest, uint32_t id, const void* payload, size_t bytes, const AmHandler& poll) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::am_request");
  am_send_host(st(), dest, id, payload, bytes, kAmWantsReply, poll, "msg::am_request");
}

void Comm::am_reply(const AmMessage& msg, uint32_t id, const void* payload, size_t bytes) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::am_reply");
  State& s = st();
  Messenger::Impl& m = s.m->impl();
  const char* op = "msg::am_reply";
  if ((msg.flags & kAmWantsReply) == 0)
    raise_arg(op, "msg", "the active message wants no reply (its sender used am_send, not am_request)");
  if (m.gpu || msg.entry >= proto::am_entries(m.cfg))
    raise_arg(op, "msg", "is not an active message of this PE's am_poll");
  AmEntry& e = proto::am_entry(m.view, msg.entry);
  if (e.replied) raise_arg(op, "msg", "was answered already (one am_reply per request)");
  e.replied = 1;
  am_send_host(s, msg.source, id, payload, bytes, kAmReply, {}, op);
}

void Comm::send(const void* buf, size_t bytes, int dest, int tag) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::send");
  State& s = st();
  Messenger::Impl& m = s.m->impl();
  if (m.gpu) {
    const char* op = "msg::send";
    check_send_args(op, s.team.size(), dest, tag, buf, bytes);
    if (dest == kProcNull) return;
    run_one(m, send_op(s, m.device_view(buf, bytes, true, op, "buf"), bytes, dest, tag, nullptr), true, nullptr, op);
    return;
  }
  check_send_args("msg::send", s.team.size(), dest, tag, buf, bytes);
  Request r = start_send_host(s, buf, bytes, dest, tag, nullptr, true, "msg::send");
  m.on_host("msg::send",
            [&](detail::HostBackend& b) { return proto::wait(b, coop::Thread{}, m.view, r, DiagOp::send); });
}

Request Comm::irecv(void* buf, size_t bytes, int source, int tag, const Event* event) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::irecv");
  State& s = st();
  const char* op = "msg::irecv";
  check_recv_args(op, s.team.size(), s.mode, source, tag, buf, bytes);
  Messenger::Impl& m = s.m->impl();
  if (m.gpu) {
    need_device_buffer(m, buf, bytes, op);
    if (source == kProcNull) return Request{Request::kProcNull, 0};
    const uint64_t v = run_one(m, recv_op(s, buf, bytes, source, tag, counter_of(event)), false, nullptr, op);
    if (static_cast<uint32_t>(v) == 0) table_full(m, DiagOp::irecv);
    return Request{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)};
  }
  const proto::RecvArgs a{buf, bytes, source, tag, s.ctx, static_cast<uint32_t>(s.mode), counter_of(event)};
  const proto::Started r =
      m.on_host(op, [&](detail::HostBackend& b) { return proto::recv_start(b, coop::Thread{}, m.view, a); });
  if (r.error) table_full(m, DiagOp::irecv);
  return Request{r.id, r.stamp};
}

Status Comm::sendrecv(const void* send_buf, size_t send_bytes, int dest, int send_tag, void* recv_buf,
                      size_t recv_bytes, int source, int recv_tag) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::sendrecv");
  State& s = st();
  Messenger& mm = *s.m;
  Messenger::Impl& m = mm.impl();
  const char* op = "msg::sendrecv";
  check_send_args(op, s.team.size(), dest, send_tag, send_buf, send_bytes);
  check_recv_args(op, s.team.size(), s.mode, source, recv_tag, recv_buf, recv_bytes);
  // GPU PEs: buffers in host memory are staged, as the blocking calls stage theirs (one each).
  const void* out = m.gpu ? m.device_view(send_buf, send_bytes, true, op, "send_buf", 0) : send_buf;
  void* in = m.gpu ? m.device_view(recv_buf, recv_bytes, false, op, "recv_buf", 1) : recv_buf;
  Request r = irecv(in, recv_bytes, source, recv_tag);
  Request w = isend(out, send_bytes, dest, send_tag);
  (void)mm.wait(w);
  const Status st = mm.wait(r);
  if (m.gpu) m.staged_out(recv_buf, in, st.bytes);
  return st;
}

namespace {

CommOptions options_of(const Comm::State& s) {
  CommOptions o;
  o.mode = s.mode;
  o.allow_overtaking = (s.flags & kCommAllowOvertaking) != 0;
  o.errors_return = (s.flags & kCommErrorsReturn) != 0;
  return o;
}

}  // namespace

Comm Comm::dup() const {
  const State& s = st();
  return s.m->create(s.team, options_of(s));
}

Comm Comm::split(int color, int key) const {
  const State& s = st();
  const Team part = s.m->runtime().split(s.team, color, key);  // collective over the team
  if (!part.valid()) return Comm{};
  return s.m->create(part, options_of(s));
}

Status Comm::recv(void* buf, size_t bytes, int source, int tag) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::recv");
  State& s = st();
  Messenger::Impl& m = s.m->impl();
  if (m.gpu) {
    const char* op = "msg::recv";
    check_recv_args(op, s.team.size(), s.mode, source, tag, buf, bytes);
    if (source == kProcNull) return proto::proc_null_status();
    void* dev = m.device_view(buf, bytes, false, op, "buf");
    Status result{};
    run_one(m, recv_op(s, dev, bytes, source, tag, nullptr), true, &result, op);
    m.staged_out(buf, dev, result.bytes);
    return result;
  }
  Request r = irecv(buf, bytes, source, tag);
  return m.on_host("msg::recv",
                   [&](detail::HostBackend& b) { return proto::wait(b, coop::Thread{}, m.view, r, DiagOp::recv); });
}

void Comm::send_on_stream(const void* buf, size_t bytes, int dest, int tag, Stream stream) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::send_on_stream");
  State& s = st();
  const char* op = "msg::send_on_stream";
  check_send_args(op, s.team.size(), dest, tag, buf, bytes);
  Messenger::Impl& m = s.m->impl();
  if (m.gpu) need_device_buffer(m, buf, bytes, op);
  detail::Op o = send_op(s, buf, bytes, dest, tag, nullptr);
  if (m.in_group) {
    m.group.push_back(o);
    return;
  }
  if (!m.gpu) return send(buf, bytes, dest, tag);
  detail::OpList l{};
  l.n = 1;
  l.wait = 1;
  l.ops[0] = o;
  m.run(l, stream, false, op);
}

void Comm::recv_on_stream(void* buf, size_t bytes, int source, int tag, Stream stream, Status* status) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::recv_on_stream");
  State& s = st();
  const char* op = "msg::recv_on_stream";
  check_recv_args(op, s.team.size(), s.mode, source, tag, buf, bytes);
  Messenger::Impl& m = s.m->impl();
  if (m.gpu) {
    need_device_buffer(m, buf, bytes, op);
    if (status) need_device_buffer(m, status, sizeof(Status), op);
  }
  detail::Op o = recv_op(s, buf, bytes, source, tag, nullptr);
  o.status = status;
  if (m.in_group) {
    m.group.push_back(o);
    return;
  }
  if (!m.gpu) {
    const Status st = recv(buf, bytes, source, tag);
    if (status) *status = st;
    return;
  }
  detail::OpList l{};
  l.n = 1;
  l.wait = 1;
  l.ops[0] = o;
  m.run(l, stream, false, op);
}

bool Comm::improbe(int source, int tag, Message* msg, Status* status) {
  State& s = st();
  const char* op = msg ? "msg::improbe" : "msg::iprobe";
  check_peer(op, "source", source, s.team.size(), true);
  check_tag(op, tag, true);
  check_wildcards(op, s.mode, source, tag);
  if (source == kProcNull) {
    if (status) *status = proto::proc_null_status();
    if (msg) *msg = Message{Message::kProcNull};
    return true;
  }
  Messenger::Impl& m = s.m->impl();
  Status st{};
  uint32_t id = 0;
  bool found = false;
  if (m.gpu) {
    detail::Op o{};
    o.kind = msg ? detail::OpKind::improbe : detail::OpKind::iprobe;
    o.ctx = s.ctx;
    o.rank = source;
    o.tag = tag;
    o.mode = static_cast<uint32_t>(s.mode);
    const auto r = static_cast<uint32_t>(run_one(m, o, false, &st, op));
    found = r != 0;
    id = r;
  } else {
    found = m.on_host(op, [&](detail::HostBackend& b) {
      return proto::probe_any(b, coop::Thread{}, m.view, s.ctx, static_cast<uint32_t>(s.mode), source, tag,
                              msg != nullptr, false, st, &id, msg ? DiagOp::mprobe : DiagOp::probe);
    });
  }
  if (found) {
    if (status) *status = st;
    if (msg) *msg = Message{id};
  }
  return found;
}

bool Comm::iprobe(int source, int tag, Status* status) {
  return improbe(source, tag, nullptr, status);
}

namespace {
// Repeats a probe until it finds a message, with the wait limit.
template <class Try>
Status probe_loop(Messenger::Impl& m, const char* op, int source, int tag, Try try_once) {
  Status st{};
  const uint64_t start = detail::HostBackend::now_ns();
  for (uint32_t i = 1; !try_once(&st); ++i) {
    detail::HostBackend::pause(i);
    if ((i & 63u) == 0 && m.timeout_ns && detail::HostBackend::now_ns() - start > m.timeout_ns) {
      raise(Errc::timeout, op,
            "rank " + std::to_string(m.rt.rank()) + " found no message from source " + std::to_string(source) +
                " with tag " + std::to_string(tag) + "; timed out (GPUCOMM_TIMEOUT sets the limit)");
    }
    if ((i & 63u) == 0 && m.rt.failed()) raise(Errc::peer_failure, op, m.rt.failure());
  }
  return st;
}
}  // namespace

Status Comm::probe(int source, int tag) {
  return probe_loop(st().m->impl(), "msg::probe", source, tag, [&](Status* s) { return iprobe(source, tag, s); });
}

Message Comm::mprobe(int source, int tag, Status* status) {
  Message msg{};
  const Status s = probe_loop(st().m->impl(), "msg::mprobe", source, tag,
                              [&](Status* out) { return improbe(source, tag, &msg, out); });
  if (status) *status = s;
  return msg;
}

Request Comm::imrecv(void* buf, size_t bytes, Message& msg, const Event* event) {
  State& s = st();
  const char* op = "msg::imrecv";
  check_buffer(op, buf, bytes);
  Messenger::Impl& m = s.m->impl();
  GPUCOMM_CHECK_ARG(msg.id == Message::kProcNull || (msg.id >= 1 && msg.id <= m.cfg.unexpected), op, "msg",
                    "is not a message taken by mprobe/improbe (or it was received already)");
  const uint32_t id = msg.id;
  msg.id = 0;
  if (m.gpu) {
    need_device_buffer(m, buf, bytes, op);
    if (id == Message::kProcNull) return Request{Request::kProcNull, 0};
    detail::Op o = recv_op(s, buf, bytes, kAnySource, kAnyTag, counter_of(event));
    o.kind = detail::OpKind::mrecv;
    o.request = id;
    const uint64_t v = run_one(m, o, false, nullptr, op);
    if (static_cast<uint32_t>(v) == 0) table_full(m, DiagOp::mrecv);
    return Request{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)};
  }
  const proto::Started r = m.on_host(op, [&](detail::HostBackend& b) {
    return proto::mrecv_start(b, coop::Thread{}, m.view, s.ctx, static_cast<uint32_t>(s.mode), id, buf, bytes,
                              counter_of(event));
  });
  if (r.error) table_full(m, DiagOp::mrecv);
  return Request{r.id, r.stamp};
}

Status Comm::mrecv(void* buf, size_t bytes, Message& msg) {
  Request r = imrecv(buf, bytes, msg);
  return st().m->wait(r);
}

CommHandle Comm::device_checked(uint32_t version, size_t bytes) const {
  State& s = st();
  Messenger::Impl& m = s.m->impl();
  if (version != kCommVersion || bytes != sizeof(CommHandle)) {
    raise_arg("msg::Comm::device", "headers",
              "the program was compiled against messaging headers of version " + std::to_string(version) + " (" +
                  std::to_string(bytes) + "-byte CommHandle), this library has version " +
                  std::to_string(kCommVersion) + ": rebuild it against this library's headers");
  }
  if (!m.gpu) raise(Errc::unsupported, "msg::Comm::device", "communicator handles for kernels exist on GPU PEs only");
  CommHandle h{};
  h.magic = kCommMagic;
  h.version = kCommVersion;
  h.bytes = sizeof(CommHandle);
  h.ctx = s.ctx;
  h.mode = s.mode;
  h.flags = s.flags;
  h.rank = s.team.rank();
  h.size = s.team.size();
  h.team = m.rt.device_team(s.team);
  h.dev = m.rt.device_handle();
  h.state = m.view;
  return h;
}

Counters Comm::counters() const {
  State& s = st();
  Messenger::Impl& m = s.m->impl();
  Counters c{};
  if (m.gpu) {
    m.copy_from_state(&c, &m.view.comms[s.ctx].counters, sizeof c);
    return c;
  }
  // Progress and senders update them meanwhile: word by word.
  constexpr size_t words = sizeof(Counters) / sizeof(uint64_t);
  auto* src = reinterpret_cast<uint64_t*>(&m.view.comms[s.ctx].counters);
  uint64_t out[words];
  for (size_t i = 0; i < words; ++i) out[i] = std::atomic_ref<uint64_t>(src[i]).load(std::memory_order_relaxed);
  std::memcpy(&c, out, sizeof c);
  return c;
}

}  // namespace gpucomm::msg
