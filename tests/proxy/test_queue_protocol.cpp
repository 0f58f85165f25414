// The descriptor-queue protocol with CPU producers and the CPU proxy: no loss, no duplication,
// per-producer order, completion published in ticket order while executors finish out of order,
// wrap-around of tiny rings, doorbell batching, and faults that fail the queue instead of hanging.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "executor.hpp"
#include "gpucomm/base/handle.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/proxy/cpu_proxy.hpp"
#include "gpucomm/proxy/queue.hpp"
#include "gpucomm/proxy/queue_host.hpp"
#include "host_copy_executor.hpp"
#include "test_support.hpp"

namespace gpucomm::proxy {
namespace {

constexpr HostWait kWait{20000, nullptr, 0};

// Records what it executes; completes each entry after a random number of progress() calls, in a
// random order, so that the agent must publish completion in ticket order by itself.
class ShufflingExecutor final : public Executor {
 public:
  ShufflingExecutor(int producers, uint64_t seed) : seen_(static_cast<size_t>(producers)), rng_(seed) {}
  const char* name() const override { return "shuffling"; }
  void start(const Descriptor& d, uint64_t* done) override {
    // value = producer << 32 | sequence number of that producer
    auto p = static_cast<size_t>(d.value >> 32);
    std::lock_guard lock(mu_);
    seen_.at(p).push_back(static_cast<uint32_t>(d.value));
    pending_.push_back(done);
  }
  void progress() override {
    if (pending_.empty()) return;
    std::shuffle(pending_.begin(), pending_.end(), rng_);
    size_t k = 1 + rng_() % pending_.size();
    for (size_t i = 0; i < k; ++i) {
      set_done(pending_.back());
      pending_.pop_back();
    }
  }
  bool busy() const override { return !pending_.empty(); }
  std::vector<std::vector<uint32_t>> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::vector<std::vector<uint32_t>> seen_;
  std::deque<uint64_t*> pending_;
  std::mt19937_64 rng_;
};

struct StressCase {
  uint32_t capacity;
  uint32_t doorbell_every;
  int producers;
  int per_producer;
};

void run_stress(const StressCase& c, uint64_t seed) {
  Queue q(QueueConfig{Side::cpu, Side::cpu, Placement::host, c.capacity, c.doorbell_every}, 0);
  ShufflingExecutor* exec = nullptr;
  HeapGeometry g{1, 1 << 20, 0};
  CpuProxy proxy(
      {q.agent_view()}, g,
      [&](int) {
        auto e = std::make_unique<ShufflingExecutor>(c.producers, seed);
        exec = e.get();
        return e;
      },
      CpuProxyOptions{});
  std::vector<std::thread> producers;
  std::atomic<int> errors{0};
  producers.reserve(c.producers);
  for (int p = 0; p < c.producers; ++p) {
    producers.emplace_back([&, p] {
      try {
        for (int i = 0; i < c.per_producer; ++i) {
          Descriptor d{};
          d.opcode = Opcode::signal;
          d.pe = 0;
          d.sig = 0;
          d.value = (uint64_t(p) << 32) | static_cast<uint32_t>(i);
          host_post(q.producer_view(), d, kWait);
          if (i % 97 == 0) host_quiet(q.producer_view(), kWait);
        }
        host_quiet(q.producer_view(), kWait);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "producer " << p << ": " << e.what();
        ++errors;
      }
    });
  }
  for (auto& t : producers) t.join();
  ASSERT_EQ(errors.load(), 0);
  const uint64_t total = uint64_t(c.producers) * static_cast<uint64_t>(c.per_producer);
  EXPECT_EQ(q.head(), total);
  EXPECT_EQ(q.completed(), total);
  proxy.stop();
  EXPECT_EQ(proxy.failure(), "");
  EXPECT_EQ(proxy.stats().executed, total);
  auto seen = exec->seen();
  for (int p = 0; p < c.producers; ++p) {
    const auto& s = seen[static_cast<size_t>(p)];
    ASSERT_EQ(s.size(), static_cast<size_t>(c.per_producer)) << "producer " << p << " lost or duplicated entries";
    for (int i = 0; i < c.per_producer; ++i)
      ASSERT_EQ(s[static_cast<size_t>(i)], static_cast<uint32_t>(i)) << "producer " << p << " order broken at " << i;
  }
}

TEST(ProxyQueue, ManyProducersNoLossNoDuplicationInOrder) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_note(seed));
  run_stress({1024, 0, 4, 50000}, seed);
}

