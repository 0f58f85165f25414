// RandomAccess on host-memory PEs, one function per communication model. Every model makes the same
// updates (each PE's stretch of the HPCC stream, RaShape) and runs the same timing loop; the models
// differ in how an update reaches the PE that owns its word.
//
// loadstore: no buckets (the naive GGAS version the paper describes, then lacking remote atomics):
// the PE XORs each update straight into the owner's table through the mapped peer heaps
// (Runtime::ptr), std::atomic_ref::fetch_xor, relaxed; a barrier ends the step. Every other model
// buckets: updates for another PE are gathered per destination, a bucket goes out when it holds
// kRaBucket updates and the rest at the end of the step, the last bucket of a step to each PE
// marked `last` (possibly empty); the owner applies what arrives and the step ends on a PE when it
// applied its own updates and the last bucket of every other PE. Only the owner writes its table,
// so the bucketed models need no atomics.
//
// A bucket on the wire: one header word (step << 32 | last << 31 | count), then `count` updates.
// An untimed barrier starts every step, so no bucket of step s + 1 arrives before its receiver has
// finished step s (the header's step is checked).
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpucomm/apps/random_access.hpp"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/messenger.hpp"

namespace gpucomm::apps {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kLast = uint64_t(1) << 31;
constexpr size_t kSlotWords = kRaBucket + 1;  // header + a full bucket

uint64_t header(uint64_t step, bool last, uint32_t count) {
  return (step << 32) | (last ? kLast : 0) | count;
}

// This PE's part of the table in the symmetric heap: word i is global word rank * n + i.
struct Table {
  Runtime& rt;
  RaShape sh;
  int me;
  uint64_t* t;
  Table(Runtime& r, uint64_t n, int steps)
      : rt(r), sh{r.size(), n, steps}, me(r.rank()), t(static_cast<uint64_t*>(r.calloc(n, sizeof(uint64_t)))) {
    for (uint64_t i = 0; i < n; ++i) t[i] = static_cast<uint64_t>(me) * n + i;
  }
  ~Table() { rt.free(t); }
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
};

// Raises when a PE waits for buckets for longer than a minute without any arriving.
struct Stall {
  Clock::time_point since = Clock::now();
  void progress() { since = Clock::now(); }
  void idle(const char* model, int got, int want) {
    std::this_thread::yield();  // PEs may share cores
    if (Clock::now() - since > std::chrono::seconds(60)) {
      raise(Errc::timeout, std::string("random_access ") + model,
            "no bucket arrived for 60 s; the last bucket of " + std::to_string(got) + " of " + std::to_string(want) +
                " PEs arrived");
    }
  }
};

// The bucketed models' common part: generating and bucketing a step's updates, applying what
// arrives. A transport moves the buckets.
class Buckets {
 public:
  // send: words[0..words) (header and updates) to PE dst; poll: delivers whatever arrived.
  using Send = std::function<void(int dst, const uint64_t* words, size_t words_n)>;
  using Poll = std::function<void()>;

  Buckets(Table& tb, const char* model) : tb_(tb), model_(model), out_(static_cast<size_t>(tb.sh.pes)) {
    for (auto& o : out_) o.assign(kSlotWords, 0);
    fill_.assign(out_.size(), 0);
  }

  // One received bucket from PE `src`.
  void deliver(int src, const uint64_t* w) {
    const uint64_t h = w[0];
    const auto count = static_cast<uint32_t>(h & (kLast - 1));
    if ((h >> 32) != step_ || count > kRaBucket) {
      raise(Errc::protocol, std::string("random_access ") + model_,
            "PE " + std::to_string(src) + " sent a bucket of step " + std::to_string(h >> 32) + " with " +
                std::to_string(count) + " updates during step " + std::to_string(step_));
    }
    for (uint32_t i = 0; i < count; ++i) {
      const uint64_t ran = w[1 + i];
      tb_.t[tb_.sh.local(ran)] ^= ran;
    }
    if (h & kLast) ++lasts_;
    stall_.progress();
  }

