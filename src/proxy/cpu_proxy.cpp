// The CPU proxy's threads: poll, validate, execute, complete in order (see cpu_proxy.hpp and
// docs/PROXY.md for the protocol).
#include "gpucomm/proxy/cpu_proxy.hpp"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/host_wait.hpp"
#include "executor.hpp"
#include "gpucomm/core/liveness.hpp"
#include "gpucomm/core/log.hpp"
#include "ring_reader.hpp"

namespace gpucomm::proxy {

namespace {
using Clock = std::chrono::steady_clock;

template <class T>
T load_acquire(T* p) {
  return std::atomic_ref<T>(*p).load(std::memory_order_acquire);
}
template <class T>
void store_release(T* p, T v) {
  std::atomic_ref<T>(*p).store(v, std::memory_order_release);
}

uint64_t host_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}
// One stage of a trace record (GPUCOMM_PROXY_TRACE): relaxed stores, read after completion.
void stamp(uint64_t& field, uint64_t ns) {
  std::atomic_ref<uint64_t>(field).store(ns, std::memory_order_relaxed);
}

double thread_cpu_seconds(pthread_t th) {
  clockid_t cid;
  timespec ts{};
  if (pthread_getcpuclockid(th, &cid) != 0 || clock_gettime(cid, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

// Agent-side state of one queue (owned by one thread).
struct QueueState {
  QueueView v;
  RingReader reader;
  uint64_t next = 0;       // next ticket to read
  uint64_t completed = 0;  // tickets published as completed
  std::vector<uint64_t> done;
  bool dead = false;
  explicit QueueState(const QueueView& view) : v(view), reader(view), done(view.capacity, 0) {}
};

struct Worker {
  std::vector<std::unique_ptr<QueueState>> queues;
  std::vector<TraceRecord*> issued;  // trace records of the entries started this round
  std::unique_ptr<Executor> exec;
  std::thread th;
  std::atomic<uint64_t> executed{0};
  std::atomic<bool> alive{false};
  double cpu_final = 0;
  std::vector<int> cpus;  // affinity (empty: not pinned)
};

struct CpuProxy::Impl {
  HeapGeometry geometry;
  CpuProxyOptions opts;
  std::vector<std::unique_ptr<Worker>> workers;
  std::atomic<bool> stop{false};
  std::atomic<bool> stopped{false};
  Clock::time_point started = Clock::now();
  mutable std::mutex mu;
  std::string failure;

  void note_failure(const std::string& what) {
    std::lock_guard lock(mu);
    if (failure.empty()) failure = what;
    GPUCOMM_LOG(error, "proxy: " << what);
  }

  void fault(QueueState& q, uint64_t ticket, QueueFault f, Field field, const std::string& why) {
    if (q.dead) return;
    q.dead = true;
    store_release(q.v.fault_ticket, ticket);
    store_release(q.v.fault_field, static_cast<uint32_t>(field));
    store_release(q.v.status, static_cast<uint32_t>(f));
    note_failure("queue " + std::to_string(q.v.queue_id) + " ticket " + std::to_string(ticket) + ": " + fault_name(f) +
                 " (field " + field_name(field) + "): " + why);
  }

  // Reads and starts the ready entries of `q`; returns how many it started.
  size_t poll(Worker& w, QueueState& q) {
    if (q.dead) return 0;
    const uint64_t limit = q.v.doorbell_every ? load_acquire(q.v.doorbell) : UINT64_MAX;
    size_t n = 0;
    while (q.next < limit && q.next - q.completed < q.v.capacity) {
      const Descriptor* d = q.reader.ready(q.next, limit);
      if (!d) break;
      const uint64_t t = q.next;
      if (q.v.trace) {
        TraceRecord& rec = q.v.trace[t & (q.v.capacity - 1)];
        stamp(rec.seen, host_ns());
        std::atomic_ref<uint32_t>(rec.clocks).fetch_or(kTraceAgentHost, std::memory_order_relaxed);
        w.issued.push_back(&rec);
      }
      uint64_t* done = &q.done[t & (q.v.capacity - 1)];
      store_release(done, uint64_t(0));
      try {
        validate(*d, geometry);
        if (d->opcode == Opcode::nop) {
          set_done(done);
        } else {
          w.exec->start(*d, done);
        }
      } catch (const DescriptorFault& e) {
        fault(q, t, e.fault(), e.field(), e.detail());
        break;
      } catch (const std::exception& e) {
        fault(q, t, QueueFault::transport, Field::none, e.what());
        break;
      }
      ++q.next;
      ++n;
    }
    if (n) store_release(q.v.consumed, q.next);
    return n;
  }

  // Publishes the completed prefix of `q`; returns how many tickets it added.
  size_t publish(QueueState& q) {
    uint64_t c = q.completed;
    while (c < q.next && load_acquire(&q.done[c & (q.v.capacity - 1)])) ++c;
    size_t added = static_cast<size_t>(c - q.completed);
    if (added) {
      if (q.v.trace) {
        const uint64_t now = host_ns();
        for (uint64_t t = q.completed; t < c; ++t) stamp(q.v.trace[t & (q.v.capacity - 1)].completed, now);
      }
      q.completed = c;
      store_release(q.v.completed, c);
    }
    return added;
  }

  bool quiet(const Worker& w) const {
    if (w.exec->busy()) return false;
    for (auto& q : w.queues)
      if (!q->dead && (q->completed < q->next || q->reader.peek(q->next))) return false;
    return true;
  }

  void fail_all(Worker& w, QueueFault f, const std::string& why) {
    for (auto& q : w.queues) fault(*q, q->completed, f, Field::none, why);
  }

  void run(Worker& w) {
    if (!w.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : w.cpus)
        if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
      if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        GPUCOMM_LOG(warn,
                    "proxy: could not pin a thread to CPU(s) " << w.cpus.front() << (w.cpus.size() > 1 ? "..." : ""));
      }
    }
    if (opts.device >= 0 && cudaSetDevice(opts.device) != cudaSuccess) {
      fail_all(w, QueueFault::agent_stopped,
               "the proxy thread could not make CUDA device " + std::to_string(opts.device) + " current");
      w.alive.store(false, std::memory_order_release);
      return;
    }
    const bool idle_progress = w.exec->needs_idle_progress();
    uint64_t idle = 0;
    Clock::time_point drain_deadline{};
    for (uint64_t round = 0;; ++round) {
      size_t work = 0;
      try {
        for (auto& q : w.queues) work += poll(w, *q);
        w.exec->flush();
        if (!w.issued.empty()) {
          const uint64_t now = host_ns();
          for (TraceRecord* rec : w.issued) stamp(rec->issued, now);
          w.issued.clear();
        }
        if (work || idle_progress || w.exec->busy()) w.exec->progress();
      } catch (const std::exception& e) {
        fail_all(w, QueueFault::transport, e.what());
      }
      size_t finished = 0;
      for (auto& q : w.queues) finished += publish(*q);
      if (finished) w.executed.fetch_add(finished, std::memory_order_relaxed);
      if (work || finished) {
        idle = 0;
      } else if (++idle < 64) {
        detail::cpu_relax();
      } else if (idle < 256) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(
            std::chrono::microseconds(std::min<int64_t>(opts.idle_sleep_us, static_cast<int64_t>(idle - 255))));
      }
      if ((round & 255) == 0 && opts.liveness && opts.liveness->failed()) {
        fail_all(w, QueueFault::agent_stopped, "the job failed: " + opts.liveness->failure());
        break;
      }
      if (stop.load(std::memory_order_acquire)) {
        if (drain_deadline == Clock::time_point{}) {
          drain_deadline =
              Clock::now() + std::chrono::milliseconds(opts.timeout_ms > 0 ? opts.timeout_ms : INT64_C(1) << 40);
        }
        if (quiet(w)) break;
        if (Clock::now() > drain_deadline) {
          fail_all(w, QueueFault::agent_stopped, "the proxy stopped with entries outstanding (drain timed out)");
          break;
        }
      }
    }
    // Nobody serves these queues any more: later posts fail at once instead of waiting.
    for (auto& q : w.queues) {
      if (!q->dead) {
        q->dead = true;
        store_release(q->v.fault_ticket, q->next);
        store_release(q->v.status, static_cast<uint32_t>(QueueFault::agent_stopped));
      }
    }
    w.cpu_final = thread_cpu_seconds(pthread_self());
    w.alive.store(false, std::memory_order_release);
  }
};

CpuProxy::CpuProxy(std::vector<QueueView> queues, const HeapGeometry& geometry, const ExecutorFactory& make,
                   CpuProxyOptions opts)
    : impl_(std::make_unique<Impl>()) {
  GPUCOMM_CHECK_ARG(opts.threads >= 1 && opts.threads <= 256, "CpuProxy", "threads",
                    std::to_string(opts.threads) + " is outside 1..256");
  impl_->geometry = geometry;
  impl_->opts = std::move(opts);
  const int nt = impl_->opts.threads;
  for (int t = 0; t < nt; ++t) {
    auto w = std::make_unique<Worker>();
    w->exec = make(t);
    if (!impl_->opts.cpus.empty()) {
      w->cpus = {impl_->opts.cpus[static_cast<size_t>(t) % impl_->opts.cpus.size()]};
    } else {
      w->cpus = impl_->opts.cpu_set;
    }
    impl_->workers.push_back(std::move(w));
  }
  for (size_t i = 0; i < queues.size(); ++i)
    impl_->workers[i % impl_->workers.size()]->queues.push_back(std::make_unique<QueueState>(queues[i]));
  for (auto& w : impl_->workers) {
    w->alive.store(true);
    Worker* wp = w.get();
    w->th = std::thread([this, wp] { impl_->run(*wp); });
  }
}

CpuProxy::~CpuProxy() {
  try {
    stop();
  } catch (const std::exception& e) {
    GPUCOMM_LOG(error, "proxy stop: " << e.what());
  }
}

void CpuProxy::stop() {
  if (impl_->stopped.exchange(true)) return;
  impl_->stop.store(true, std::memory_order_release);
  for (auto& w : impl_->workers)
    if (w->th.joinable()) w->th.join();
}

bool CpuProxy::running() const {
  for (auto& w : impl_->workers)
    if (w->alive.load(std::memory_order_acquire)) return true;
  return false;
}

std::string CpuProxy::failure() const {
  std::lock_guard lock(impl_->mu);
  return impl_->failure;
}

CpuProxyStats CpuProxy::stats() const {
  CpuProxyStats s;
  for (auto& w : impl_->workers) {
    s.executed += w->executed.load(std::memory_order_relaxed);
    s.cpu_seconds +=
        w->alive.load(std::memory_order_acquire) ? thread_cpu_seconds(w->th.native_handle()) : w->cpu_final;
  }
  s.wall_seconds = std::chrono::duration<double>(Clock::now() - impl_->started).count();
  return s;
}

}  // namespace gpucomm::proxy
