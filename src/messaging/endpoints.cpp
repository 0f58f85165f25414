// Endpoints: creation (collective), the device handle, and the host-memory PEs' calls over the
// same protocol code as the GPU's (gpucomm/messaging/endpoints_protocol.hpp).
#include "gpucomm/messaging/endpoints.hpp"

#include <cuda_runtime_api.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/messaging/endpoints_protocol.hpp"

namespace gpucomm::msg {

namespace ep {

std::string describe_failure(uint32_t fail, int rank, int peer, int ep, uint64_t expected, uint64_t seen,
                             uint64_t elapsed_ns) {
  const auto f = static_cast<Fail>(fail);
  std::string s = "rank " + std::to_string(rank) + (ep >= 0 ? ", endpoint " + std::to_string(ep) : std::string()) +
                  ": " + fail_name(f);
  const auto sv = static_cast<int64_t>(seen);
  switch (f) {
    case Fail::bad_pe:
      return s + ": pe " + std::to_string(static_cast<int32_t>(seen)) + " is outside 0.." +
             std::to_string(expected - 1);
    case Fail::bad_endpoint:
      return s + ": ep " + std::to_string(static_cast<int32_t>(seen)) + " is outside 0.." +
             std::to_string(expected - 1);
    case Fail::bad_tag:
      return s + ": tag " + std::to_string(static_cast<int32_t>(seen)) +
             " (sends need tag >= 0; receives and probes tag >= 0 or kAnyTag)";
    case Fail::bad_source:
      return s + ": src " + std::to_string(static_cast<int32_t>(seen)) + " is neither kAnySource nor in 0.." +
             std::to_string(expected - 1);
    case Fail::bad_bytes:
      return s + ": bytes " + std::to_string(seen) + " > max_bytes " + std::to_string(expected) +
             " (EndpointsOptions::max_bytes; larger messages go through a Messenger's communicator)";
    case Fail::bad_request:
      return s + ": request id " + std::to_string(seen) + " (not posted, or already waited for)";
    case Fail::too_many_receives:
      return s + ": " + std::to_string(seen) + " held, the owner state holds " + std::to_string(expected) +
             " (wait for some, or a larger OwnerState)";
    case Fail::too_many_pes:
      return s + ": the job has " + std::to_string(seen) + " PEs, the OwnerState serves " + std::to_string(expected);
    case Fail::pending:
      return s + ": " + std::to_string(seen) + " receives not waited for";
    case Fail::bad_record:
      return s + ": from PE " + std::to_string(peer) + ", header word " + std::to_string(seen);
    case Fail::credit_timeout:
    case Fail::recv_timeout:
    case Fail::aborted: {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.3f", static_cast<double>(elapsed_ns) / 1e9);
      if (f == Fail::credit_timeout) {
        return s + ": ticket " + std::to_string(expected) + " toward PE " + std::to_string(peer) +
               " needs ring space, its owner returned credits up to " + std::to_string(seen) + " after " + secs +
               " s (is anyone receiving on it? GPUCOMM_TIMEOUT sets the limit)";
      }
      const auto src = static_cast<int32_t>(expected >> 32), tag = static_cast<int32_t>(expected & 0xffffffffu);
      const std::string what = "a receive (src " + (src == kAnySource ? std::string("ANY") : std::to_string(src)) +
                               ", tag " + (tag == kAnyTag ? std::string("ANY") : std::to_string(tag)) + ")";
      if (f == Fail::aborted) {
        return s + ": " + what + " left after " + secs + " s because the job failed (PE " + std::to_string(sv) +
               " failed first)";
      }
      return s + ": " + what + " with " + std::to_string(seen) + " receives posted saw no message after " + secs +
             " s (GPUCOMM_TIMEOUT sets the limit)";
    }
    case Fail::owned:
    case Fail::not_open:
      return s;
  }
  return s;
}

}  // namespace ep

namespace {

uint64_t steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// The memory backend of host-memory PEs: words of this PE and of the peers' mapped regions
// through std::atomic_ref (host threads of the node are coherent).
struct HostEpBackend {
  const ep::EndpointsHandle& h;
  const Runtime& rt;
  const char* call;