  // One step: generate, apply the own updates, send the others' in buckets, wait for every PE's last.
  void step(uint64_t step, const Send& send, const Poll& poll) {
    const RaShape& sh = tb_.sh;
    step_ = step;
    lasts_ = 0;
    uint64_t ran = sh.start(tb_.me, step);
    for (uint64_t u = 0; u < sh.per_step(); ++u) {
      ran = ra_next(ran);
      const int d = sh.owner(ran);
      if (d == tb_.me) {
        tb_.t[sh.local(ran)] ^= ran;
        continue;
      }
      auto& o = out_[static_cast<size_t>(d)];
      uint32_t& f = fill_[static_cast<size_t>(d)];
      o[1 + f++] = ran;
      if (f == kRaBucket) flush(d, false, send);
    }
    for (int d = 0; d < sh.pes; ++d)
      if (d != tb_.me) flush(d, true, send);
    stall_.progress();
    while (lasts_ < sh.pes - 1) {
      const int before = lasts_;
      poll();
      if (lasts_ == before) stall_.idle(model_, lasts_, sh.pes - 1);
    }
  }

 private:
  void flush(int d, bool last, const Send& send) {
    auto& o = out_[static_cast<size_t>(d)];
    uint32_t& f = fill_[static_cast<size_t>(d)];
    o[0] = header(step_, last, f);
    send(d, o.data(), 1 + f);
    f = 0;
  }

  Table& tb_;
  const char* model_;
  std::vector<std::vector<uint64_t>> out_;  // per destination: header + kRaBucket updates
  std::vector<uint32_t> fill_;
  uint64_t step_ = 0;
  int lasts_ = 0;
  Stall stall_;
};

using StepFn = std::function<void(uint64_t step)>;

// The timing loop of every host model: an untimed barrier aligns the PEs, then one step (the PE's
// updates and their delivery) is timed. After each step (untimed) every PE's table XOR is
// all-gathered through the bootstrap store and the global XOR compared with the reference; after
// the last step every word of every PE's table.
RunResult timed_loop(Table& tb, Model model, const RunConfig& cfg, const StepFn& step_fn) {
  Runtime& rt = tb.rt;
  const int steps = cfg.warmup + cfg.iters;
  const RaReference& ref = ra_reference(rt.size(), cfg.size, steps);
  RunResult r;
  r.model = model;
  r.size = cfg.size;
  r.updates = tb.sh.per_step() * static_cast<uint64_t>(rt.size());
  rt.barrier_all();  // every PE's table is initialized
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    rt.barrier_all();
    const auto t0 = Clock::now();
    step_fn(step);
    const auto t1 = Clock::now();
    uint64_t x = 0;
    for (uint64_t i = 0; i < tb.sh.n; ++i) x ^= tb.t[i];
    if (rt.rank() == cfg.corrupt_rank) x ^= 1;
    std::string mine(sizeof x, '\0');
    std::memcpy(mine.data(), &x, sizeof x);
    uint64_t global = 0;
    for (const auto& v : rt.bootstrap().allgather(mine)) {
      if (v.size() != sizeof(uint64_t))
        raise(Errc::protocol, "random_access", "a PE sent " + std::to_string(v.size()) + " bytes, not 8");
      uint64_t y = 0;
      std::memcpy(&y, v.data(), sizeof y);
      global ^= y;
    }
    if (global != ref.step_xor[static_cast<size_t>(it)]) ++r.wrong;
    if (it >= cfg.warmup) r.iter_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    r.value = ra_value(global);
  }
  r.wrong_cells = ra_wrong_cells(ref, rt.rank(), tb.t, cfg.corrupt_rank);
  ra_dump(cfg, model, rt.rank(), tb.t);
  rt.barrier_all();
  return r;
}