TEST(ProxyQueue, TinyRingWrapsAndWaitsForSpace) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_note(seed));
  run_stress({2, 0, 3, 3000}, seed);
  run_stress({8, 0, 4, 5000}, seed + 1);
}

TEST(ProxyQueue, DoorbellBatching) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_note(seed));
  run_stress({64, 16, 4, 5000}, seed);
  run_stress({16, 5, 2, 5000}, seed + 1);  // batch size not dividing the ring
}

TEST(ProxyQueue, ConfigurationErrorsNameTheField) {
  try {
    Queue q(QueueConfig{Side::cpu, Side::cpu, Placement::host, 100, 0}, 0);
    ADD_FAILURE() << "capacity 100 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("capacity"), std::string::npos) << e.what();
  }
  try {
    Queue q(QueueConfig{Side::cpu, Side::gpu, Placement::host, 16, 0}, 0);
    ADD_FAILURE() << "CPU producer with a GPU agent accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("agent"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_placement("gpu-ish", "GPUCOMM_PROXY_QUEUE"), Error);
}

// Two fake PEs in this process: the host-copy executor on plain buffers.
struct TwoPes {
  static constexpr size_t kBytes = 1 << 16;
  std::vector<uint64_t> mem[2] = {std::vector<uint64_t>(kBytes / 8), std::vector<uint64_t>(kBytes / 8)};
  Queue q{QueueConfig{Side::cpu, Side::cpu, Placement::host, 64, 0}, 7};
  CpuProxy proxy;
  TwoPes()
      : proxy(
            {q.agent_view()}, HeapGeometry{2, kBytes, 0},
            [this](int) { return std::make_unique<HostCopyExecutor>(std::vector<char*>{base(0), base(1)}); },
            CpuProxyOptions{}) {}
  char* base(int pe) { return reinterpret_cast<char*>(mem[pe].data()); }
  uint64_t post(const Descriptor& d) { return host_post(q.producer_view(), d, kWait); }
  void quiet() { host_quiet(q.producer_view(), kWait); }
};

TEST(ProxyHostCopy, EveryOpcodeOnMappedMemory) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_note(seed));
  std::mt19937_64 rng(seed);
  TwoPes t;
  std::vector<uint8_t> src(4096), back(4096);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  Descriptor d{};
  d.opcode = Opcode::put, d.pe = 1, d.remote = 128, d.local = reinterpret_cast<uint64_t>(src.data()),
  d.bytes = src.size();
  t.post(d);
  d = {};
  d.opcode = Opcode::get, d.pe = 1, d.remote = 128, d.local = reinterpret_cast<uint64_t>(back.data()),
  d.bytes = back.size();
  t.post(d);
  d = {};
  d.opcode = Opcode::put_inline, d.pe = 0, d.remote = 8, d.value = 0x1122334455667788ull, d.bytes = 3;
  t.post(d);
  d = {};
  d.opcode = Opcode::signal, d.pe = 1, d.sig = 0, d.op = static_cast<uint8_t>(SignalOp::add), d.value = 5;
  t.post(d);
  t.post(d);
  uint64_t old = 0;
  d = {};
  d.opcode = Opcode::atomic, d.pe = 0, d.remote = 16, d.width = 8, d.op = static_cast<uint8_t>(AtomicOp::fetch_add),
  d.value = 9, d.local = reinterpret_cast<uint64_t>(&old);
  t.post(d);
  uint64_t cas_old = 0;
  d = {};
  d.opcode = Opcode::atomic, d.pe = 1, d.remote = 24, d.width = 4, d.op = static_cast<uint8_t>(AtomicOp::compare_swap),
  d.value = 77, d.compare = 0, d.local = reinterpret_cast<uint64_t>(&cas_old);
  t.post(d);
  d = {};  // 5 payload bytes at PE 0 offset 40, then the signal (set 3) at offset 48
  d.opcode = Opcode::put_signal_inline, d.pe = 0, d.remote = 40, d.bytes = 5, d.compare = 0xAABBCCDDEEull, d.sig = 48,
  d.op = static_cast<uint8_t>(SignalOp::set), d.value = 3;
  t.post(d);
  t.quiet();
  EXPECT_EQ(t.mem[0][5], 0xAABBCCDDEEull);
  EXPECT_EQ(t.mem[0][6], 3u);
  EXPECT_EQ(std::memcmp(t.base(1) + 128, src.data(), src.size()), 0);
  EXPECT_EQ(back, src);
  EXPECT_EQ(t.mem[0][1] & 0xffffff, 0x667788u);
  EXPECT_EQ(t.mem[1][0], 10u);
  EXPECT_EQ(old, 0u);
  EXPECT_EQ(t.mem[0][2], 9u);
  EXPECT_EQ(cas_old, 0u);
  EXPECT_EQ(t.mem[1][3] & 0xffffffffu, 77u);
}

