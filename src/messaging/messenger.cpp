// Messenger: creation of a PE's messaging state (collective), communicators with context ids, and
// the host-called completion calls. docs/MESSAGING.md describes the protocol.
#include "gpucomm/messaging/messenger.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "config.hpp"
#include "core/nvtx_range.hpp"
#include "gpu_ops.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/format.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/messaging/protocol_am.hpp"
#include "messenger_impl.hpp"

namespace gpucomm::msg {

namespace {

// A name for the member list of a team (gathers among its members are named after it).
std::string team_key(const Team& t) {
  uint64_t h = 1469598103934665603ull;
  for (int m : t.members()) h = (h ^ static_cast<uint64_t>(m)) * 1099511628211ull;
  return std::to_string(t.size()) + "-" + std::to_string(t.members().front()) + "-" + std::to_string(h);
}

void* alloc_local(bool gpu, size_t bytes, const char* what) {
  void* p = nullptr;
  if (gpu) {
    check_cuda(cudaMalloc(&p, bytes), "cudaMalloc", what);
    check_cuda(cudaMemset(p, 0, bytes), "cudaMemset", what);
  } else {
    p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!p) raise(Errc::out_of_memory, "Messenger", std::string("allocating ") + what);
    std::memset(p, 0, bytes);
  }
  return p;
}

void free_local(bool gpu, void* p) {
  if (!p) return;
  if (gpu) {
    (void)cudaFree(p);
  } else {
    std::free(p);
  }
}

}  // namespace

Messenger::Impl::~Impl() {
  if (diag_host) (void)cudaFreeHost(diag_host);
  if (out_host) (void)cudaFreeHost(out_host);
  if (status_host) (void)cudaFreeHost(status_host);
  for (void* st : staging)
    if (st) (void)cudaFree(st);
  if (stream) (void)cudaStreamDestroy(reinterpret_cast<cudaStream_t>(stream));
  for (uint64_t* e : events) free_local(gpu, e);
  free_local(gpu, local);
}

void Messenger::Impl::need_host(const char* op) const {
  raise(Errc::unsupported, op, "host-called messaging on GPU PEs goes through the stream-ordered calls");
}

void Messenger::Impl::copy_to_state(void* dst, const void* src, size_t n) const {
  if (gpu) {
    check_cuda(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "cudaMemcpy", "messaging state");
  } else {
    std::memcpy(dst, src, n);
  }
}
void Messenger::Impl::copy_from_state(void* dst, const void* src, size_t n) const {
  if (gpu) {
    check_cuda(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "cudaMemcpy", "messaging state");
  } else {
    std::memcpy(dst, src, n);
  }
}

