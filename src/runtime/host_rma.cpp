// Host-side one-sided operations. On host-memory PEs: plain copies and std::atomic_ref on the
// peers' mapped regions. Ordering: data is written with ordinary stores, signals with release
// operations, waits load with acquire, so a PE that sees a signal sees the data put before it.
// GPU PEs go through gpu_rma.cpp (copies and small kernels on the runtime's stream).
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "core/host_wait.hpp"
#include "gpu_kernels.hpp"
#include "gpu_state.hpp"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/format.hpp"
#include "gpucomm/runtime/runtime.hpp"
#include "heap/host_heap.hpp"
#include "proxy_state.hpp"

namespace gpucomm {

// Every operation on a PE checks, before anything indexes a per-PE table: the runtime is open
// and the job has not failed (a put to a dead PE fails), then the PE, then the range.
void Runtime::check_sym(const void* sym, size_t bytes, int pe, const char* op) const {
  check_open(op);
  check_pe(pe, op);
  if (!heap_->contains(sym, bytes)) {
    raise_arg(op, "symmetric address",
              hex(sym) + " (+" + std::to_string(bytes) + " bytes) is not inside the symmetric heap [" +
                  hex(heap_->base()) + ", +" + std::to_string(heap_->size()) + ")");
  }
}

char* Runtime::remote(const void* sym, size_t bytes, int pe, const char* op) const {
  check_sym(sym, bytes, pe, op);
  char* p = static_cast<char*>(heap_->peer_address(sym, pe));
  if (!p) {
    raise(Errc::unsupported, op,
          "PE " + std::to_string(pe) + " is on node " + std::to_string(node_of_[static_cast<size_t>(pe)]) +
              " and not directly reachable from this PE (and no proxy transport serves it)");
  }
  return p;
}

namespace {
proxy::Descriptor descriptor(proxy::Opcode op, int pe, int64_t remote, const void* local, size_t bytes) {
  proxy::Descriptor d{};
  d.opcode = op;
  d.pe = pe;
  d.remote = remote;
  d.local = reinterpret_cast<uint64_t>(local);
  d.bytes = bytes;
  return d;
}
}  // namespace

void Runtime::put(void* dst, const void* src, size_t bytes, int pe) {
  check_sym(dst, bytes, pe, "put");
  GPUCOMM_CHECK_ARG(src != nullptr || bytes == 0, "put", "src", "is null");
  if (host_via_proxy(pe)) {
    if (bytes)
      proxy_call(descriptor(proxy::Opcode::put, pe, static_cast<int64_t>(heap_->offset_of(dst)), src, bytes), "put");
    return;
  }
  char* r = remote(dst, bytes, pe, "put");
  if (gpu_) return gpu_copy(r, src, bytes, "put");
  if (bytes) std::memmove(r, src, bytes);
}

void Runtime::get(void* dst, const void* src, size_t bytes, int pe) {
  check_sym(src, bytes, pe, "get");
  GPUCOMM_CHECK_ARG(dst != nullptr || bytes == 0, "get", "dst", "is null");
  if (host_via_proxy(pe)) {
    if (bytes)
      proxy_call(descriptor(proxy::Opcode::get, pe, static_cast<int64_t>(heap_->offset_of(src)), dst, bytes), "get");
    return;
  }
  char* r = remote(src, bytes, pe, "get");
  if (gpu_) return gpu_copy(dst, r, bytes, "get");
  if (bytes) std::memmove(dst, r, bytes);
}

void Runtime::signal(uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  check_sym(sig, sizeof(uint64_t), pe, "signal");
  GPUCOMM_CHECK_ARG(is_valid(op), "signal", "op", std::to_string(static_cast<uint32_t>(op)) + " is not a SignalOp");
  GPUCOMM_CHECK_ARG(reinterpret_cast<uintptr_t>(sig) % alignof(uint64_t) == 0, "signal", "sig",
                    "is not 8-byte aligned");
  if (host_via_proxy(pe)) {
    auto d = descriptor(proxy::Opcode::signal, pe, 0, nullptr, 0);
    d.sig = static_cast<int64_t>(heap_->offset_of(sig));
    d.op = static_cast<uint8_t>(op);
    d.value = value;
    proxy_call(d, "signal");
    return;
  }
  char* r = remote(sig, sizeof(uint64_t), pe, "signal");
  if (gpu_) return gpu_signal(sig, value, op, pe);
  mem::host_signal(reinterpret_cast<uint64_t*>(r), op, value);
}

void Runtime::put_signal(void* dst, const void* src, size_t bytes, uint64_t* sig, uint64_t value, SignalOp op, int pe) {
  check_sym(dst, bytes, pe, "put_signal");
  check_sym(sig, sizeof(uint64_t), pe, "put_signal");
  GPUCOMM_CHECK_ARG(reinterpret_cast<uintptr_t>(sig) % alignof(uint64_t) == 0, "put_signal", "sig",
                    "is not 8-byte aligned");
  GPUCOMM_CHECK_ARG(is_valid(op), "put_signal", "op", std::to_string(static_cast<uint32_t>(op)) + " is not a SignalOp");
  GPUCOMM_CHECK_ARG(src != nullptr || bytes == 0, "put_signal", "src", "is null");
  if (host_via_proxy(pe)) {
    // One descriptor: the agent issues the signal once the data is complete at the target.
    auto d = descriptor(bytes ? proxy::Opcode::put_signal : proxy::Opcode::signal, pe,
                        static_cast<int64_t>(heap_->offset_of(dst)), bytes ? src : nullptr, bytes);
    d.sig = static_cast<int64_t>(heap_->offset_of(sig));
    d.op = static_cast<uint8_t>(op);
    d.value = value;
    proxy_call(d, "put_signal");
    return;
  }
  put(dst, src, bytes, pe);
  signal(sig, value, op, pe);  // release: the data is visible before the signal
}

uint64_t Runtime::signal_fetch(const uint64_t* sig) {
  char* r = remote(sig, sizeof(uint64_t), rank_, "signal_fetch");
  if (gpu_) {
    uint64_t v;
    gpu_read(&v, r, sizeof v);
    return v;
  }
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(r)).load(std::memory_order_acquire);
}