  static void ld2(const uint64_t* p, uint64_t& a, uint64_t& b) {
    a = std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_relaxed);
    b = std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p + 1)).load(std::memory_order_relaxed);
  }
  static void st2(uint64_t* p, uint64_t a, uint64_t b) {
    std::atomic_ref<uint64_t>(p[0]).store(a, std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(p[1]).store(b, std::memory_order_relaxed);
  }
  static uint64_t ld_acq(const uint64_t* p) {
    return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_acquire);
  }
  static void st_rel(uint64_t* p, uint64_t v) { std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_release); }
  static void st_rel_local(uint64_t* p, uint64_t v) { st_rel(p, v); }
  static uint64_t fadd(uint64_t* p, uint64_t v) {
    return std::atomic_ref<uint64_t>(*p).fetch_add(v, std::memory_order_relaxed);
  }
  static bool cas_acq(uint64_t* p, uint64_t expected, uint64_t desired) {
    return std::atomic_ref<uint64_t>(*p).compare_exchange_strong(expected, desired, std::memory_order_acquire);
  }
  static uint64_t now() { return steady_ns(); }

  [[noreturn]] void fail(ep::Fail f, int peer, int e, const void*, uint64_t expected, uint64_t seen,
                         uint64_t elapsed = 0) const {
    Errc code = Errc::invalid_argument;
    if (f == ep::Fail::credit_timeout || f == ep::Fail::recv_timeout) code = Errc::timeout;
    if (f == ep::Fail::aborted) code = Errc::peer_failure;
    if (f == ep::Fail::bad_record) code = Errc::protocol;
    if (f == ep::Fail::owned || f == ep::Fail::not_open || f == ep::Fail::pending) code = Errc::invalid_argument;
    raise(code, call, ep::describe_failure(static_cast<uint32_t>(f), h.rank, peer, e, expected, seen, elapsed));
  }
  void check_wait(uint64_t start, ep::Fail f, int peer, int e, const void* addr, uint64_t expected,
                  uint64_t seen) const {
    const uint64_t waited = now() - start;
    if (rt.failed()) raise(Errc::peer_failure, call, "the job failed while waiting: " + rt.failure());
    if (h.timeout_ns != 0 && waited > h.timeout_ns) fail(f, peer, e, addr, expected, seen, waited);
    sched_yield();  // PEs may share cores
  }
};

constexpr bool pow2(int v) {
  return v > 0 && (v & (v - 1)) == 0;
}

}  // namespace

// A host owner's state: big enough for any job of host-memory PEs on one node.
struct Endpoints::Owner::State : ep::OwnerState<1024, 1024, 1024, 256> {};

struct Endpoints::Impl {
  Runtime& rt;
  EndpointsOptions opts;
  ep::Layout lay{};
  bool gpu = false;
  char* region = nullptr;
  std::vector<char*> peers;         // host PEs: each PE's region as mapped here
  char** peer_dev = nullptr;        // GPU PEs: the same, a device array
  ep::EpDiag* diag_host = nullptr;  // GPU PEs: host-mapped failure record
  ep::EpDiag* diag_dev = nullptr;
  ep::EndpointsHandle handle{};

  explicit Impl(Runtime& r) : rt(r) {}
};

