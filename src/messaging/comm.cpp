// Comm: argument checks and the host-called point-to-point operations (host-memory PEs run the
// protocol here with the host backend).
#include <atomic>
#include <cstring>

#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/messenger.hpp"
#include "gpucomm/messaging/protocol_complete.hpp"
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

Request Comm::isend(const void* buf, size_t bytes, int dest, int tag, const Event* event) {
  State& s = st();
  const char* op = "msg::isend";
  check_peer(op, "dest", dest, s.team.size(), false);
  check_tag(op, tag, false);
  check_buffer(op, buf, bytes);
  if (dest == kProcNull) {
    if (event) s.m->impl().on_host(op, [&](detail::HostBackend& b) { return b.fadd(event->counter, 1, Ord::release); });
    return Request{Request::kProcNull};
  }
  Messenger::Impl& m = s.m->impl();
  const proto::SendArgs a{buf, bytes, s.team.world_rank(dest), dest, tag, s.ctx, s.team.rank(), 0, counter_of(event)};
  const proto::Started r = m.on_host(
      op, [&](detail::HostBackend& b) { return proto::send_start(b, coop::Thread{}, m.view, m.view.comms[s.ctx], a); });
  if (r.error) {
    Diag d{};
    d.kind = DiagKind::resource;
    d.op = DiagOp::isend;
    d.arg = static_cast<uint32_t>(DiagArg::request);
    detail::raise_diag(d, m.cfg);
  }
  return Request{r.id};
}

void Comm::send(const void* buf, size_t bytes, int dest, int tag) {
  Request r = isend(buf, bytes, dest, tag);
  st().m->wait(r);
}

Request Comm::irecv(void* buf, size_t bytes, int source, int tag, const Event* event) {
  State& s = st();
  const char* op = "msg::irecv";
  check_peer(op, "source", source, s.team.size(), true);
  check_tag(op, tag, true);
  check_buffer(op, buf, bytes);
  check_wildcards(op, s.mode, source, tag);
  Messenger::Impl& m = s.m->impl();
  const proto::RecvArgs a{buf, bytes, source, tag, s.ctx, 0, counter_of(event)};
  const proto::Started r =
      m.on_host(op, [&](detail::HostBackend& b) { return proto::recv_start(b, coop::Thread{}, m.view, a); });
  if (r.error) {
    Diag d{};
    d.kind = DiagKind::resource;
    d.op = DiagOp::irecv;
    d.arg = static_cast<uint32_t>(DiagArg::request);
    detail::raise_diag(d, m.cfg);
  }
  return Request{r.id};
}

Status Comm::recv(void* buf, size_t bytes, int source, int tag) {
  Request r = irecv(buf, bytes, source, tag);
  return st().m->wait(r);
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
  const bool found = m.on_host(op, [&](detail::HostBackend& b) {
    return proto::iprobe(b, coop::Thread{}, m.view, m.view.comms[s.ctx], source, tag, st, msg != nullptr, &id);
  });
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
  const proto::Started r = m.on_host(op, [&](detail::HostBackend& b) {
    return proto::mrecv_start(b, coop::Thread{}, m.view, m.view.comms[s.ctx], id, buf, bytes, counter_of(event));
  });
  if (r.error) {
    Diag d{};
    d.kind = DiagKind::resource;
    d.op = DiagOp::mrecv;
    d.arg = static_cast<uint32_t>(DiagArg::request);
    detail::raise_diag(d, m.cfg);
  }
  return Request{r.id};
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
  h.state = m.view_dev;
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
