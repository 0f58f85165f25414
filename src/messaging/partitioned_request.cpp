// Partitioned point-to-point, the requests (docs/MESSAGING.md, "Partitioned communication"): the
// init calls and, per round, start, pready, parrived, test and wait on the host. The protocol
// steps they share with kernels are in partitioned_protocol.hpp; the engine in partitioned.cpp.
#include <algorithm>
#include <string>
#include <vector>

#include "core/host_wait.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/partitioned_protocol.hpp"
#include "partitioned_impl.hpp"

namespace gpucomm::msg {

namespace {

constexpr uint64_t kMaxTotal = uint64_t(1) << 48;

// "3, 7, 12 (and 5 more)": the indices i < n with bad(i).
template <class Bad>
std::string indices(size_t n, Bad bad) {
  std::string s;
  size_t shown = 0, more = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!bad(i)) continue;
    if (shown < 16) {
      s += (shown ? ", " : "") + std::to_string(i);
      ++shown;
    } else {
      ++more;
    }
  }
  if (more) s += " (and " + std::to_string(more) + " more)";
  return s.empty() ? "none" : s;
}

void check_init(const Comm& comm, const char* op, const void* buf, int partitions, size_t partition_bytes, int peer,
                const char* peer_arg, int tag) {
  if (!comm.valid()) raise_arg(op, "comm", "is not a communicator (default-constructed or moved from)");
  if (partitions < 1) raise_arg(op, "partitions", std::to_string(partitions) + " is not at least 1");
  if (partition_bytes < 1) raise_arg(op, "partition_bytes", "is 0: a partition holds at least one byte");
  if (partition_bytes > kMaxTotal / static_cast<uint64_t>(partitions)) {
    raise_arg(
        op, "partition_bytes",
        std::to_string(partitions) + " partitions of " + std::to_string(partition_bytes) + " bytes exceed 2^48 bytes");
  }
  if (buf == nullptr) raise_arg(op, "buf", "is null");
  if (peer < 0 || peer >= comm.size()) {
    raise_arg(op, peer_arg,
              std::to_string(peer) + " is outside the communicator's ranks 0.." + std::to_string(comm.size() - 1) +
                  " (partitioned calls take no wildcards and no PROC_NULL)");
  }
  if (tag < 0 || tag > kTagUpperBound) {
    raise_arg(op, "tag",
              std::to_string(tag) + " is outside 0.." + std::to_string(kTagUpperBound) +
                  " (partitioned receives take no ANY_TAG)");
  }
}

}  // namespace

std::string PartitionedRequest::State::what() const {
  const bool send = h.kind == PartKind::send;
  return std::string(send ? "send to" : "receive from") + " rank " + std::to_string(h.peer_rank) + " (world " +
         std::to_string(h.peer) + "), context " + std::to_string(h.ctx) + ", tag " + std::to_string(h.tag) + ", " +
         std::to_string(h.partitions) + " x " + std::to_string(h.partition_bytes) + " bytes";
}

void PartitionedRequest::State::send_cts() {
  auto* sender = reinterpret_cast<uint64_t*>(e->rt.heap().base() + sender_words);
  e->rt.signal(sender + part::kCts, round, SignalOp::set, h.peer);  // release: after the description
  cts_sent = round;
}

void PartitionedRequest::State::move_deferred() {
  if (!active || deferred.empty()) return;
  const part::HostBackend b = e->backend();
  if (part::receiver_state(b.load(&h.words[part::kCts]), round) != part::Receiver::started) return;
  for (const int i : deferred) part::send_partition(b, coop::Thread{}, h, round, static_cast<uint64_t>(i));
  deferred.clear();
}

void PartitionedRequest::State::release() {
  if (freed) return;
  freed = true;
  const bool untouched = h.kind == PartKind::send ? !announced : !matched;  // no partner knows the blocks
  if (e->closed || active || !(completed_once || untouched)) return;
  e->give(words, words_bytes);
  if (flags_bytes) e->give(flags, flags_bytes);
  if (staged) e->give(staging, total());
}