Endpoints::Endpoints(Runtime& rt, const EndpointsOptions& o) : impl_(std::make_unique<Impl>(rt)) {
  Impl& m = *impl_;
  const char* call = "Endpoints";
  GPUCOMM_CHECK_ARG(o.endpoints >= 1 && o.endpoints <= static_cast<int>(ep::kMaxEndpoints), call, "endpoints",
                    "must be in 1.." + std::to_string(ep::kMaxEndpoints) + ", got " + std::to_string(o.endpoints));
  GPUCOMM_CHECK_ARG(
      pow2(o.slots) && o.slots >= static_cast<int>(ep::kMinSlots) && o.slots <= static_cast<int>(ep::kMaxSlots), call,
      "slots", "must be a power of two in 2..64, got " + std::to_string(o.slots));
  GPUCOMM_CHECK_ARG(o.max_bytes >= 4 && o.max_bytes <= static_cast<int>(ep::kMaxBytes) && o.max_bytes % 4 == 0, call,
                    "max_bytes", "must be a multiple of 4 in 4..1024, got " + std::to_string(o.max_bytes));
  GPUCOMM_CHECK_ARG(rt.size() <= 0xffff, call, "PEs", "endpoints serve at most 65535 PEs");
  m.opts = o;
  const std::string desc = "endpoints=" + std::to_string(o.endpoints) + " slots=" + std::to_string(o.slots) +
                           " max_bytes=" + std::to_string(o.max_bytes);
  if (auto d = rt.bootstrap().agree(desc)) {
    raise_arg(call, "options",
              "rank " + std::to_string(d.rank) + " uses " + d.value + ", this PE " + desc +
                  ": every PE must use the same options");
  }
  m.lay = ep::make_layout(static_cast<uint32_t>(rt.size()), static_cast<uint32_t>(o.endpoints),
                          static_cast<uint32_t>(o.slots), static_cast<uint32_t>(o.max_bytes));
  m.gpu = rt.pe_kind() == PeKind::gpu;
  // Every PE must be reachable with loads and stores.
  std::vector<char*> bases(static_cast<size_t>(rt.size()), nullptr);
  const DeviceHandle dh = m.gpu ? rt.device_handle() : DeviceHandle{};
  if (m.gpu) {
    check_cuda(cudaMemcpy(bases.data(), dh.peer_bases, bases.size() * sizeof(char*), cudaMemcpyDeviceToHost),
               "cudaMemcpy", "peer bases");
  } else {
    const TransportInfo ti = rt.transport_info();
    for (int pe = 0; pe < rt.size(); ++pe)
      if (ti.routes[static_cast<size_t>(pe)] == "direct") bases[static_cast<size_t>(pe)] = rt.heap().peer_base(pe);
  }
  for (int pe = 0; pe < rt.size(); ++pe) {
    if (bases[static_cast<size_t>(pe)] == nullptr) {
      raise(Errc::unsupported, call,
            "PE " + std::to_string(pe) + " is not reachable with loads and stores from rank " +
                std::to_string(rt.rank()) +
                " (endpoints need one node with peer access between GPUs, or host PEs in shared memory)");
    }
  }
  m.region = static_cast<char*>(rt.aligned_alloc(4096, m.lay.bytes));  // collective
  const auto off = static_cast<size_t>(m.region - (m.gpu ? dh.heap_base : rt.heap().base()));
  m.peers.resize(bases.size());
  for (size_t pe = 0; pe < bases.size(); ++pe) m.peers[pe] = bases[pe] + off;
  ep::EndpointsHandle& h = m.handle;
  h.magic = ep::kEpMagic;
  h.version = ep::kEpVersion;
  h.bytes = sizeof(ep::EndpointsHandle);
  h.rank = rt.rank();
  h.size = rt.size();
  h.lay = m.lay;
  h.region = m.region;
  h.timeout_ns = static_cast<uint64_t>(env::wait_timeout_ms()) * 1000000ull;
  for (size_t pe = 0; pe < m.peers.size() && pe < static_cast<size_t>(ep::kNearPes); ++pe) h.near[pe] = m.peers[pe];
  if (m.gpu) {
    check_cuda(cudaMemset(m.region, 0, m.lay.bytes), "cudaMemset", "endpoint rings");
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, m.peers.size() * sizeof(char*)), "cudaMalloc", "endpoint peer table");
    m.peer_dev = static_cast<char**>(p);
    check_cuda(cudaMemcpy(m.peer_dev, m.peers.data(), m.peers.size() * sizeof(char*), cudaMemcpyHostToDevice),
               "cudaMemcpy", "endpoint peer table");
    check_cuda(cudaHostAlloc(&p, sizeof(ep::EpDiag), cudaHostAllocMapped), "cudaHostAlloc", "endpoint failure record");
    std::memset(p, 0, sizeof(ep::EpDiag));
    m.diag_host = static_cast<ep::EpDiag*>(p);
    check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m.diag_dev), p, 0), "cudaHostGetDevicePointer",
               "endpoint failure record");
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", "endpoint rings");
    h.peer_region = m.peer_dev;
    h.diag = m.diag_dev;
    h.dev = dh;
  } else {
    std::memset(m.region, 0, m.lay.bytes);
    h.peer_region = m.peers.data();
    h.diag = nullptr;
  }
  rt.barrier_all();  // every ring is zeroed before anyone writes into it
}