Messenger::Messenger(Runtime& rt, const MessengerOptions& opts) : impl_(std::make_unique<Impl>(rt)) {
  Impl& m = *impl_;
  m.cfg = detail::make_config(opts, rt.size(), rt.rank());
  if (auto d = rt.bootstrap().agree(detail::describe_config(m.cfg))) {
    raise_arg("Messenger", "options",
              "rank " + std::to_string(d.rank) + " uses " + d.value + ", this PE " + detail::describe_config(m.cfg) +
                  ": every PE must use the same messaging sizes");
  }
  m.gpu = rt.pe_kind() == PeKind::gpu;
  m.timeout_ns = static_cast<uint64_t>(env::wait_timeout_ms()) * 1000000ull;
  const auto hl = detail::heap_layout(m.cfg);
  const auto ll = detail::local_layout(m.cfg);
  m.heap_bytes = hl.total;
  m.local_bytes = ll.total;
  m.heap = static_cast<char*>(rt.aligned_alloc(4096, hl.total));  // collective
  if (m.gpu) {
    check_cuda(cudaMemset(m.heap, 0, hl.total), "cudaMemset", "messaging inboxes");
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", "messaging inboxes");
  } else {
    std::memset(m.heap, 0, hl.total);
  }
  m.local = static_cast<char*>(alloc_local(m.gpu, ll.total, "messaging tables"));
  m.view = detail::carve(m.cfg, m.heap, m.local);
  {
    // Every bin chunk starts free.
    std::vector<uint32_t> next(m.cfg.bin_chunks);
    uint64_t head = 0;
    detail::init_bins(m.cfg, next.data(), &head);
    m.copy_to_state(m.view.bin_next, next.data(), next.size() * sizeof(uint32_t));
    m.copy_to_state(&m.view.home[home::kChunkFree], &head, sizeof head);
  }
  if (m.gpu) {
    // The failure record must stay readable after a kernel trapped: host-mapped memory.
    void* d = nullptr;
    check_cuda(cudaHostAlloc(&d, sizeof(Diag), cudaHostAllocMapped), "cudaHostAlloc", "messaging failure record");
    std::memset(d, 0, sizeof(Diag));
    m.diag_host = static_cast<Diag*>(d);
    check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m.view.diag), d, 0), "cudaHostGetDevicePointer",
               "messaging failure record");
    // Host-called operations: a stream of their own, results in host-mapped memory, the kernel
    // loaded now (not lazily while another kernel waits for messaging).
    cudaStream_t st = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "messaging stream");
    m.stream = reinterpret_cast<Stream>(st);
    void* o = nullptr;
    check_cuda(cudaHostAlloc(&o, sizeof(uint64_t) * detail::kMaxLaunchOps, cudaHostAllocMapped), "cudaHostAlloc",
               "messaging results");
    m.out_host = static_cast<uint64_t*>(o);
    check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m.out_dev), o, 0), "cudaHostGetDevicePointer",
               "messaging results");
    check_cuda(cudaHostAlloc(&o, sizeof(Status) * detail::kMaxLaunchOps, cudaHostAllocMapped), "cudaHostAlloc",
               "messaging statuses");
    m.status_host = static_cast<Status*>(o);
    check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m.status_dev), o, 0), "cudaHostGetDevicePointer",
               "messaging statuses");
    check_cuda(detail::preload_ops(), "Messenger", "loading the messaging kernel");
  } else {
    const TransportInfo ti = rt.transport_info();
    m.direct.assign(static_cast<size_t>(rt.size()), nullptr);
    for (int pe = 0; pe < rt.size(); ++pe)
      if (ti.routes[static_cast<size_t>(pe)] == "direct") m.direct[static_cast<size_t>(pe)] = rt.heap().peer_base(pe);
    m.host = std::make_unique<detail::HostBackend>(rt, m.cfg, m.direct, m.view, m.timeout_ns);
  }
  rt.barrier_all();  // every inbox is zeroed before anyone writes into it
}

void detail::log_teardown_error(const Runtime& rt, const std::string& where, const std::exception& e) {
  if (rt.failed() || rt.aborted()) {
    GPUCOMM_LOG(debug, where << " after the job failed: " << e.what());
  } else {
    GPUCOMM_LOG(error, where << ": " << e.what());
  }
}

Messenger::~Messenger() {
  try {
    Impl& m = *impl_;
    m.rt.barrier_all();
    m.rt.free(m.heap);  // collective
  } catch (const std::exception& e) {
    detail::log_teardown_error(impl_->rt, "~Messenger", e);
  }
}

Runtime& Messenger::runtime() const {
  return impl_->rt;
}
const Config& Messenger::config() const {
  return impl_->cfg;
}
size_t Messenger::heap_bytes() const {
  return impl_->heap_bytes;
}
size_t Messenger::local_bytes() const {
  return impl_->local_bytes;
}

void Messenger::check_device() const {
  const Impl& m = *impl_;
  if (m.diag_host && std::atomic_ref<uint32_t>(m.diag_host->state).load(std::memory_order_acquire) == 2u) {
    // This PE's kernel failed by itself (a bad argument, a timeout, a protocol fault): the job fails
    // now, so peers waiting on the device for its messages leave naming this PE. A wait that left
    // because the job failed elsewhere names that failure instead.
    const Diag d = *m.diag_host;
    if (d.kind != DiagKind::peer_failure && !m.rt.failed()) m.rt.bootstrap().abort(detail::describe(d, m.cfg));
    detail::raise_diag(d, m.cfg);
  }
  m.rt.check_device();
}

