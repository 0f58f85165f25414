// Partitioned point-to-point, the engine (docs/MESSAGING.md, "Partitioned communication"): the
// pool, the init calls and their matching, progress, and the device failure record. The calls of
// a request are in partitioned_request.cpp.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/format.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/messaging/partitioned_protocol.hpp"
#include "messenger_impl.hpp"
#include "partitioned_impl.hpp"

namespace gpucomm::msg {

namespace {

constexpr size_t kDefaultPool = size_t(8) << 20;
constexpr size_t kGranule = 64;

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

// ---- the host backend and the pool ----

void part::HostBackend::load_range(uint64_t* out, const uint64_t* p, size_t n) const {
  if (n == 0) return;
  if (rt_->pe_kind() == PeKind::gpu) {
    rt_->get(out, p, n * sizeof(uint64_t), me_);
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = rt_->signal_fetch(p + i);
  }
}

part::Pool::Pool(size_t bytes) {
  free_[0] = bytes;
}

int64_t part::Pool::take(size_t n) {
  n = round_up(std::max<size_t>(n, 1), kGranule);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < n) continue;
    const size_t off = it->first, len = it->second;
    free_.erase(it);
    if (len > n) free_[off + n] = len - n;
    used_ += n;
    return static_cast<int64_t>(off);
  }
  return -1;
}

