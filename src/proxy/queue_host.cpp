// CPU producers of descriptor queues: reserve a ticket, wait for space with the cached consumer
// index, fill the slot, release the stamp, ring the doorbell in batches.
#include "gpucomm/proxy/queue_host.hpp"

#include <atomic>
#include <chrono>
#include <cstring>

#include "core/host_wait.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::proxy {

namespace {
uint64_t load_acquire(const uint64_t* p) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_acquire);
}
uint32_t status_of(const QueueView& q) {
  return std::atomic_ref<uint32_t>(*q.status).load(std::memory_order_acquire);
}
void raise_max(uint64_t* word, uint64_t v) {
  std::atomic_ref<uint64_t> a(*word);
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_release, std::memory_order_relaxed)) {
  }
}
uint64_t host_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
std::string who(const HostWait& w, const QueueView& q) {
  return "rank " + std::to_string(w.rank) + " proxy queue " + std::to_string(q.queue_id);
}
}  // namespace

const char* fault_name(QueueFault f) {
  switch (f) {
    case QueueFault::none:
      return "none";
    case QueueFault::bad_opcode:
      return "bad opcode";
    case QueueFault::bad_pe:
      return "bad PE";
    case QueueFault::out_of_heap:
      return "address outside the symmetric heap";
    case QueueFault::bad_size:
      return "bad size or alignment";
    case QueueFault::bad_address:
      return "bad local address";
    case QueueFault::transport:
      return "transport failure";
    case QueueFault::agent_stopped:
      return "agent stopped";
    case QueueFault::unreachable:
      return "PE unreachable from this agent";
  }
  return "unknown fault";
}

const char* field_name(Field f) {
  switch (f) {
    case Field::none:
      return "-";
    case Field::opcode:
      return "opcode";
    case Field::op:
      return "op";
    case Field::width:
      return "width";
    case Field::pe:
      return "pe";
    case Field::remote:
      return "remote";
    case Field::local:
      return "local";
    case Field::bytes:
      return "bytes";
    case Field::sig:
      return "sig";
    case Field::value:
      return "value";
  }
  return "?";
}

void raise_fault(uint32_t queue_id, QueueFault f, uint64_t ticket, Field field, const char* what,
                 const std::string& agent_detail) {
  std::string text = "proxy queue " + std::to_string(queue_id) + " failed at ticket " + std::to_string(ticket) + ": " +
                     fault_name(f) + " (field " + field_name(field) + ")";
  if (!agent_detail.empty()) text += ": " + agent_detail;
  const bool caller_fault = f != QueueFault::transport && f != QueueFault::agent_stopped;
  raise(caller_fault ? Errc::invalid_argument : Errc::peer_failure, what, text);
}

void check_queue(const QueueView& q, const char* what, const std::string& agent_detail) {
  const uint32_t s = status_of(q);
  if (s == 0) return;
  raise_fault(q.queue_id, static_cast<QueueFault>(s),
              std::atomic_ref<uint64_t>(*q.fault_ticket).load(std::memory_order_relaxed),
              static_cast<Field>(std::atomic_ref<uint32_t>(*q.fault_field).load(std::memory_order_relaxed)), what,
              agent_detail);
}

uint64_t host_post(const QueueView& q, const Descriptor& d, const HostWait& w) {
  check_queue(q, "proxy post");
  const uint64_t began = q.trace ? host_ns() : 0;
  const uint64_t t = std::atomic_ref<uint64_t>(*q.head).fetch_add(1, std::memory_order_relaxed);
  std::atomic_ref<uint64_t> cache(*q.consumed_cache);
  // Acquire/release on the cache too: a producer that trusts the cache must also see the agent's
  // reads of the slot it is about to overwrite as finished (they precede the agent's release of
  // `consumed`, which the refreshing producer acquired).
  if (t >= cache.load(std::memory_order_acquire) + q.capacity) {
    uint64_t seen = 0;
    detail::host_wait(
        [&] {
          if (status_of(q) != 0) return true;
          seen = load_acquire(q.consumed);
          return t < seen + q.capacity;
        },
        w.liveness, w.timeout_ms,
        [&] {
          return who(w, q) + ": waiting for space for ticket " + std::to_string(t) + " (agent consumed " +
                 std::to_string(seen) + ", capacity " + std::to_string(q.capacity) + ")";
        });
    check_queue(q, "proxy post");
    raise_max(q.consumed_cache, seen);
  }
  Descriptor* slot = &q.ring[t & (q.capacity - 1)];
  std::memcpy(static_cast<void*>(slot), &d, offsetof(Descriptor, stamp));
  if (q.trace) {  // stamped before the release of the stamp, so the agent's stamps come later
    TraceRecord& rec = q.trace[t & (q.capacity - 1)];
    std::atomic_ref<uint64_t>(rec.post).store(began, std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(rec.ticket).store(t + 1, std::memory_order_relaxed);
    std::atomic_ref<uint32_t>(rec.clocks).fetch_or(kTraceProducerHost, std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(rec.posted).store(host_ns(), std::memory_order_relaxed);
  }
  std::atomic_ref<uint64_t>(slot->stamp).store(t + 1, std::memory_order_release);
  if (q.doorbell_every && (t + 1) % q.doorbell_every == 0) raise_max(q.doorbell, t + 1);
  return t;
}

void host_flush(const QueueView& q) {
  if (q.doorbell_every) raise_max(q.doorbell, std::atomic_ref<uint64_t>(*q.head).load(std::memory_order_relaxed));
}

void host_wait_completed(const QueueView& q, uint64_t end, const HostWait& w, const char* what) {
  uint64_t seen = 0;
  detail::host_wait(
      [&] {
        seen = load_acquire(q.completed);
        return seen >= end || status_of(q) != 0;
      },
      w.liveness, w.timeout_ms,
      [&] {
        return who(w, q) + " " + what + ": waiting for the agent to complete ticket " + std::to_string(end - 1) +
               " (completed " + std::to_string(seen) + ")";
      });
  if (seen < end) check_queue(q, what);
}

void host_quiet(const QueueView& q, const HostWait& w) {
  host_flush(q);
  host_wait_completed(q, std::atomic_ref<uint64_t>(*q.head).load(std::memory_order_acquire), w, "quiet");
}

}  // namespace gpucomm::proxy