TEST(ProxyHostCopy, SignalNeverBeforeData) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_note(seed));
  TwoPes t;
  constexpr uint64_t kRounds = 20000, kSlots = 64, kLag = 32;
  constexpr size_t kWords = 64;  // payload words per slot, at PE 1 offset 64 + slot * 512
  std::atomic<int> violations{0};
  std::atomic<uint64_t> ack{0};  // rounds the reader checked: bounds how far the writer runs ahead
  std::thread reader([&] {
    std::atomic_ref<uint64_t> sig(t.mem[1][0]);
    uint64_t last = 0;
    while (last < kRounds) {
      uint64_t s = sig.load(std::memory_order_acquire);
      if (s == last) continue;
      // The payload of the announced round is complete (its slot is not reused before the ack).
      const uint64_t* slot = &t.mem[1][8 + (s % kSlots) * kWords];
      for (size_t i = 0; i < kWords; ++i)
        if (slot[i] != s) ++violations;
      last = s;
      ack.store(s, std::memory_order_release);
    }
  });
  std::vector<uint64_t> payload(kWords);
  for (uint64_t r = 1; r <= kRounds; ++r) {
    while (r > kLag && ack.load(std::memory_order_acquire) < r - kLag) std::this_thread::yield();
    std::fill(payload.begin(), payload.end(), r);
    Descriptor d{};
    d.opcode = Opcode::put_signal, d.pe = 1, d.remote = static_cast<int64_t>(64 + (r % kSlots) * kWords * 8),
    d.local = reinterpret_cast<uint64_t>(payload.data()), d.bytes = kWords * 8, d.sig = 0,
    d.op = static_cast<uint8_t>(SignalOp::set), d.value = r;
    t.post(d);
    t.quiet();  // the payload buffer is reused next round
  }
  reader.join();
  EXPECT_EQ(violations.load(), 0);
}

void expect_fault(const Descriptor& bad, QueueFault fault, const char* field) {
  TwoPes t;
  t.post(bad);
  try {
    t.quiet();
    ADD_FAILURE() << "no fault for " << field;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::string("field ") + field), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fault_name(fault)), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.q.status(), static_cast<uint32_t>(fault));
  EXPECT_EQ(t.q.fault_ticket(), 0u);
  EXPECT_NE(t.proxy.failure().find("ticket 0"), std::string::npos) << t.proxy.failure();
  // The queue stays failed: later posts are refused at once, not queued.
  Descriptor nop{};
  EXPECT_THROW(t.post(nop), Error);
}