template <class T>
T Runtime::wait_until(T* ivar, Cmp cmp, std::type_identity_t<T> value) {
  static_assert(std::is_integral_v<T>);
  remote(ivar, sizeof(T), rank_, "wait_until");
  GPUCOMM_CHECK_ARG(is_valid(cmp), "wait_until", "cmp", std::to_string(static_cast<uint32_t>(cmp)) + " is not a Cmp");
  GPUCOMM_CHECK_ARG(reinterpret_cast<uintptr_t>(ivar) % alignof(T) == 0, "wait_until", "ivar", "is not aligned");
  if (gpu_) return gpu_wait_until(ivar, cmp, value);
  std::atomic_ref<T> word(*ivar);
  T seen = word.load(std::memory_order_acquire);
  detail::host_wait([&] { return compare(seen = word.load(std::memory_order_acquire), cmp, value); }, *bootstrap_,
                    timeout_ms_,
                    [&] {
                      return "rank " + std::to_string(rank_) + " wait_until(heap+" + hex(heap_->offset_of(ivar)) + " " +
                             cmp_name(cmp) + " " + std::to_string(value) + ", last seen " + std::to_string(seen) + ")";
                    });
  return seen;
}

template <class T>
bool Runtime::test(T* ivar, Cmp cmp, std::type_identity_t<T> value) {
  remote(ivar, sizeof(T), rank_, "test");
  GPUCOMM_CHECK_ARG(is_valid(cmp), "test", "cmp", std::to_string(static_cast<uint32_t>(cmp)) + " is not a Cmp");
  if (gpu_) {
    T v;
    gpu_read(&v, ivar, sizeof v);
    return compare(v, cmp, value);
  }
  return compare(std::atomic_ref<T>(*ivar).load(std::memory_order_acquire), cmp, value);
}