Endpoints::~Endpoints() {
  Impl& m = *impl_;
  try {
    m.rt.barrier_all();
    m.rt.free(m.region);  // collective
  } catch (const std::exception& e) {
    GPUCOMM_LOG(debug, "~Endpoints: " << e.what());
  }
  if (m.peer_dev) cudaFree(m.peer_dev);
  if (m.diag_host) cudaFreeHost(m.diag_host);
}

const ep::Layout& Endpoints::layout() const {
  return impl_->lay;
}
size_t Endpoints::region_bytes() const {
  return impl_->lay.bytes;
}

ep::EndpointsHandle Endpoints::device() const {
  if (!impl_->gpu) {
    raise(Errc::unsupported, "Endpoints::device",
          "this is a host-memory PE: use Endpoints::send and Endpoints::own (kernels need a GPU PE)");
  }
  return impl_->handle;
}

void Endpoints::check_device() const {
  const ep::EpDiag* d = impl_->diag_host;
  if (!d || std::atomic_ref<const uint32_t>(d->state).load(std::memory_order_acquire) != 2u) return;
  std::string where = "block " + std::to_string(d->block) + " thread " + std::to_string(d->thread) + ": ";
  raise(d->fail == static_cast<uint32_t>(ep::Fail::recv_timeout) ||
                d->fail == static_cast<uint32_t>(ep::Fail::credit_timeout)
            ? Errc::timeout
            : Errc::invalid_argument,
        "Endpoints (device)",
        where + ep::describe_failure(d->fail, d->rank, d->peer, d->ep, d->expected, d->seen, d->elapsed_ns));
}

namespace {
void require_host(bool gpu, const char* call) {
  if (gpu) {
    raise(Errc::unsupported, call,
          "this is a GPU PE: its endpoints are used from kernels (gpucomm/messaging/endpoints_device.cuh)");
  }
}
}  // namespace

void Endpoints::send(int pe, int e, int tag, const void* buf, size_t bytes) {
  const Impl& m = *impl_;
  require_host(m.gpu, "Endpoints::send");
  GPUCOMM_CHECK_ARG(buf != nullptr || bytes == 0, "Endpoints::send", "buf", "is null with bytes > 0");
  GPUCOMM_CHECK_ARG(bytes <= m.lay.max_bytes, "Endpoints::send", "bytes",
                    std::to_string(bytes) + " > max_bytes " + std::to_string(m.lay.max_bytes) +
                        " (EndpointsOptions::max_bytes; larger messages go through a Messenger's communicator)");
  const HostEpBackend b{m.handle, m.rt, "Endpoints::send"};
  ep::proto::send(b, m.handle, pe, e, tag, buf, static_cast<uint32_t>(bytes));
}

std::unique_ptr<Endpoints::Owner> Endpoints::own(int e) {
  require_host(impl_->gpu, "Endpoints::own");
  return std::unique_ptr<Owner>(new Owner(*impl_, e));
}