TEST(ProxyFaults, InvalidDescriptorsFailTheQueueNamingTheField) {
  Descriptor d{};
  d.opcode = static_cast<Opcode>(42);
  expect_fault(d, QueueFault::bad_opcode, "opcode");
  d = {};
  d.opcode = Opcode::signal, d.pe = 2;
  expect_fault(d, QueueFault::bad_pe, "pe");
  d = {};
  d.opcode = Opcode::put, d.pe = 1, d.remote = TwoPes::kBytes - 8, d.bytes = 16, d.local = 1;
  expect_fault(d, QueueFault::out_of_heap, "remote");
  d = {};
  d.opcode = Opcode::put, d.pe = 1, d.remote = -8, d.bytes = 8, d.local = 1;
  expect_fault(d, QueueFault::out_of_heap, "remote");
  d = {};
  d.opcode = Opcode::atomic, d.pe = 0, d.width = 2;
  expect_fault(d, QueueFault::bad_size, "width");
  d = {};
  d.opcode = Opcode::signal, d.pe = 0, d.sig = 4;
  expect_fault(d, QueueFault::bad_size, "sig");
  d = {};
  d.opcode = Opcode::get, d.pe = 0, d.bytes = 8, d.local = 0;
  expect_fault(d, QueueFault::bad_address, "local");
  d = {};
  d.opcode = Opcode::put_inline, d.pe = 0, d.bytes = 9;
  expect_fault(d, QueueFault::bad_size, "bytes");
  d = {};
  d.opcode = Opcode::put_signal_inline, d.pe = 0, d.bytes = 0;
  expect_fault(d, QueueFault::bad_size, "bytes");
  d = {};
  d.opcode = Opcode::put_signal_inline, d.pe = 0, d.bytes = 8, d.sig = TwoPes::kBytes;
  expect_fault(d, QueueFault::out_of_heap, "sig");
  d = {};
  d.opcode = Opcode::put_signal_inline, d.pe = 0, d.bytes = 8, d.op = 2;
  expect_fault(d, QueueFault::bad_opcode, "op");
}

// GPUCOMM_PROXY_TRACE: every entry's record holds its ticket and its stages in order, host clocks.
TEST(ProxyQueue, TraceRecordsEveryStage) {
  constexpr size_t kBytes = 4096;
  std::vector<uint64_t> mem(kBytes / 8);
  QueueConfig cfg{Side::cpu, Side::cpu, Placement::host, 16, 0, true};
  Queue q(cfg, 0);
  ASSERT_NE(q.trace(), nullptr);
  CpuProxy proxy(
      {q.agent_view()}, HeapGeometry{1, kBytes, 0},
      [&](int) { return std::make_unique<HostCopyExecutor>(std::vector<char*>{reinterpret_cast<char*>(mem.data())}); },
      CpuProxyOptions{});
  for (uint64_t i = 0; i < 40; ++i) {  // more than the ring holds: records are reused
    Descriptor d{};
    d.opcode = Opcode::put_inline, d.pe = 0, d.remote = 8 * static_cast<int64_t>(i % 8), d.bytes = 8, d.value = i;
    const uint64_t t = host_post(q.producer_view(), d, kWait);
    host_quiet(q.producer_view(), kWait);
    const TraceRecord r = q.trace()[t % 16];
    EXPECT_EQ(r.ticket, t + 1);
    EXPECT_EQ(r.clocks, kTraceProducerHost | kTraceAgentHost);
    EXPECT_LE(r.post, r.posted);
    EXPECT_LE(r.posted, r.seen);
    EXPECT_LE(r.seen, r.issued);
    EXPECT_LE(r.issued, r.completed);
  }
  // Without the switch there are no records.
  Queue plain(QueueConfig{Side::cpu, Side::cpu, Placement::host, 16, 0}, 1);
  EXPECT_EQ(plain.trace(), nullptr);
  EXPECT_EQ(plain.producer_view().trace, nullptr);
}

TEST(ProxyFaults, FullQueueWithoutAgentTimesOutNamingTheQueue) {
  Queue q(QueueConfig{Side::cpu, Side::cpu, Placement::host, 4, 0}, 3);
  Descriptor d{};
  for (int i = 0; i < 4; ++i) host_post(q.producer_view(), d, kWait);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    host_post(q.producer_view(), d, HostWait{300, nullptr, 5});
    ADD_FAILURE() << "a full queue accepted an entry";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::timeout);
    std::string w = e.what();
    EXPECT_NE(w.find("rank 5 proxy queue 3"), std::string::npos) << w;
    EXPECT_NE(w.find("waiting for space for ticket 4"), std::string::npos) << w;
    EXPECT_NE(w.find("capacity 4"), std::string::npos) << w;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  try {
    host_wait_completed(q.producer_view(), 1, HostWait{200, nullptr, 5}, "quiet");
    ADD_FAILURE() << "completion without an agent";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::timeout);
    EXPECT_NE(std::string(e.what()).find("complete ticket 0"), std::string::npos) << e.what();
  }
}