RunResult run_loadstore(Runtime& rt, const RunConfig& cfg) {
  Table tb(rt, cfg.size, cfg.warmup + cfg.iters);
  std::vector<uint64_t*> peer(static_cast<size_t>(rt.size()));
  for (int p = 0; p < rt.size(); ++p) {
    peer[static_cast<size_t>(p)] = static_cast<uint64_t*>(rt.ptr(tb.t, p));
    if (!peer[static_cast<size_t>(p)]) {
      raise(Errc::unsupported, "random_access loadstore",
            "PE " + std::to_string(p) + " is not mapped here (load/store needs every PE on this node)");
    }
  }
  return timed_loop(tb, Model::loadstore, cfg, [&](uint64_t step) {
    const RaShape& sh = tb.sh;
    uint64_t ran = sh.start(tb.me, step);
    for (uint64_t u = 0; u < sh.per_step(); ++u) {
      ran = ra_next(ran);
      std::atomic_ref<uint64_t>(peer[static_cast<size_t>(sh.owner(ran))][sh.local(ran)])
          .fetch_xor(ran, std::memory_order_relaxed);
    }
    rt.barrier_all();  // the step ends when every PE's updates are in
  });
}

// putget: each PE has, for every sender, an inbox of kSlots buckets (a ring) and one signal word
// per slot. The sender's q-th bucket to a PE (q counted over the whole run, from 0) goes into slot
// q mod kSlots with put_signal, the signal set to q + 1; the receiver takes bucket q when that slot's
// signal equals q + 1, applies it, then sets the sender's ack word for it to q + 1 (a signal). A
// sender writes bucket q only after the ack reached q + 1 - kSlots, i.e. after the receiver
// finished reading bucket q - kSlots, the slot's previous content: no slot is overwritten while it is
// read, and since signals and acks only grow, nothing is reset between steps. A sender waiting for
// an ack applies its own inbox meanwhile, so two PEs sending to each other cannot deadlock.
RunResult run_putget(Runtime& rt, const RunConfig& cfg) {
  constexpr uint64_t kSlots = 4;
  Table tb(rt, cfg.size, cfg.warmup + cfg.iters);
  const auto pes = static_cast<size_t>(rt.size());
  const auto me = static_cast<size_t>(rt.rank());
  auto* inbox = static_cast<uint64_t*>(rt.calloc(pes * kSlots * kSlotWords, sizeof(uint64_t)));  // [src][slot]
  auto* sig = static_cast<uint64_t*>(rt.calloc(pes * kSlots, sizeof(uint64_t)));                 // [src][slot]
  auto* ack = static_cast<uint64_t*>(rt.calloc(pes, sizeof(uint64_t)));                          // [dst]
  std::vector<uint64_t> sent(pes, 0), got(pes, 0);
  Buckets b(tb, "putget");
  const Buckets::Poll poll = [&] {
    for (size_t src = 0; src < pes; ++src) {
      if (src == me) continue;
      for (;;) {
        const uint64_t slot = got[src] % kSlots;
        if (!rt.test(sig + src * kSlots + slot, Cmp::eq, got[src] + 1)) break;
        b.deliver(static_cast<int>(src), inbox + (src * kSlots + slot) * kSlotWords);
        ++got[src];
        rt.signal(ack + me, got[src], SignalOp::set, static_cast<int>(src));
      }
    }
  };
  const Buckets::Send send = [&](int dst, const uint64_t* w, size_t words) {
    const auto d = static_cast<size_t>(dst);
    while (sent[d] >= kSlots + rt.signal_fetch(ack + d)) {
      poll();
      std::this_thread::yield();
    }
    const uint64_t slot = sent[d] % kSlots;
    rt.put_signal(inbox + (me * kSlots + slot) * kSlotWords, w, words * sizeof(uint64_t), sig + me * kSlots + slot,
                  sent[d] + 1, SignalOp::set, dst);
    ++sent[d];
  };
  RunResult r = timed_loop(tb, Model::putget, cfg, [&](uint64_t step) { b.step(step, send, poll); });
  rt.free(ack);
  rt.free(sig);
  rt.free(inbox);
  return r;
}