Comm Messenger::world(const CommOptions& opts) {
  return create(impl_->rt.world(), opts);
}

Comm Messenger::create(const Team& team, const CommOptions& o) {
  Impl& m = *impl_;
  const char* op = "Messenger::create";
  GPUCOMM_CHECK_ARG(team.valid(), op, "team", "is not a team this PE belongs to");
  GPUCOMM_CHECK_ARG(static_cast<uint32_t>(o.mode) <= static_cast<uint32_t>(Mode::last), op, "CommOptions::mode",
                    "is not a Mode");
  GPUCOMM_CHECK_ARG(o.mode != Mode::unordered || o.allow_overtaking, op, "CommOptions::allow_overtaking",
                    "must be true for Mode::unordered: unordered matching lets messages overtake each other, which "
                    "MPI allows only under mpi_assert_allow_overtaking");
  const uint32_t flags = (o.errors_return ? kCommErrorsReturn : 0u) | (o.allow_overtaking ? kCommAllowOvertaking : 0u);
  std::lock_guard<std::mutex> lock(m.mu);
  // The lowest context id free on every member; every member must ask for the same mode.
  const std::string key = team_key(team);
  const std::string group = "msg/comm/" + key + "/" + std::to_string(m.comm_seq[key]++);
  struct Offer {
    uint64_t used;
    uint32_t mode, flags;
  } mine{m.ctx_used, static_cast<uint32_t>(o.mode), flags};
  auto parts = m.rt.bootstrap().gather(group, team.size(), team.rank(),
                                       std::string(reinterpret_cast<const char*>(&mine), sizeof mine));
  uint64_t busy = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    Offer e{};
    if (parts[i].size() != sizeof(Offer)) raise(Errc::protocol, op, "malformed communicator offer");
    std::memcpy(&e, parts[i].data(), sizeof e);
    if (e.mode != mine.mode || e.flags != mine.flags) {
      raise_arg(op, "options",
                "team rank " + std::to_string(i) + " asks for mode " + mode_name(static_cast<Mode>(e.mode)) +
                    " (flags " + std::to_string(e.flags) + "), this PE for " + mode_name(o.mode) + " (flags " +
                    std::to_string(flags) + "): every member must create the communicator alike");
    }
    busy |= e.used;
  }
  if (busy == ~uint64_t(0)) {
    raise(Errc::out_of_memory, op,
          "all " + std::to_string(kMaxComms) + " context ids are held by live communicators on some member");
  }
  const auto ctx = static_cast<int32_t>(lowest_bit(~busy));
  auto st = std::make_shared<Comm::State>();
  st->m = this;
  st->team = team;
  st->ctx = ctx;
  st->mode = o.mode;
  st->flags = flags;
  CommState cs{};
  cs.live = 1;
  cs.mode = o.mode;
  cs.flags = flags;
  cs.ctx = ctx;
  cs.size = team.size();
  cs.rank = team.rank();
  cs.team_slot = team.id();
  m.copy_to_state(&m.view.comms[ctx], &cs, sizeof cs);
  m.ctx_used |= uint64_t(1) << ctx;
  // Nobody sends on the communicator before every member has it.
  m.rt.bootstrap().gather(group + "/ready", team.size(), team.rank(), "");
  return Comm(st);
}

Comm::State::~State() {
  if (!m) return;
  Messenger::Impl& im = m->impl();
  const uint32_t dead = 0;
  try {
    im.copy_to_state(&im.view.comms[ctx].live, &dead, sizeof dead);
  } catch (const std::exception& e) {
    detail::log_teardown_error(im.rt, "freeing communicator " + std::to_string(ctx), e);
  }
  std::lock_guard<std::mutex> lock(im.mu);
  im.ctx_used &= ~(uint64_t(1) << ctx);
}