TEST(ProxyFaults, StoppedAgentFailsProducersAtOnce) {
  TwoPes t;
  Descriptor d{};
  d.opcode = Opcode::signal, d.pe = 0, d.value = 1;
  t.post(d);
  t.quiet();
  t.proxy.stop();
  EXPECT_FALSE(t.proxy.running());
  try {
    t.post(d);
    ADD_FAILURE() << "post after stop accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::peer_failure);
    EXPECT_NE(std::string(e.what()).find("agent stopped"), std::string::npos) << e.what();
  }
}

// An executor that never completes: stop() gives up after the drain limit and fails the queue.
class StuckExecutor final : public Executor {
 public:
  const char* name() const override { return "stuck"; }
  void start(const Descriptor&, uint64_t*) override { ++started; }
  bool busy() const override { return started > 0; }
  int started = 0;
};

TEST(ProxyFaults, StopWithStuckWorkFailsTheQueueInsteadOfHanging) {
  Queue q(QueueConfig{Side::cpu, Side::cpu, Placement::host, 16, 0}, 1);
  CpuProxyOptions o;
  o.timeout_ms = 200;
  CpuProxy proxy({q.agent_view()}, HeapGeometry{1, 4096, 0}, [](int) { return std::make_unique<StuckExecutor>(); }, o);
  Descriptor d{};
  d.opcode = Opcode::signal;
  host_post(q.producer_view(), d, kWait);
  std::thread waiter([&] {
    try {
      host_quiet(q.producer_view(), kWait);
      ADD_FAILURE() << "quiet returned although the entry never completed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("agent stopped"), std::string::npos) << e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = std::chrono::steady_clock::now();
  proxy.stop();
  waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(q.status(), static_cast<uint32_t>(QueueFault::agent_stopped));
}

TEST(ProxyQueue, SeveralThreadsServeSeveralQueues) {
  constexpr int kQueues = 6, kPer = 4000;
  std::vector<std::unique_ptr<Queue>> qs;
  std::vector<QueueView> views;
  for (int i = 0; i < kQueues; ++i) {
    qs.push_back(
        std::make_unique<Queue>(QueueConfig{Side::cpu, Side::cpu, Placement::host, 32, 0}, static_cast<uint32_t>(i)));
    views.push_back(qs.back()->agent_view());
  }
  std::vector<uint64_t> counters(kQueues, 0);
  CpuProxyOptions o;
  o.threads = 3;
  CpuProxy proxy(
      views, HeapGeometry{1, 1 << 12, 0},
      [&](int) {
        return std::make_unique<HostCopyExecutor>(std::vector<char*>{reinterpret_cast<char*>(counters.data())});
      },
      o);
  std::vector<std::thread> producers;
  producers.reserve(kQueues);
  for (int i = 0; i < kQueues; ++i) {
    producers.emplace_back([&, i] {
      Descriptor d{};
      d.opcode = Opcode::signal, d.pe = 0, d.sig = 8 * static_cast<int64_t>(i),
      d.op = static_cast<uint8_t>(SignalOp::add), d.value = 1;
      for (int k = 0; k < kPer; ++k) host_post(qs[static_cast<size_t>(i)]->producer_view(), d, kWait);
      host_quiet(qs[static_cast<size_t>(i)]->producer_view(), kWait);
    });
  }
  for (auto& p : producers) p.join();
  for (int i = 0; i < kQueues; ++i) {
    EXPECT_EQ(std::atomic_ref<uint64_t>(counters[static_cast<size_t>(i)]).load(), static_cast<uint64_t>(kPer))
        << "queue " << i;
  }
  proxy.stop();
  auto s = proxy.stats();
  EXPECT_EQ(s.executed, uint64_t(kQueues) * kPer);
  EXPECT_GT(s.cpu_seconds, 0.0);
}

}  // namespace
}  // namespace gpucomm::proxy