// sendrecv: every bucket is one message (Messenger, world communicator, one tag), received in
// order from each sender (MPI's non-overtaking rule), so the `last` flag tells the receiver the
// step's buckets from that sender are all in. Each PE keeps one receive posted per sender during a
// step and up to kSlots sends in flight per destination (a send buffer is reused once its send
// completed).
RunResult run_sendrecv(Runtime& rt, const RunConfig& cfg) {
  constexpr size_t kSlots = 4;
  constexpr int kTag = 21;
  msg::Messenger m(rt);
  msg::Comm comm = m.world();
  Table tb(rt, cfg.size, cfg.warmup + cfg.iters);
  const auto pes = static_cast<size_t>(rt.size());
  const auto me = static_cast<size_t>(rt.rank());
  std::vector<uint64_t> sbuf(pes * kSlots * kSlotWords), rbuf(pes * kSlotWords);
  std::vector<msg::Request> sreq(pes * kSlots, msg::Request{}), rreq(pes, msg::Request{});
  std::vector<char> sbusy(pes * kSlots, 0), posted(pes, 0);
  std::vector<uint64_t> sent(pes, 0);
  Buckets b(tb, "sendrecv");
  auto post = [&](size_t src) {
    rreq[src] = comm.irecv(rbuf.data() + src * kSlotWords, kSlotWords * sizeof(uint64_t), static_cast<int>(src), kTag);
    posted[src] = 1;
  };
  const Buckets::Poll poll = [&] {
    for (size_t src = 0; src < pes; ++src) {
      if (!posted[src] || !m.test(rreq[src])) continue;
      posted[src] = 0;
      const uint64_t* w = rbuf.data() + src * kSlotWords;
      const bool last = (w[0] & kLast) != 0;
      b.deliver(static_cast<int>(src), w);
      if (!last) post(src);
    }
  };
  const Buckets::Send send = [&](int dst, const uint64_t* w, size_t words) {
    const size_t k = static_cast<size_t>(dst) * kSlots + sent[static_cast<size_t>(dst)] % kSlots;
    while (sbusy[k] && !m.test(sreq[k])) {
      poll();
      std::this_thread::yield();  // PEs may share cores: let the receiver progress
    }
    std::memcpy(sbuf.data() + k * kSlotWords, w, words * sizeof(uint64_t));
    sreq[k] = comm.isend(sbuf.data() + k * kSlotWords, words * sizeof(uint64_t), dst, kTag);
    sbusy[k] = 1;
    ++sent[static_cast<size_t>(dst)];
  };
  return timed_loop(tb, Model::sendrecv, cfg, [&](uint64_t step) {
    for (size_t src = 0; src < pes; ++src)
      if (src != me) post(src);
    b.step(step, send, poll);
    for (size_t k = 0; k < sreq.size(); ++k) {  // the step's sends complete (their receivers took them)
      if (sbusy[k]) (void)m.wait(sreq[k]);
      sbusy[k] = 0;
    }
  });
}

// am: every bucket is one active message whose handler, run by the owner's poll, applies it (the
// papers' active-message variant, aggregated). The Messenger is made with am_max = one full
// bucket (8 + 8 * kRaBucket bytes) and rings large enough to carry it.
RunResult run_am(Runtime& rt, const RunConfig& cfg) {
  constexpr uint32_t kUpdate = 1;
  msg::MessengerOptions opts;
  opts.slots = 64;  // 64 slots of the default 256 bytes: a ring payload above one bucket
  opts.am_max = static_cast<uint32_t>(kSlotWords * sizeof(uint64_t));
  msg::Messenger m(rt, opts);
  msg::Comm comm = m.world();
  const uint32_t ids[] = {kUpdate};
  m.register_am(ids);
  Table tb(rt, cfg.size, cfg.warmup + cfg.iters);
  Buckets b(tb, "am");
  std::vector<uint64_t> copy(kSlotWords);
  const msg::Comm::AmHandler handler = [&](const msg::AmMessage& a) {
    if (a.id != kUpdate || a.bytes < sizeof(uint64_t) || a.bytes > kSlotWords * sizeof(uint64_t))
      raise(Errc::protocol, "random_access am", "an active message of " + std::to_string(a.bytes) + " bytes");
    std::memcpy(copy.data(), a.payload, a.bytes);  // the payload's alignment is not promised
    b.deliver(a.source, copy.data());
  };
  const Buckets::Poll poll = [&] { (void)m.am_poll(handler); };
  const Buckets::Send send = [&](int dst, const uint64_t* w, size_t words) {
    comm.am_send(dst, kUpdate, w, words * sizeof(uint64_t), handler);
  };
  return timed_loop(tb, Model::am, cfg, [&](uint64_t step) { b.step(step, send, poll); });
}