// ---- completion ----

namespace {
// A list of one operation on a request (GPU PEs).
detail::OpList request_op(detail::OpKind kind, const Request& r, Status* status, uint64_t* out, bool wait) {
  detail::OpList l{};
  l.n = 1;
  l.wait = wait ? 1u : 0u;
  l.out = out;
  l.ops[0].kind = kind;
  l.ops[0].request = r.id;
  l.ops[0].request_stamp = r.stamp;
  l.ops[0].status = status;
  return l;
}
}  // namespace

bool Messenger::test(Request& r, Status* status) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::test");
  Impl& m = *impl_;
  Status st{};
  bool done = false;
  if (m.gpu) {
    if (r.null() || r.id >= Request::kProcNull) {
      done = true;
      st = r.id == Request::kProcNull ? proto::proc_null_status() : Status{};
      r = Request{};
    } else {
      detail::OpList l = request_op(detail::OpKind::test, r, m.status_dev, m.out_dev, false);
      m.run(l, nullptr, true, "msg::test");
      done = m.out_host[0] != 0;
      if (done) {
        st = m.status_host[0];
        r = Request{};
      }
    }
  } else {
    done =
        m.on_host("msg::test", [&](detail::HostBackend& b) { return proto::test(b, coop::Thread{}, m.view, r, st); });
  }
  if (done && status) *status = st;
  return done;
}

Status Messenger::wait(Request& r) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::wait");
  Impl& m = *impl_;
  if (m.gpu) {
    if (r.null() || r.id >= Request::kProcNull) {
      const Status st = r.id == Request::kProcNull ? proto::proc_null_status() : Status{};
      r = Request{};
      return st;
    }
    detail::OpList l = request_op(detail::OpKind::wait, r, m.status_dev, nullptr, true);
    m.run(l, nullptr, true, "msg::wait");
    r = Request{};
    return m.status_host[0];
  }
  return m.on_host("msg::wait", [&](detail::HostBackend& b) { return proto::wait(b, coop::Thread{}, m.view, r); });
}

void Messenger::waitall(std::span<Request> rs, std::span<Status> statuses) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::waitall");
  GPUCOMM_CHECK_ARG(statuses.empty() || statuses.size() == rs.size(), "msg::waitall", "statuses",
                    "must be empty or as long as the requests");
  for (size_t i = 0; i < rs.size(); ++i) {
    Status st = wait(rs[i]);
    if (!statuses.empty()) statuses[i] = st;
  }
}

bool Messenger::testall(std::span<Request> rs, std::span<Status> statuses) {
  GPUCOMM_CHECK_ARG(statuses.empty() || statuses.size() == rs.size(), "msg::testall", "statuses",
                    "must be empty or as long as the requests");
  bool all = true;
  for (size_t i = 0; i < rs.size(); ++i) {
    if (rs[i].null()) continue;
    Status st{};
    if (test(rs[i], &st)) {
      if (!statuses.empty()) statuses[i] = st;
    } else {
      all = false;
    }
  }
  return all;
}

bool Messenger::testany(std::span<Request> rs, int* index, Status* status) {
  GPUCOMM_CHECK_ARG(index != nullptr, "msg::testany", "index", "must not be null");
  *index = -1;
  bool any = false;
  for (size_t k = 0; k < rs.size(); ++k) {
    if (rs[k].null()) continue;
    any = true;
    if (test(rs[k], status)) {
      *index = static_cast<int>(k);
      return true;
    }
  }
  return !any;
}

