#pragma once
// The memory backend of host-memory PEs (the policy algorithms.hpp describes): one thread is the
// whole group; data and flags go through the Runtime's host one-sided operations (a memmove into
// the mapped peer region and a release store, or one descriptor through the proxy for PEs on
// other nodes); waits are acquire loads in the timed host wait; LL words are 8-byte relaxed
// std::atomic_ref accesses on the mapped peer regions. Failures raise gpucomm::Error at once.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/host_wait.hpp"
#include "diag_text.hpp"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/base/team.hpp"
#include "gpucomm/collectives/algorithms.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::coll::detail {

class HostBackend {
 public:
  HostBackend(Runtime& rt, const CollHandle& h, const Call& call, uint32_t channel, int64_t timeout_ms)
      : rt_(rt), h_(h), call_(call), c_(channel), v_(chan_view(h, channel)), timeout_ms_(timeout_ms) {}

  int tid() const { return 0; }
  int nthreads() const { return 1; }
  bool leader() const { return true; }
  void sync() {}
  int rank() const { return h_.team.rank; }
  int size() const { return h_.team.size; }
  bool forced() const { return (h_.flags & kCollForceProtocol) != 0; }
  uint32_t channel() const { return c_; }
  const ChanView& view() const { return v_; }
  uint64_t bcast(uint64_t v) { return v; }
  uint64_t local_load(const uint64_t* p) { return mem::host_load(p, std::memory_order_relaxed); }
  void local_store(uint64_t* p, uint64_t v) { mem::host_store(p, v, std::memory_order_relaxed); }

  void put_signal(int q, void* dst, const void* src, size_t bytes, uint64_t* flag, uint64_t value) {
    if (bytes) {
      rt_.put_signal(dst, src, bytes, flag, value, SignalOp::set, world(q));
    } else {
      rt_.signal(flag, value, SignalOp::set, world(q));
    }
  }
  void signal(int q, uint64_t* word, uint64_t value) { rt_.signal(word, value, SignalOp::set, world(q)); }
  // The release store of the next signal orders this thread's earlier accesses.
  void publish() {}
  void quiet() { rt_.quiet(); }

  template <class FlagOf, class Each>
  void wait_flags(FlagOf flag_of, uint32_t stamp, uint32_t sig, Each each) {
    each([&](int q) {
      const uint64_t* f = flag_of(q);
      uint64_t seen = 0;
      wait(
          [&] {
            seen = mem::host_load(f, std::memory_order_acquire);
            return stamp_reached(static_cast<uint32_t>(seen), stamp);
          },
          [&] {
            std::vector<int> ranks, worlds;
            each([&](int r) {
              if (!stamp_reached(static_cast<uint32_t>(mem::host_load(flag_of(r), std::memory_order_acquire)), stamp)) {
                ranks.push_back(r);
                worlds.push_back(world(r));
              }
            });
            if (ranks.empty()) ranks.push_back(q), worlds.push_back(world(q));
            return context() + ": " + missing_text(ranks, worlds, q, seen, true);
          });
      const auto theirs = static_cast<uint32_t>(seen >> 32);
      if (theirs != sig) fail_mismatch(q, sig, theirs);
    });
  }
  void wait_ack(const uint64_t* ack, uint64_t round, int q) {
    uint64_t seen = 0;
    wait(
        [&] {
          seen = mem::host_load(ack, std::memory_order_acquire);
          return seen >= round;
        },
        [&] {
          return context() + ": waiting for team rank " + std::to_string(q) + " (world " + std::to_string(world(q)) +
                 ") to acknowledge round " + std::to_string(round) + "; " +
                 missing_text({q}, {world(q)}, q, seen, false);
        });
  }
  void ll_store(int q, uint64_t* word, uint64_t value) {
    auto* r = static_cast<uint64_t*>(rt_.ptr(word, world(q)));
    if (!r) {
      raise(Errc::invalid_argument, context(),
            "oneshot_ll needs every team member mapped here; world rank " + std::to_string(world(q)) + " is not");
    }
    mem::host_store(r, value, std::memory_order_relaxed);
  }
  uint64_t ll_wait(const uint64_t* word, uint32_t flag, int q) {
    uint64_t seen = 0;
    wait(
        [&] {
          seen = mem::host_load(word, std::memory_order_relaxed);
          return static_cast<uint32_t>(seen >> 32) == flag;
        },
        [&] {
          return context() + ": " + "waiting for LL data of team rank " + std::to_string(q) + " (world " +
                 std::to_string(world(q)) + "): word flag 0x" + hex32(static_cast<uint32_t>(seen >> 32)) +
                 ", expected 0x" + hex32(flag);
        });
    return seen;
  }
  uint64_t ll_wait_acquire(const uint64_t* word, uint32_t flag, int q) {
    const uint64_t seen = ll_wait(word, flag, q);
    std::atomic_thread_fence(std::memory_order_acquire);
    return seen;
  }
  // Earlier puts complete (rt_.quiet() ends with a fence), then the release the LL stores need.
  void release_group() {
    rt_.quiet();
    std::atomic_thread_fence(std::memory_order_release);
  }
  [[noreturn]] void fail_mismatch(int q, uint32_t mine, uint32_t theirs) {
    fail_argument(
        mismatch_text(mine, theirs, q, world(q), HashedArgs{call_.count, call_.root, call_.channels, h_.team.size}));
  }
  // Only this PE sees it, and the others wait for its part of the exchange: the job fails at once
  // (as a GPU PE's trapped kernel fails it), so they leave naming this PE instead of timing out.
  [[noreturn]] void fail_counts(int q, uint64_t sent, uint64_t expected) {
    const std::string why = "alltoallv: team rank " + std::to_string(q) + " (world " + std::to_string(world(q)) +
                            ") sends " + std::to_string(sent) + " elements to this PE, recv_counts[" +
                            std::to_string(q) + "] is " + std::to_string(expected);
    rt_.bootstrap().abort(context() + ": " + why);
    fail_argument(why);
  }

 private:
  int world(int q) const { return team_world_rank(h_.team, q); }
  // This PE left the collective in the middle (the others may wait for its next push): noted like a
  // wait that failed, so that the runtime aborts the job instead of finalizing, unless a barrier of
  // every PE completes first (the program caught the error and the job is in step again).
  [[noreturn]] void fail_argument(const std::string& why) {
    const std::string what = context();
    rt_.bootstrap().note_local_failure(what + ": " + why);
    raise(Errc::invalid_argument, what, why);
  }
  static std::string hex32(uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "%08x", v);
    return b;
  }
  std::string context() const {
    return call_context(call_.op, call_.algo, h_.team.slot, h_.team.size,
                        mem::host_load(v_.seq(), std::memory_order_relaxed),
                        mem::host_load(v_.epoch(), std::memory_order_relaxed), c_);
  }
  template <class Ready, class Describe>
  void wait(Ready&& ready, Describe&& describe) {
    gpucomm::detail::host_wait(static_cast<Ready&&>(ready), rt_.bootstrap(), timeout_ms_,
                               static_cast<Describe&&>(describe));
  }

  Runtime& rt_;
  const CollHandle& h_;
  const Call& call_;
  uint32_t c_;
  ChanView v_;
  int64_t timeout_ms_;
};

}  // namespace gpucomm::coll::detail