void part::Pool::give(size_t offset, size_t n) {
  n = round_up(std::max<size_t>(n, 1), kGranule);
  used_ -= n;
  auto it = free_.emplace(offset, n).first;
  if (auto next = std::next(it); next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

// ---- the engine ----

Partitioned::Engine::~Engine() {
  if (diag_host) (void)cudaFreeHost(diag_host);
}

uint64_t Partitioned::Engine::take(size_t n, bool zero, const char* op) {
  const int64_t off = pool.take(n);
  if (off < 0) {
    raise(Errc::out_of_memory, op,
          "the partitioned pool of " + std::to_string(pool_bytes) + " bytes has no free block of " + std::to_string(n) +
              " bytes (" + std::to_string(pool.in_use()) +
              " in use by live requests: words, arrival flags, staging areas of receive buffers outside the heap); "
              "free requests, receive into symmetric memory, or raise PartitionedOptions::pool_bytes");
  }
  const auto o = static_cast<uint64_t>(off);
  if (zero) {
    const std::vector<char> zeros(n, 0);
    rt.put(at(o), zeros.data(), n, rt.rank());
  }
  return o;
}

void Partitioned::Engine::give(uint64_t offset, size_t n) {
  pool.give(offset, n);
}

void Partitioned::Engine::check_open(const char* op) const {
  if (closed) raise_arg(op, "request", "its Partitioned object was destroyed");
}

void Partitioned::Engine::complete_announcements(bool all) {
  for (auto it = outgoing.begin(); it != outgoing.end();) {
    if (all) {
      (void)m.wait(it->req);
    } else if (!m.test(it->req)) {
      ++it;
      continue;
    }
    give(it->block, sizeof(part::Announcement));
    it = outgoing.erase(it);
  }
}

void Partitioned::Engine::drain_announcements() {
  Message msg{};
  Status st{};
  while (match_comm.improbe(kAnySource, part::kAnnounceTag, &msg, &st)) {
    if (st.bytes != sizeof(part::Announcement)) {
      raise(Errc::protocol, "Partitioned",
            "rank " + std::to_string(rt.rank()) + " received a partitioned init message of " +
                std::to_string(st.bytes) + " bytes from rank " + std::to_string(st.source) + " (expected " +
                std::to_string(sizeof(part::Announcement)) + ")");
    }
    (void)match_comm.mrecv(at(inbox), sizeof(part::Announcement), msg);
    part::Announcement a{};
    rt.get(&a, at(inbox), sizeof a, rt.rank());
    if (a.magic != kPartMagic || a.version != kPartVersion) {
      raise(Errc::protocol, "Partitioned",
            "rank " + std::to_string(rt.rank()) + " received a partitioned init message from rank " +
                std::to_string(st.source) + " of another version (magic " + std::to_string(a.magic) + ", version " +
                std::to_string(a.version) + "; this library: version " + std::to_string(kPartVersion) + ")");
    }
    arrived.push_back({st.source, a});
  }
}

// The receiver's side of a match: checks the sizes, takes the arrival flags, fills its own words,
// then tells the sender where to put the partitions (and that the round started, if it did).
void Partitioned::Engine::match(PartitionedRequest::State& r, const part::Announcement& a) {
  r.peer_parts = a.partitions;
  r.peer_bytes = a.partition_bytes;
  r.sender_words = a.words;
  auto* sender = reinterpret_cast<uint64_t*>(rt.heap().base() + a.words);  // its words, as a symmetric address
  const int peer = r.h.peer;
  if (a.partitions * a.partition_bytes != r.total()) {
    r.refused = "the matching psend_init of rank " + std::to_string(r.h.peer_rank) + " sends " +
                std::to_string(a.partitions) + " partitions of " + std::to_string(a.partition_bytes) + " bytes (" +
                std::to_string(a.partitions * a.partition_bytes) + " bytes), this receive takes " +
                std::to_string(r.h.partitions) + " of " + std::to_string(r.h.partition_bytes) + " (" +
                std::to_string(r.total()) + " bytes): the totals must be equal";
    const uint64_t layout[2] = {r.h.partitions, r.h.partition_bytes};
    rt.put(sender + part::kPeerParts, layout, sizeof layout, peer);
    rt.signal(sender + part::kCts, part::kRefused, SignalOp::set, peer);
    return;
  }
  r.flags_bytes = a.partitions * sizeof(uint64_t);
  r.flags = take(r.flags_bytes, true, "msg::precv_init");
  uint64_t* words = at<uint64_t>(r.words);
  const uint64_t mine[3] = {heap_offset(at(r.flags)), a.partitions, a.partition_bytes};
  rt.put(words + part::kFlagsOff, mine, sizeof mine, rt.rank());
  backend().store(words + part::kMatched, 1);  // release: kernels read words 2..4 after it
  r.matched = true;
  const uint64_t dst = heap_offset(r.staged ? at(r.staging) : r.h.buf);
  const uint64_t desc[4] = {dst, mine[0], r.h.partitions, r.h.partition_bytes};
  rt.put(sender + part::kDstOff, desc, sizeof desc, peer);  // blocking: there before any later signal
  if (r.active) r.send_cts();
}

void Partitioned::Engine::progress_locked() {
  complete_announcements(false);
  drain_announcements();
  // Receives in init order, each taking the first announcement of its communicator, source and tag
  // in arrival order (a sender's announcements arrive in its init order): MPI's matching order.
  for (auto it = unmatched.begin(); it != unmatched.end();) {
    auto r = it->lock();
    if (!r || r->freed) {
      it = unmatched.erase(it);
      continue;
    }
    auto a = std::find_if(arrived.begin(), arrived.end(), [&](const Arrival& x) {
      return x.src_world == r->h.peer && x.a.ctx == r->h.ctx && x.a.tag == r->h.tag;
    });
    if (a == arrived.end()) {
      ++it;
      continue;
    }
    const part::Announcement ann = a->a;
    arrived.erase(a);
    it = unmatched.erase(it);
    match(*r, ann);
  }
  for (auto it = deferring.begin(); it != deferring.end();) {
    auto r = it->lock();
    if (r && !r->freed) r->move_deferred();
    if (!r || r->freed || r->deferred.empty()) {
      it = deferring.erase(it);
    } else {
      ++it;
    }
  }
}

// ---- Partitioned ----

Partitioned::Partitioned(Messenger& m, const PartitionedOptions& opts) {
  Runtime& rt = m.runtime();
  const size_t bytes = round_up(opts.pool_bytes ? opts.pool_bytes : kDefaultPool, 4096);
  if (auto d = rt.bootstrap().agree("pool_bytes=" + std::to_string(bytes))) {
    raise_arg("msg::Partitioned", "pool_bytes",
              "rank " + std::to_string(d.rank) + " uses " + d.value + ", this PE pool_bytes=" + std::to_string(bytes) +
                  ": every PE must use the same pool size");
  }
  e_ = std::make_shared<Engine>(rt, m, bytes);
  Engine& e = *e_;
  e.gpu = rt.pe_kind() == PeKind::gpu;
  e.timeout_ms = env::wait_timeout_ms();
  e.pool_bytes = bytes;
  e.match_comm = m.world();                                         // collective
  e.pool_base = static_cast<char*>(rt.aligned_alloc(4096, bytes));  // collective
  if (e.gpu) {
    // The failure record must stay readable after a kernel trapped: host-mapped memory.
    void* d = nullptr;
    check_cuda(cudaHostAlloc(&d, sizeof(PartDiag), cudaHostAllocMapped), "cudaHostAlloc", "partitioned failure record");
    std::memset(d, 0, sizeof(PartDiag));
    e.diag_host = static_cast<PartDiag*>(d);
    check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&e.diag_dev), d, 0), "cudaHostGetDevicePointer",
               "partitioned failure record");
  }
  e.inbox = e.take(sizeof(part::Announcement), false, "msg::Partitioned");
}