// cpu: rounds of the bootstrap store's allgather (TCP, a CPU messaging path without shared memory).
// Each PE generates updates until one of its buckets is full (or its step's updates are all made),
// then every PE all-gathers its buckets, [more, then per PE: count, updates], and applies those for
// itself; rounds go on until no PE has updates left.
RunResult run_cpu(Runtime& rt, const RunConfig& cfg) {
  Table tb(rt, cfg.size, cfg.warmup + cfg.iters);
  const auto pes = static_cast<size_t>(rt.size());
  std::vector<std::vector<uint64_t>> out(pes);
  return timed_loop(tb, Model::cpu, cfg, [&](uint64_t step) {
    const RaShape& sh = tb.sh;
    uint64_t ran = sh.start(tb.me, step), made = 0;
    for (bool any = true; any;) {
      for (auto& o : out) o.clear();
      bool full = false;
      while (made < sh.per_step() && !full) {
        ran = ra_next(ran);
        ++made;
        const int d = sh.owner(ran);
        if (d == tb.me) {
          tb.t[sh.local(ran)] ^= ran;
          continue;
        }
        auto& o = out[static_cast<size_t>(d)];
        o.push_back(ran);
        full = o.size() == kRaBucket;
      }
      std::vector<uint64_t> words{made < sh.per_step() ? 1u : 0u};
      for (const auto& o : out) {
        words.push_back(o.size());
        words.insert(words.end(), o.begin(), o.end());
      }
      std::string mine(words.size() * sizeof(uint64_t), '\0');
      std::memcpy(mine.data(), words.data(), mine.size());
      const auto all = rt.bootstrap().allgather(mine);
      any = false;
      for (size_t src = 0; src < pes; ++src) {
        const std::string& v = all[src];
        std::vector<uint64_t> w(v.size() / sizeof(uint64_t));
        std::memcpy(w.data(), v.data(), w.size() * sizeof(uint64_t));
        size_t at = 1;
        for (size_t d = 0; d < pes && at < w.size(); ++d) {
          const uint64_t count = w[at++];
          if (count > kRaBucket || at + count > w.size())
            raise(Errc::protocol, "random_access cpu", "PE " + std::to_string(src) + " sent a malformed round");
          if (d == static_cast<size_t>(tb.me))
            for (uint64_t i = 0; i < count; ++i) tb.t[sh.local(w[at + i])] ^= w[at + i];
          at += count;
        }
        any = any || (!w.empty() && w[0] != 0);
      }
    }
  });
}

}  // namespace

RunResult random_access_host(Runtime& rt, Model model, const RunConfig& cfg) {
  switch (model) {
    case Model::loadstore:
      return run_loadstore(rt, cfg);
    case Model::putget:
      return run_putget(rt, cfg);
    case Model::sendrecv:
      return run_sendrecv(rt, cfg);
    case Model::am:
      return run_am(rt, cfg);
    case Model::cpu:
      return run_cpu(rt, cfg);
    default:
      break;
  }
  raise_unavailable("random_access", model, false);
}

}  // namespace gpucomm::apps