// One atomic on `pe`'s copy of `dst`: through the proxy, a kernel (GPU PEs) or std::atomic_ref.
// `a` is the operand (the desired value of compare_swap), `b` the compare value.
template <class T>
T Runtime::host_atomic(AtomicOp op, const T* dst, T a, T b, int pe, const char* name) {
  check_sym(dst, sizeof(T), pe, name);
  GPUCOMM_CHECK_ARG(reinterpret_cast<uintptr_t>(dst) % sizeof(T) == 0, name, "dst",
                    "is not aligned to " + std::to_string(sizeof(T)) + " bytes");
  if (host_via_proxy(pe)) {
    auto d = descriptor(proxy::Opcode::atomic, pe, static_cast<int64_t>(heap_->offset_of(dst)), nullptr, 0);
    d.op = static_cast<uint8_t>(op);
    d.width = sizeof(T);
    d.value = static_cast<uint64_t>(a);
    d.compare = static_cast<uint64_t>(b);
    return static_cast<T>(proxy_call(d, name, true));
  }
  char* r = remote(dst, sizeof(T), pe, name);
  if (gpu_) {
    return static_cast<T>(
        gpu_atomic(op, sizeof(T), const_cast<T*>(dst), static_cast<uint64_t>(a), static_cast<uint64_t>(b), pe, name));
  }
  return static_cast<T>(mem::host_apply_atomic(r, sizeof(T), op, static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
}

template <class T>
T Runtime::atomic_fetch(const T* dst, int pe) {
  return host_atomic<T>(AtomicOp::fetch, dst, T(0), T(0), pe, "atomic_fetch");
}
template <class T>
void Runtime::atomic_set(T* dst, std::type_identity_t<T> value, int pe) {
  host_atomic<T>(AtomicOp::set, dst, value, T(0), pe, "atomic_set");
}
template <class T>
T Runtime::atomic_fetch_add(T* dst, std::type_identity_t<T> value, int pe) {
  return host_atomic<T>(AtomicOp::fetch_add, dst, value, T(0), pe, "atomic_fetch_add");
}
template <class T>
T Runtime::atomic_swap(T* dst, std::type_identity_t<T> value, int pe) {
  return host_atomic<T>(AtomicOp::swap, dst, value, T(0), pe, "atomic_swap");
}
template <class T>
T Runtime::atomic_compare_swap(T* dst, std::type_identity_t<T> expected, std::type_identity_t<T> desired, int pe) {
  return host_atomic<T>(AtomicOp::compare_swap, dst, desired, expected, pe, "atomic_compare_swap");
}
template <class T>
T Runtime::atomic_fetch_and(T* dst, std::type_identity_t<T> value, int pe) {
  return host_atomic<T>(AtomicOp::fetch_and, dst, value, T(0), pe, "atomic_fetch_and");
}
template <class T>
T Runtime::atomic_fetch_or(T* dst, std::type_identity_t<T> value, int pe) {
  return host_atomic<T>(AtomicOp::fetch_or, dst, value, T(0), pe, "atomic_fetch_or");
}
template <class T>
T Runtime::atomic_fetch_xor(T* dst, std::type_identity_t<T> value, int pe) {
  return host_atomic<T>(AtomicOp::fetch_xor, dst, value, T(0), pe, "atomic_fetch_xor");
}

void Runtime::fence() {
  check_open("fence");
  if (gpu_) return gpu_sync("fence");
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
void Runtime::quiet() {
  check_open("quiet");
  proxy_quiet();
  if (gpu_) return gpu_sync("quiet");
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Runtime::barrier(const Team& team) {
  check_open("barrier");
  GPUCOMM_CHECK_ARG(team.valid(), "barrier", "team", "is not a team this PE belongs to");
  quiet();
  Team::State& t = *team.state_;
  bool reachable = heap_ != nullptr;
  for (int m : t.members) reachable = reachable && heap_->peer_base(m) != nullptr;
  // GPU PEs: the device barrier of the team, unless some member is reached through UCX (the
  // bootstrap's barrier then).
  const bool direct = reachable && heap_->kind() == heap::MemoryKind::host;
  if (gpu_ && reachable && !(gpu_->handle.flags & kHandleSetSignalsOnly)) {
    gpu_device_barrier(team);
  } else if (direct) {
    host_barrier(t);
  } else {
    std::string group = "team" + std::to_string(t.id) + "/" + std::to_string(t.collective_seq++) + "/barrier";
    bootstrap_->gather(group, static_cast<int>(t.members.size()), t.my_index, "");
  }
  // Every PE passed this barrier after a wait of this PE failed and the program caught it: the job
  // is in step again, so finalize() need not abort for that failure.
  if (static_cast<int>(t.members.size()) == size_) bootstrap_->forgive_local_failure();
}

// Dissemination barrier over the host heap's control blocks: in round k, PE i notifies PE
// i + 2^k (a release increment of that PE's round-k counter) and waits for its own round-k
// counter to reach the barrier's epoch (acquire). ceil(log2 n) rounds, no central counter.
void Runtime::host_barrier(Team::State& t) {
  auto* hh = static_cast<heap::HostHeap*>(heap_.get());
  const int n = static_cast<int>(t.members.size());
  const uint64_t epoch = ++t.barrier_epoch;
  uint64_t* mine = hh->control(rank_)->barrier_flags[t.id];
  for (int round = 0, dist = 1; dist < n; ++round, dist <<= 1) {
    int to = t.members[static_cast<size_t>((t.my_index + dist) % n)];
    int from = t.members[static_cast<size_t>((t.my_index - dist % n + n) % n)];
    std::atomic_ref<uint64_t>(hh->control(to)->barrier_flags[t.id][round]).fetch_add(1, std::memory_order_acq_rel);
    std::atomic_ref<uint64_t> flag(mine[round]);
    detail::host_wait([&] { return flag.load(std::memory_order_acquire) >= epoch; }, *bootstrap_, timeout_ms_,
                      [&] {
                        return "rank " + std::to_string(rank_) + " barrier of team " + std::to_string(t.id) + " (" +
                               std::to_string(n) + " PEs), round " + std::to_string(round) + ": waiting for rank " +
                               std::to_string(from) + " (counter " + std::to_string(flag.load()) + ", expected " +
                               std::to_string(epoch) + ")" +
                               (bootstrap_->failed() ? std::string() : "; " + barrier_laggards(t, epoch));
                      });
  }
}

// Who holds a host barrier up, read from every member's counters: member j's round-r
// notification raised the round-r counter of member j + 2^r to the epoch, so the members that
// notified the fewest rounds are the ones stalled (those with none have not entered it). The PE
// this PE waits for may itself be waiting for them: they are the ones to blame.
std::string Runtime::barrier_laggards(const Team::State& t, uint64_t epoch) const {
  auto* hh = static_cast<heap::HostHeap*>(heap_.get());
  const int n = static_cast<int>(t.members.size());
  int least = n;  // more than any number of rounds
  std::vector<int> who;
  for (int j = 0; j < n; ++j) {
    if (j == t.my_index) continue;  // this PE is known to wait
    int sent = 0;
    for (int round = 0, dist = 1; dist < n; ++round, dist <<= 1, ++sent) {
      const int to = t.members[static_cast<size_t>((j + dist) % n)];
      if (mem::host_load(&hh->control(to)->barrier_flags[t.id][round], std::memory_order_acquire) < epoch) break;
    }
    if (sent < least) {
      least = sent;
      who.clear();
    }
    if (sent == least) who.push_back(t.members[static_cast<size_t>(j)]);
  }
  std::string ranks;
  for (int r : who) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  if (who.empty()) return "no other member";
  if (least == 0) return "stalled: rank(s) " + ranks + " did not enter the barrier";
  return "stalled: rank(s) " + ranks + " entered it but did not get past round " + std::to_string(least);
}

#define GPUCOMM_INSTANTIATE(T)                                                                           \
  template T Runtime::wait_until<T>(T*, Cmp, std::type_identity_t<T>);                                   \
  template bool Runtime::test<T>(T*, Cmp, std::type_identity_t<T>);                                      \
  template T Runtime::atomic_fetch<T>(const T*, int);                                                    \
  template void Runtime::atomic_set<T>(T*, std::type_identity_t<T>, int);                                \
  template T Runtime::atomic_fetch_add<T>(T*, std::type_identity_t<T>, int);                             \
  template T Runtime::atomic_swap<T>(T*, std::type_identity_t<T>, int);                                  \
  template T Runtime::atomic_compare_swap<T>(T*, std::type_identity_t<T>, std::type_identity_t<T>, int); \
  template T Runtime::atomic_fetch_and<T>(T*, std::type_identity_t<T>, int);                             \
  template T Runtime::atomic_fetch_or<T>(T*, std::type_identity_t<T>, int);                              \
  template T Runtime::atomic_fetch_xor<T>(T*, std::type_identity_t<T>, int);
GPUCOMM_INSTANTIATE(int32_t)
GPUCOMM_INSTANTIATE(uint32_t)
GPUCOMM_INSTANTIATE(int64_t)
GPUCOMM_INSTANTIATE(uint64_t)
#undef GPUCOMM_INSTANTIATE

}  // namespace gpucomm