PartitionedRequest::State::~State() {
  if (!e || freed) return;
  try {
    EngineLock lock(e->mu);
    release();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

// ---- Partitioned: the init calls ----

namespace {

// A request's state with its words (`words` of them, zeroed before any announcement can bring
// writes) and the handle that host calls and kernels read. Under the engine's lock.
std::shared_ptr<PartitionedRequest::State> new_request(const std::shared_ptr<Partitioned::Engine>& e, const char* op,
                                                       const Comm& comm, PartKind kind, const void* buf, int partitions,
                                                       size_t partition_bytes, int peer, int tag, size_t words) {
  check_init(comm, op, buf, partitions, partition_bytes, peer, kind == PartKind::send ? "dest" : "source", tag);
  e->check_open(op);
  auto s = std::make_shared<PartitionedRequest::State>();
  s->e = e;
  s->words_bytes = words * sizeof(uint64_t);
  s->words = e->take(s->words_bytes, true, op);
  PartitionedHandle& h = s->h;
  h.magic = kPartMagic;
  h.version = kPartVersion;
  h.bytes = sizeof(PartitionedHandle);
  h.kind = kind;
  h.partitions = static_cast<uint32_t>(partitions);
  h.partition_bytes = partition_bytes;
  h.peer = comm.team().world_rank(peer);
  h.peer_rank = peer;
  h.comm_rank = comm.rank();
  h.ctx = comm.context_id();
  h.tag = tag;
  h.buf = const_cast<char*>(static_cast<const char*>(buf));
  h.words = e->at<uint64_t>(s->words);
  h.diag = e->diag_dev;
  if (e->gpu) h.dev = e->rt.device_handle();
  return s;
}

}  // namespace

PartitionedRequest Partitioned::psend_init(const Comm& comm, const void* buf, int partitions, size_t partition_bytes,
                                           int dest, int tag) {
  const char* op = "msg::psend_init";
  Engine& e = *e_;
  EngineLock lock(e.mu);
  auto s = new_request(e_, op, comm, PartKind::send, buf, partitions, partition_bytes, dest, tag,
                       part::kHeaderWords + static_cast<size_t>(partitions));
  const part::Announcement a{.magic = kPartMagic,
                             .version = kPartVersion,
                             .ctx = s->h.ctx,
                             .tag = tag,
                             .src_rank = s->h.comm_rank,
                             .reserved = 0,
                             .partitions = s->h.partitions,
                             .partition_bytes = partition_bytes,
                             .words = e.heap_offset(s->h.words)};
  const uint64_t block = e.take(sizeof a, false, op);
  e.rt.put(e.at(block), &a, sizeof a, e.rt.rank());
  const Request q = e.match_comm.isend(e.at(block), sizeof a, s->h.peer, part::kAnnounceTag);
  e.outgoing.push_back({q, block});
  s->announced = true;
  return PartitionedRequest(std::move(s));
}

PartitionedRequest Partitioned::precv_init(const Comm& comm, void* buf, int partitions, size_t partition_bytes,
                                           int source, int tag) {
  const char* op = "msg::precv_init";
  Engine& e = *e_;
  EngineLock lock(e.mu);
  auto s = new_request(e_, op, comm, PartKind::recv, buf, partitions, partition_bytes, source, tag, part::kHeaderWords);
  if (!e.rt.heap().contains(buf, s->total())) {
    // Outside the heap the sender cannot put: the partitions land in a staging area of the pool
    // and host calls copy them out.
    s->staging = e.take(s->total(), false, op);
    s->staged = true;
    s->user_buf = static_cast<char*>(buf);
    s->copied.assign(static_cast<size_t>(partitions), 0);
  }
  e.unmatched.push_back(s);
  e.progress_locked();
  return PartitionedRequest(std::move(s));
}

// ---- PartitionedRequest ----

PartitionedRequest::State& PartitionedRequest::st(const char* op) const {
  if (!s_) raise_arg(op, "request", "is not a partitioned request (default-constructed, moved from or freed)");
  s_->e->check_open(op);
  return *s_;
}

PartKind PartitionedRequest::kind() const {
  return st("msg::PartitionedRequest::kind").h.kind;
}
int PartitionedRequest::partitions() const {
  return static_cast<int>(st("msg::PartitionedRequest::partitions").h.partitions);
}
size_t PartitionedRequest::partition_bytes() const {
  return st("msg::PartitionedRequest::partition_bytes").h.partition_bytes;
}
uint64_t PartitionedRequest::round() const {
  State& s = st("msg::PartitionedRequest::round");
  EngineLock lock(s.e->mu);
  return s.round;
}
bool PartitionedRequest::active() const {
  State& s = st("msg::PartitionedRequest::active");
  EngineLock lock(s.e->mu);
  return s.active;
}
bool PartitionedRequest::staged() const {
  return st("msg::PartitionedRequest::staged").staged;
}

namespace {

// The refusal of a match, on the side that learns of it.
[[noreturn]] void raise_refused(const char* op, const PartitionedRequest::State& s) {
  if (!s.refused.empty()) raise_arg(op, "partitions", s.what() + ": " + s.refused);
  const part::HostBackend b = s.e->backend();
  const uint64_t parts = b.load(&s.h.words[part::kPeerParts]), bytes = b.load(&s.h.words[part::kPeerBytes]);
  raise_arg(op, "partitions",
            s.what() + ": the matching precv_init of rank " + std::to_string(s.h.peer_rank) + " takes " +
                std::to_string(parts) + " partitions of " + std::to_string(bytes) + " bytes (" +
                std::to_string(parts * bytes) + " bytes), this send has " + std::to_string(s.total()) +
                " bytes: the totals must be equal");
}

bool refused(const PartitionedRequest::State& s) {
  if (s.h.kind == PartKind::recv) return !s.refused.empty();
  return part::receiver_state(s.e->backend().load(&s.h.words[part::kCts]), 1) == part::Receiver::refused;
}

// A host call's checks (partitioned_protocol.hpp, check_call), as an error naming the argument.
void check_call(const char* op, const PartitionedRequest::State& s, PartKind kind, int partition) {
  const uint64_t index = partition < 0 ? ~uint64_t(0) : static_cast<uint64_t>(partition);
  switch (part::check_call(s.h, kind, index, s.active || (kind == PartKind::recv && s.round > 0) ? 1 : 0)) {
    case PartFault::none:
      return;
    case PartFault::wrong_kind:
      raise_arg(op, "request", s.what() + ": is a " + (kind == PartKind::send ? "receive" : "send") + " request");
    case PartFault::bad_partition:
      raise_arg(
          op, "partition",
          std::to_string(partition) + " is outside 0.." + std::to_string(s.h.partitions - 1) + " (" + s.what() + ")");
    default:
      raise_arg(op, "request",
                s.what() + ": is not active (round " + std::to_string(s.round) +
                    (s.round ? " completed" : ", never started") + "): start() begins a round");
  }
}

// start and free need an inactive request.
void check_inactive(const char* op, const PartitionedRequest::State& s, const char* before) {
  if (!s.active) return;
  raise_arg(op, "request",
            s.what() + ": round " + std::to_string(s.round) +
                " is still active: complete it with wait or test before " + before);
}

// Sender: marks the partitions ready (every index checked before any moves) and sends those
// whose receiver started the round; the others wait in `deferred` for progress.
void pready_many(const char* op, const std::shared_ptr<PartitionedRequest::State>& sp,
                 std::span<const int> partitions) {
  if (!sp) raise_arg(op, "request", "is not a partitioned request (default-constructed, moved from or freed)");
  PartitionedRequest::State& s = *sp;
  Partitioned::Engine& e = *s.e;
  EngineLock lock(e.mu);
  e.check_open(op);
  for (const int i : partitions) check_call(op, s, PartKind::send, i);
  const part::HostBackend b = e.backend();
  for (const int i : partitions) {
    if (part::mark_ready(b, s.h, s.round, static_cast<uint64_t>(i)) == s.round) {
      raise_arg(
          op, "partition",
          std::to_string(i) + " was already marked ready in round " + std::to_string(s.round) + " (" + s.what() + ")");
    }
    switch (part::receiver_state(b.load(&s.h.words[part::kCts]), s.round)) {
      case part::Receiver::started:
        part::send_partition(b, coop::Thread{}, s.h, s.round, static_cast<uint64_t>(i));
        break;
      case part::Receiver::refused:
        raise_refused(op, s);
      case part::Receiver::waiting:
        if (s.deferred.empty()) e.deferring.push_back(sp);
        s.deferred.push_back(i);
        break;
    }
  }
  if (!s.deferred.empty()) e.progress_locked();  // a receiver on this PE may be waiting for the match
}

}  // namespace

void PartitionedRequest::start() {
  const char* op = "msg::PartitionedRequest::start";
  State& s = st(op);
  Partitioned::Engine& e = *s.e;
  EngineLock lock(e.mu);
  check_inactive(op, s, "the next start");
  if (refused(s)) raise_refused(op, s);
  const part::HostBackend b = e.backend();
  s.round += 1;
  s.active = true;
  b.store(&s.h.words[part::kRound], s.round);  // what kernels read (launched after this call)
  if (s.h.kind == PartKind::send) {
    s.deferred.clear();
  } else if (s.matched) {
    s.send_cts();
  }
  e.progress_locked();
}

void PartitionedRequest::pready(int partition) {
  pready_many("msg::PartitionedRequest::pready", s_, std::span<const int>(&partition, 1));
}

void PartitionedRequest::pready_range(int low, int high) {
  const char* op = "msg::PartitionedRequest::pready_range";
  st(op);
  if (low > high) raise_arg(op, "low", std::to_string(low) + " is above high = " + std::to_string(high));
  std::vector<int> all(static_cast<size_t>(static_cast<int64_t>(high) - low) + 1);
  for (size_t i = 0; i < all.size(); ++i) all[i] = low + static_cast<int>(i);
  pready_many(op, s_, all);
}

void PartitionedRequest::pready_list(std::span<const int> partitions) {
  pready_many("msg::PartitionedRequest::pready_list", s_, partitions);
}

namespace {

// Receiver, under the lock: copies staged partitions [lo, hi) of the round out (once per round).
void copy_out(PartitionedRequest::State& s, size_t lo, size_t hi) {
  const size_t n = s.h.partition_bytes;
  while (lo < hi) {
    if (s.copied[lo] == s.round) {
      ++lo;
      continue;
    }
    size_t end = lo;
    while (end < hi && s.copied[end] != s.round) s.copied[end++] = s.round;
    s.e->rt.get(s.user_buf + lo * n, s.e->at(s.staging) + lo * n, (end - lo) * n, s.e->rt.rank());
    lo = end;
  }
}

// Under the lock: whether the active round completed (then the request becomes inactive).
bool try_complete(const char* op, PartitionedRequest::State& s) {
  Partitioned::Engine& e = *s.e;
  e.progress_locked();
  if (refused(s)) raise_refused(op, s);
  if (!s.active) return true;
  const part::HostBackend b = e.backend();
  if (s.h.kind == PartKind::send) {
    s.move_deferred();
    if (b.load(&s.h.words[part::kSent]) < s.round * s.h.partitions) return false;
  } else {
    if (!s.matched) return false;
    std::vector<uint64_t> flags(s.peer_parts);
    b.load_range(flags.data(), e.at<uint64_t>(s.flags), flags.size());
    if (std::any_of(flags.begin(), flags.end(), [&](uint64_t f) { return f < s.round; })) return false;
    if (s.staged) copy_out(s, 0, s.h.partitions);
  }
  s.active = false;
  s.completed_once = true;
  return true;
}

// Who waits for what, for a wait that failed.
std::string describe_wait(PartitionedRequest::State& s) {
  Partitioned::Engine& e = *s.e;
  EngineLock lock(e.mu);
  const part::HostBackend b = e.backend();
  std::string d = "rank " + std::to_string(e.rt.rank()) + " (communicator rank " + std::to_string(s.h.comm_rank) +
                  ") partitioned " + s.what() + ", wait for round " + std::to_string(s.round) + ": ";
  if (s.h.kind == PartKind::send) {
    const uint64_t cts = b.load(&s.h.words[part::kCts]);
    const uint64_t sent = b.load(&s.h.words[part::kSent]) - (s.round - 1) * s.h.partitions;
    std::vector<uint64_t> ready(s.h.partitions);
    b.load_range(ready.data(), &s.h.words[part::kReady], ready.size());
    d += std::to_string(sent) + " of " + std::to_string(s.h.partitions) +
         " partitions sent; not marked ready: " + indices(ready.size(), [&](size_t i) { return ready[i] != s.round; });
    if (cts < s.round) {
      d += "; the receiver has not started round " + std::to_string(s.round) + " (its start word holds " +
           std::to_string(cts) + (cts == 0 ? ": not matched yet, or never started" : "") + ")";
    }
  } else if (!s.matched) {
    d += "not matched: no psend_init of rank " + std::to_string(s.h.peer_rank) + " with tag " +
         std::to_string(s.h.tag) + " on this communicator arrived";
  } else {
    std::vector<uint64_t> flags(s.peer_parts);
    b.load_range(flags.data(), e.at<uint64_t>(s.flags), flags.size());
    d += "send partitions not arrived (of " + std::to_string(s.peer_parts) + " x " + std::to_string(s.peer_bytes) +
         " bytes): " + indices(flags.size(), [&](size_t i) { return flags[i] < s.round; }) +
         "; expected flags >= " + std::to_string(s.round);
  }
  return d;
}

}  // namespace

bool PartitionedRequest::parrived(int partition) {
  const char* op = "msg::PartitionedRequest::parrived";
  State& s = st(op);
  Partitioned::Engine& e = *s.e;
  EngineLock lock(e.mu);
  check_call(op, s, PartKind::recv, partition);
  if (refused(s)) raise_refused(op, s);
  if (!s.active) return true;  // the round completed: its data is in place
  e.progress_locked();
  if (part::missing(e.backend(), s.h, s.round, static_cast<uint64_t>(partition)) != part::kAllArrived) return false;
  if (s.staged) copy_out(s, static_cast<size_t>(partition), static_cast<size_t>(partition) + 1);
  return true;
}

bool PartitionedRequest::test() {
  const char* op = "msg::PartitionedRequest::test";
  State& s = st(op);
  EngineLock lock(s.e->mu);
  return try_complete(op, s);
}

void PartitionedRequest::wait() {
  const char* op = "msg::PartitionedRequest::wait";
  State& s = st(op);
  Partitioned::Engine& e = *s.e;
  gpucomm::detail::host_wait(
      [&] {
        EngineLock lock(e.mu);
        return try_complete(op, s);
      },
      &e.rt.bootstrap(), e.timeout_ms, [&] { return describe_wait(s); });
}

void PartitionedRequest::free() {
  const char* op = "msg::PartitionedRequest::free";
  State& s = st(op);
  Partitioned::Engine& e = *s.e;
  EngineLock lock(e.mu);
  check_inactive(op, s, "freeing the request");
  s.release();
  s_.reset();
}

PartitionedHandle PartitionedRequest::device_checked(uint32_t header_version, size_t header_bytes) const {
  const char* op = "msg::PartitionedRequest::device";
  State& s = st(op);
  if (header_version != kPartVersion || header_bytes != sizeof(PartitionedHandle)) {
    raise_arg(op, "headers",
              "the program was compiled against partitioned headers of version " + std::to_string(header_version) +
                  " (" + std::to_string(header_bytes) + "-byte PartitionedHandle), this library has version " +
                  std::to_string(kPartVersion) + ": rebuild it against this library's headers");
  }
  if (!s.e->gpu) {
    raise(Errc::unsupported, op,
          "partitioned handles for kernels exist on GPU PEs only (host-memory PEs use the host calls)");
  }
  if (s.staged) {
    raise_arg(op, "buf",
              s.what() +
                  ": the receive buffer lies outside the symmetric heap, so partitions arrive in a staging area "
                  "that only host calls copy out; allocate it with Runtime::malloc for kernels");
  }
  return s.h;
}

}  // namespace gpucomm::msg