Endpoints::Owner::Owner(const Endpoints::Impl& eps, int e) : eps_(&eps), st_(std::make_unique<State>()) {
  st_->ep = -1;
  const HostEpBackend b{eps.handle, eps.rt, "Endpoints::own"};
  ep::proto::open(b, eps.handle, e, *st_);
}

Endpoints::Owner::~Owner() {
  if (st_->ep < 0) return;
  try {
    close();
  } catch (const std::exception& e) {
    GPUCOMM_LOG(error, "~Endpoints::Owner: " << e.what());
  }
}

int Endpoints::Owner::endpoint() const {
  return st_->ep;
}

uint16_t Endpoints::Owner::irecv(void* buf, size_t capacity, int src, int tag) {
  GPUCOMM_CHECK_ARG(buf != nullptr || capacity == 0, "Endpoints::Owner::irecv", "buf", "is null with capacity > 0");
  const HostEpBackend b{eps_->handle, eps_->rt, "Endpoints::Owner::irecv"};
  const auto cap = static_cast<uint32_t>(capacity > ep::kMaxBytes ? ep::kMaxBytes : capacity);
  return ep::proto::irecv(b, eps_->handle, *st_, buf, cap, src, tag);
}

bool Endpoints::Owner::test(uint16_t id, ep::Status* status) {
  const HostEpBackend b{eps_->handle, eps_->rt, "Endpoints::Owner::test"};
  return ep::proto::test(b, eps_->handle, *st_, id, status);
}

ep::Status Endpoints::Owner::wait(uint16_t id) {
  const HostEpBackend b{eps_->handle, eps_->rt, "Endpoints::Owner::wait"};
  return ep::proto::wait(b, eps_->handle, *st_, id);
}

void Endpoints::Owner::waitall(const uint16_t* ids, size_t n, ep::Status* statuses) {
  const char* call = "Endpoints::Owner::waitall";
  if (n != 0 && ids == nullptr) raise(Errc::invalid_argument, call, "ids is null with n = " + std::to_string(n));
  std::vector<bool> seen(size_t{State::recvs}, false);
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] >= seen.size()) continue;  // the wait names it as a bad request
    if (seen[ids[i]]) {
      raise(Errc::invalid_argument, call,
            "ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) + " names a receive named before");
    }
    seen[ids[i]] = true;
  }
  const HostEpBackend b{eps_->handle, eps_->rt, call};
  for (size_t i = 0; i < n; ++i) {
    const ep::Status s = ep::proto::wait(b, eps_->handle, *st_, ids[i]);
    if (statuses) statuses[i] = s;
  }
}

ep::Status Endpoints::Owner::recv(void* buf, size_t capacity, int src, int tag) {
  return wait(irecv(buf, capacity, src, tag));
}

void Endpoints::Owner::cancel(uint16_t id) {
  const HostEpBackend b{eps_->handle, eps_->rt, "Endpoints::Owner::cancel"};
  ep::proto::cancel(b, *st_, id);
}

bool Endpoints::Owner::iprobe(int src, int tag, ep::Status* status) {
  const HostEpBackend b{eps_->handle, eps_->rt, "Endpoints::Owner::iprobe"};
  return ep::proto::iprobe(b, eps_->handle, *st_, src, tag, status);
}

ep::Status Endpoints::Owner::probe(int src, int tag) {
  const HostEpBackend b{eps_->handle, eps_->rt, "Endpoints::Owner::probe"};
  return ep::proto::probe(b, eps_->handle, *st_, src, tag);
}

uint32_t Endpoints::Owner::progress() {
  const HostEpBackend b{eps_->handle, eps_->rt, "Endpoints::Owner::progress"};
  return ep::proto::progress(b, eps_->handle, *st_);
}

void Endpoints::Owner::close() {
  const HostEpBackend b{eps_->handle, eps_->rt, "Endpoints::Owner::close"};
  ep::proto::close(b, eps_->handle, *st_);
}

}  // namespace gpucomm::msg