int Messenger::waitsome(std::span<Request> rs, std::span<int> indices, std::span<Status> statuses) {
  const char* op = "msg::waitsome";
  GPUCOMM_CHECK_ARG(indices.size() >= rs.size(), op, "indices", "must be as long as the requests");
  GPUCOMM_CHECK_ARG(statuses.empty() || statuses.size() >= rs.size(), op, "statuses",
                    "must be empty or as long as the requests");
  Status st{};
  const int first = waitany(rs, &st);  // blocks (with the timeout diagnostic) until one completed
  if (first < 0) return -1;
  int n = 0;
  auto record = [&](size_t k, const Status& s) {
    indices[static_cast<size_t>(n)] = static_cast<int>(k);
    if (!statuses.empty()) statuses[static_cast<size_t>(n)] = s;
    ++n;
  };
  for (size_t k = 0; k < rs.size(); ++k) {
    if (static_cast<int>(k) == first) {
      record(k, st);
    } else if (!rs[k].null()) {
      Status other{};
      if (test(rs[k], &other)) record(k, other);
    }
  }
  return n;
}

int Messenger::waitany(std::span<Request> rs, Status* status) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::waitany");
  Impl& m = *impl_;
  bool any = false;
  for (const Request& r : rs) any = any || !r.null();
  if (!any) return -1;
  const uint64_t start = detail::HostBackend::now_ns();
  for (uint32_t i = 1;; ++i) {
    for (size_t k = 0; k < rs.size(); ++k) {
      if (!rs[k].null() && test(rs[k], status)) return static_cast<int>(k);
    }
    detail::HostBackend::pause(i);
    if ((i & 63u) == 0 && m.timeout_ns && detail::HostBackend::now_ns() - start > m.timeout_ns) {
      // The first open request names what was waited for.
      for (Request& r : rs) {
        if (!r.null()) {
          Status st = wait(r);  // times out with the full diagnostic (or completes after all)
          if (status) *status = st;
          return static_cast<int>(&r - rs.data());
        }
      }
    }
  }
}

void Messenger::cancel(const Request& r) {
  Impl& m = *impl_;
  if (m.gpu) {
    if (r.null() || r.id >= Request::kProcNull) return;
    detail::OpList l = request_op(detail::OpKind::cancel, r, nullptr, nullptr, false);
    m.run(l, nullptr, true, "msg::cancel");
    return;
  }
  m.on_host("msg::cancel", [&](detail::HostBackend& b) { return proto::cancel(b, coop::Thread{}, m.view, r); });
}

void Messenger::register_am(std::span<const uint32_t> ids) {
  Impl& m = *impl_;
  uint64_t bits = 0;
  for (const uint32_t id : ids) {
    if (id >= kMaxAmHandlers)
      raise_arg("msg::register_am", "ids", std::to_string(id) + " is not below " + std::to_string(kMaxAmHandlers));
    bits |= uint64_t(1) << id;
  }
  if (auto d = m.rt.bootstrap().agree("am handlers " + hex(bits))) {
    raise(Errc::invalid_argument, "msg::register_am",
          "rank " + std::to_string(d.rank) + " registered handler ids " + d.value + ", this PE " + hex(bits) +
              ": every PE must register the same ids");
  }
  if (m.gpu) {
    m.copy_to_state(&m.view.ctl->am_valid, &bits, sizeof bits);
  } else {
    std::atomic_ref<uint64_t>(m.view.ctl->am_valid).store(bits, std::memory_order_release);
  }
}

int Messenger::am_poll(const std::function<void(const AmMessage&)>& handler, int max) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::am_poll");
  Impl& m = *impl_;
  const char* op = "msg::am_poll";
  if (m.gpu) {
    raise(Errc::unsupported, op,
          "active messages of GPU PEs are handled by their kernels (msg::am_poll, msg::launch_am_service)");
  }
  GPUCOMM_CHECK_ARG(max >= 0, op, "max", std::to_string(max) + " is negative");
  const proto::AmTaken t = m.on_host(op, [&](detail::HostBackend& b) {
    return proto::am_take(b, coop::Thread{}, m.view, static_cast<uint32_t>(max));
  });
  for (uint32_t k = 0; k < t.n; ++k) {
    const AmMessage msg = proto::am_message(m.view, t.idx[k]);
    handler(msg);
    const bool ok = m.on_host(op, [&](detail::HostBackend& b) { return proto::am_release(b, m.view, t.idx[k]); });
    if (!ok) {
      raise_arg(op, "handler",
                "the handler of active-message id " + std::to_string(msg.id) +
                    " did not answer its request with Comm::am_reply (its sender reserved space for the answer)");
    }
  }
  return static_cast<int>(t.n);
}