Partitioned::~Partitioned() {
  if (!e_) return;
  Engine& e = *e_;
  try {
    {
      EngineLock lock(e.mu);
      e.complete_announcements(true);
    }
    e.rt.barrier_all();  // every announcement of every PE has arrived where it goes
    EngineLock lock(e.mu);
    e.drain_announcements();
    if (!e.arrived.empty()) {
      GPUCOMM_LOG(warn, "msg::Partitioned: " << e.arrived.size()
                                             << " psend_init call(s) sent to this PE never met a precv_init");
    }
    e.closed = true;
    e.match_comm = Comm();
    e.rt.free(e.pool_base);  // collective
  } catch (const std::exception& ex) {
    e.closed = true;
    detail::log_teardown_error(e.rt, "~Partitioned", ex);
  }
}

void Partitioned::progress() {
  Engine& e = *e_;
  EngineLock lock(e.mu);
  e.check_open("msg::Partitioned::progress");
  e.progress_locked();
}

size_t Partitioned::pool_bytes() const {
  return e_->pool_bytes;
}

size_t Partitioned::pool_in_use() const {
  EngineLock lock(e_->mu);
  return e_->pool.in_use();
}

namespace {

const char* call_name(PartCall c) {
  switch (c) {
    case PartCall::pready:
      return "pready";
    case PartCall::parrived:
      return "parrived";
    case PartCall::wait_arrived:
      return "wait_arrived";
    case PartCall::none:
      break;
  }
  return "?";
}

std::string device_text(const PartDiag& d) {
  const bool send = d.call == PartCall::pready;
  std::string s = "device: rank " + std::to_string(d.rank) + " (communicator rank " + std::to_string(d.comm_rank) +
                  "), " + call_name(d.call) + " of partition " + std::to_string(d.partition) + " (" +
                  (send ? "send to" : "receive from") + " rank " + std::to_string(d.peer_rank) + ", world " +
                  std::to_string(d.peer) + ", context " + std::to_string(d.ctx) + ", tag " + std::to_string(d.tag) +
                  ", round " + std::to_string(d.round) + "): ";
  switch (d.fault) {
    case PartFault::bad_handle:
      s += "not a PartitionedHandle of this library (magic " + hex(d.seen) + ")";
      break;
    case PartFault::wrong_kind:
      s += send ? "the request is a receive" : "the request is a send";
      break;
    case PartFault::bad_partition:
      s += "partition " + std::to_string(d.seen) + " is outside 0.." + std::to_string(d.expected - 1);
      break;
    case PartFault::not_started:
      s += "called before start() (the request never started a round)";
      break;
    case PartFault::twice:
      s += "the partition was already marked ready in round " + std::to_string(d.round) +
           " (twice in a round, or after the round completed without a new start())";
      break;
    case PartFault::refused:
      s += "the receiver refused the match: it takes " + std::to_string(d.expected) + " bytes, this send has " +
           std::to_string(d.seen);
      break;
    case PartFault::timeout:
    case PartFault::aborted: {
      const std::string what =
          d.waited_for == 0
              ? "the receiver to start round " + std::to_string(d.round) + " (its start word at the sender)"
          : d.waited_for == 1 ? std::string(
                                    "the match (the receiver's host matches the init "
                                    "calls inside its partitioned calls)")
                              : "send partition " + std::to_string(d.send_partition) + " to arrive (its flag)";
      if (d.fault == PartFault::aborted) {
        s += "the job failed (rank " + std::to_string(d.seen) + " failed first) while waiting for " + what;
      } else {
        s += "waiting for " + what + ": expected at least " + std::to_string(d.expected) + ", last seen " +
             std::to_string(d.seen) + "; timed out after " + std::to_string(static_cast<double>(d.elapsed_ns) * 1e-9) +
             " s (GPUCOMM_TIMEOUT sets the limit)";
      }
      break;
    }
    case PartFault::none:
      s += "?";
      break;
  }
  s += "; block (" + std::to_string(d.block[0]) + "," + std::to_string(d.block[1]) + "," + std::to_string(d.block[2]) +
       ") thread (" + std::to_string(d.thread[0]) + "," + std::to_string(d.thread[1]) + "," +
       std::to_string(d.thread[2]) + ")";
  return s;
}

}  // namespace

void Partitioned::check_device() const {
  const Engine& e = *e_;
  if (e.diag_host) {
    const PartDiag* d = e.diag_host;
    if (mem::host_load(&d->state, std::memory_order_acquire) == PartDiag::kReady) {
      const Errc code = d->fault == PartFault::timeout   ? Errc::timeout
                        : d->fault == PartFault::aborted ? Errc::peer_failure
                                                         : Errc::invalid_argument;
      raise(code, std::string("msg::") + call_name(d->call), device_text(*d));
    }
  }
  e.rt.check_device();
}

}  // namespace gpucomm::msg