void Messenger::progress() {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::progress");
  Impl& m = *impl_;
  if (m.gpu) {
    detail::OpList l = request_op(detail::OpKind::progress, Request{}, nullptr, nullptr, false);
    m.run(l, nullptr, true, "msg::progress");
    return;
  }
  m.on_host("msg::progress", [&](detail::HostBackend& b) { return proto::progress(b, coop::Thread{}, m.view); });
}

// ---- groups ----

void Messenger::group_start() {
  Impl& m = *impl_;
  if (m.in_group) raise(Errc::invalid_argument, "msg::group_start", "a group is open already (groups do not nest)");
  m.in_group = true;
  m.group.clear();
}

void Messenger::group_end(Stream stream) {
  gpucomm::detail::NvtxRange nvtx_range("gpucomm::msg::group_end");
  Impl& m = *impl_;
  if (!m.in_group) raise(Errc::invalid_argument, "msg::group_end", "no group is open (call group_start first)");
  m.in_group = false;
  std::vector<detail::Op> ops;
  ops.swap(m.group);
  if (ops.empty()) return;
  if (ops.size() > static_cast<size_t>(detail::kMaxLaunchOps)) {
    raise_arg("msg::group_end", "group",
              "holds " + std::to_string(ops.size()) + " operations; a group takes at most " +
                  std::to_string(detail::kMaxLaunchOps));
  }
  detail::OpList l{};
  l.n = static_cast<int32_t>(ops.size());
  l.wait = 1;
  for (size_t i = 0; i < ops.size(); ++i) l.ops[i] = ops[i];
  // Host-memory PEs run the group now; GPU PEs enqueue one kernel on the stream.
  m.run(l, stream, !m.gpu, "msg::group_end");
}

// ---- events ----

Event Messenger::make_event() {
  Impl& m = *impl_;
  auto* c = static_cast<uint64_t*>(alloc_local(m.gpu, sizeof(uint64_t), "event counter"));
  std::lock_guard<std::mutex> lock(m.mu);
  m.events.push_back(c);
  return Event{c};
}

uint64_t Messenger::event_value(const Event& e) const {
  GPUCOMM_CHECK_ARG(e.counter != nullptr, "msg::event_value", "event", "is not an event of this Messenger");
  if (impl_->gpu) {
    uint64_t v = 0;
    impl_->copy_from_state(&v, e.counter, sizeof v);
    return v;
  }
  return detail::HostBackend::ld(e.counter, Ord::acquire);
}

void Messenger::event_wait(const Event& e, uint64_t value) {
  Impl& m = *impl_;
  const uint64_t start = detail::HostBackend::now_ns();
  for (uint32_t i = 1; event_value(e) < value; ++i) {
    progress();
    detail::HostBackend::pause(i);
    if ((i & 63u) == 0 && m.timeout_ns && detail::HostBackend::now_ns() - start > m.timeout_ns) {
      raise(Errc::timeout, "msg::event_wait",
            "rank " + std::to_string(m.rt.rank()) + " waited for an event to reach " + std::to_string(value) +
                ", last seen " + std::to_string(event_value(e)) + "; timed out (GPUCOMM_TIMEOUT sets the limit)");
    }
    if ((i & 63u) == 0 && m.rt.failed()) {
      raise(Errc::peer_failure, "msg::event_wait",
            "rank " + std::to_string(m.rt.rank()) + " waited for an event to reach " + std::to_string(value) + ": " +
                m.rt.failure());
    }
  }
}

}  // namespace gpucomm::msg
