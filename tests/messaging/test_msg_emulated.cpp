// The device API and the device backend (header-only device code) run on the host by the SIMT
// emulator of the matching tests (one OS thread per GPU thread, warp collectives as rendezvous):
// one emulated PE whose groups message themselves and each other at thread, warp and block level,
// every protocol size, every mode. This checks the group logic of the protocol (leader decisions,
// broadcasts, group copies, the warp engines on the communicator's queues) in CI; not the GPU's
// memory model or timing (the GPU tests do that).
#include "simt_emulation.hpp"  // first: defines the CUDA names the device headers use

#include <cstdio>

// What the device headers need beyond the matching engines'.
#define __noinline__
#define __shared__ static
inline simt::Dim blockIdx;
inline simt::Dim gridDim{1, 1, 1};
struct alignas(16) int4 {
  int x, y, z, w;
};
inline bool __isGlobal(const void*) {
  return true;
}
// The proxy's warp-aggregated posts (compiled in, never reached: one PE with no proxy) use 64-bit
// shuffles and matches and __activemask; the emulator's collectives are 32-bit.
inline uint64_t __shfl_sync(uint32_t mask, uint64_t v, int src) {
  const auto lo = __shfl_sync(mask, static_cast<uint32_t>(v), src);
  const auto hi = __shfl_sync(mask, static_cast<uint32_t>(v >> 32), src);
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
inline uint32_t __match_any_sync(uint32_t mask, uint64_t v) {
  return __match_any_sync(mask, static_cast<uint32_t>(v)) & __match_any_sync(mask, static_cast<uint32_t>(v >> 32));
}
inline uint32_t __activemask() {
  return 0xffffffffu;  // lanes of an emulated warp do not diverge in the code paths these tests run
}
// A trap ends the test program with the messaging record (the GPU would end the kernel).
namespace emul {
inline const void* g_diag = nullptr;  // the current fixture's msg::Diag
inline const void* g_cfg = nullptr;   // and its msg::Config
[[noreturn]] void trap();
}  // namespace emul
[[noreturn]] inline void __trap() {
  emul::trap();
}

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "config.hpp"
#include "diag.hpp"
#include "gpucomm/base/team.hpp"
#include "gpucomm/messaging/messaging_device.cuh"
#include "test_support.hpp"

namespace emul {
void trap() {
  const auto* d = static_cast<const gpucomm::msg::Diag*>(g_diag);
  if (d && d->state == 2) {
    std::fprintf(stderr, "device trap: %s\n",
                 gpucomm::msg::detail::describe(*d, *static_cast<const gpucomm::msg::Config*>(g_cfg)).c_str());
  } else {
    std::fprintf(stderr, "device trap (no messaging record)\n");
  }
  std::abort();
}
}  // namespace emul

namespace {

using namespace gpucomm;

struct Fixture {
  std::vector<char> heap_storage, local_storage;
  char* bases[1] = {nullptr};
  DeviceDiag diag{};
  msg::Diag msg_diag{};
  DeviceHandle h{};
  msg::StateView view{};
  msg::CommHandle comm{};

  explicit Fixture(msg::Mode mode, const msg::MessengerOptions& o = {}, size_t heap_bytes = size_t(8) << 20) {
    const msg::Config cfg = msg::detail::make_config(o, 1, 0);
    const auto hl = msg::detail::heap_layout(cfg);
    const auto ll = msg::detail::local_layout(cfg);
    heap_storage.assign(hl.total + heap_bytes + 4096, 0);
    local_storage.assign(ll.total + 4096, 0);
    char* heap = heap_storage.data() + (4096 - reinterpret_cast<uintptr_t>(heap_storage.data()) % 4096);
    char* local = local_storage.data() + (4096 - reinterpret_cast<uintptr_t>(local_storage.data()) % 4096);
    bases[0] = heap;
    h.magic = kHandleMagic;
    h.version = kHandleVersion;
    h.bytes = sizeof(DeviceHandle);
    h.rank = 0;
    h.size = 1;
    h.heap_base = heap;
    h.heap_size = hl.total + heap_bytes;
    h.peer_bases = bases;
    h.diag = &diag;
    // One OS thread per GPU thread: on a loaded 2-core machine (or under a sanitizer) a blocked
    // send can wait seconds for a receiver that is only slow.
    h.timeout_ns = 60ull * 1000 * 1000 * 1000;
    view = msg::detail::carve(cfg, heap, local);
    view.diag = &msg_diag;
    msg::detail::init_bins(cfg, view.bin_next, &view.home[msg::home::kChunkFree]);
    msg::CommState& cs = view.comms[0];
    cs.live = 1;
    cs.mode = mode;
    cs.ctx = 0;
    cs.size = 1;
    cs.rank = 0;
    comm.magic = msg::kCommMagic;
    comm.version = msg::kCommVersion;
    comm.bytes = sizeof(msg::CommHandle);
    comm.ctx = 0;
    comm.mode = mode;
    comm.rank = 0;
    comm.size = 1;
    comm.team = world_team(h);
    comm.dev = h;
    comm.state = view;
    emul::g_diag = &msg_diag;
    emul::g_cfg = &view.cfg;
  }
  // Heap memory after the messaging regions (what rt.malloc would hand out).
  char* user(size_t offset) { return h.heap_base + msg::detail::heap_layout(view.cfg).total + offset; }
};

uint8_t pat(uint32_t key, uint64_t i) {
  uint64_t x = (key + i) * 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17) ^ i);
}

const size_t kSizes[] = {0, 1, 8, 20, 21, 24, 25, 192, 193, 2048, 2049, 70000, 600000};

// One group sends every size to itself and receives it: eager sends complete at once, rendezvous
// sends complete in the wait after the receive.
template <class C>
void self_exchange(Fixture& f, char* src, char* dst, std::vector<std::string>& errors, std::mutex& mu) {
  C c;
  for (size_t k = 0; k < std::size(kSizes); ++k) {
    const size_t n = kSizes[k];
    const int tag = static_cast<int>(k);
    const uint32_t key = static_cast<uint32_t>(k * 31 + n);
    for (size_t i = coop::thread_rank(c); i < n; i += coop::size(c)) src[i] = static_cast<char>(pat(key, i));
    coop::sync(c);
    msg::Request s = msg::isend(c, f.comm, src, n, 0, tag);
    const msg::Status st = msg::recv(c, f.comm, dst, 1 << 20, 0, tag);
    msg::wait(c, f.comm, s);
    if (coop::thread_rank(c) == 0) {
      std::lock_guard<std::mutex> lock(mu);
      if (st.source != 0 || st.tag != tag || st.bytes != n || st.error != 0)
        errors.push_back("size " + std::to_string(n) + ": status bytes " + std::to_string(st.bytes));
      for (size_t i = 0; i < n; ++i) {
        if (static_cast<uint8_t>(dst[i]) != pat(key, i)) {
          errors.push_back("size " + std::to_string(n) + ": byte " + std::to_string(i));
          break;
        }
      }
    }
    coop::sync(c);
  }
}

template <class C>
void run_self(msg::Mode mode, uint32_t threads, bool heap_src) {
  Fixture f(mode);
  std::vector<char> priv(1 << 20), dst(1 << 20);
  char* src = heap_src ? f.user(0) : priv.data();
  std::vector<std::string> errors;
  std::mutex mu;
  simt::launch(threads, [&] {
    if (std::is_same_v<C, coop::Thread> && threadIdx.x != 0) return;
    self_exchange<C>(f, src, dst.data(), errors, mu);
  });
  for (const auto& e : errors) ADD_FAILURE() << e;
}

TEST(MsgEmulated, SelfExchangeThread) {
  run_self<coop::Thread>(msg::Mode::mpi, 1, true);
  run_self<coop::Thread>(msg::Mode::mpi, 1, false);
}
TEST(MsgEmulated, SelfExchangeWarp) {
  run_self<coop::Warp>(msg::Mode::mpi, 32, true);
  run_self<coop::Warp>(msg::Mode::mpi, 32, false);
  run_self<coop::Warp>(msg::Mode::no_any_source, 32, true);
  run_self<coop::Warp>(msg::Mode::no_unexpected, 32, false);
  run_self<coop::Warp>(msg::Mode::unordered, 32, true);
}
TEST(MsgEmulated, SelfExchangeBlock) {
  run_self<coop::Block>(msg::Mode::mpi, 64, true);
  run_self<coop::Block>(msg::Mode::mpi, 64, false);
  run_self<coop::Block>(msg::Mode::no_any_source, 64, false);
}

// Two warps of one block: warp 0 sends `count` messages, warp 1 receives them with ANY_TAG and
// checks their order; both progress the same PE concurrently (the progress lock).
TEST(MsgEmulated, TwoWarpsConcurrently) {
  Fixture f(msg::Mode::mpi);
  const int count = 60;
  std::vector<uint64_t> out(size_t{4} * count), in(4);
  std::vector<std::string> errors;
  std::mutex mu;
  simt::launch(64, [&] {
    coop::Warp w;
    if (coop::warp_id() == 0) {
      for (int k = 0; k < count; ++k) {
        uint64_t* v = out.data() + size_t{4} * static_cast<size_t>(k);
        if (coop::lane_id() == 0) v[0] = static_cast<uint64_t>(k);
        __syncwarp();
        msg::send(w, f.comm, v, 8 + static_cast<size_t>(k % 4) * 8, 0, k % 3);
      }
    } else {
      for (int k = 0; k < count; ++k) {
        const msg::Status st = msg::recv(w, f.comm, in.data(), 32, 0, msg::kAnyTag);
        if (coop::lane_id() == 0) {
          std::lock_guard<std::mutex> lock(mu);
          if (in[0] != static_cast<uint64_t>(k) || st.tag != k % 3)
            errors.push_back("message " + std::to_string(k) + " came as " + std::to_string(in[0]));
        }
        __syncwarp();
      }
    }
  });
  for (const auto& e : errors) ADD_FAILURE() << e;
}

// A rendezvous by get into a receive that another group posted: warp 0 posts the large receive,
// then either waits for it (it claims the get and moves the data itself) or first waits for a small
// message that warp 1 sends only after its blocking large send completed (the holder must claim
// the get after steal_ns and move the data, or both wait forever). Few request slots: a slot the
// holder frees late would run them out.
void get_claimed_by_either(bool waiter_first, int rounds) {
  msg::MessengerOptions o{};
  o.requests = 64;
  Fixture f(msg::Mode::mpi, o);
  const size_t n = 8192;  // past the eager limit: a rendezvous
  char* src = f.user(0);
  std::vector<char> dst(n);
  std::atomic<int> posted{-1};
  std::vector<std::string> errors;
  std::mutex mu;
  simt::launch(64, [&] {
    coop::Warp w;
    for (int r = 0; r < rounds; ++r) {
      const auto key = static_cast<uint32_t>(r * 977 + 5);
      if (coop::warp_id() == 0) {
        msg::Request big = msg::irecv(w, f.comm, dst.data(), n, 0, 1);
        if (coop::lane_id() == 0) posted.store(r);
        __syncwarp();
        uint64_t small = 0;
        if (!waiter_first) (void)msg::recv(w, f.comm, &small, 8, 0, 2);
        const msg::Status st = msg::wait(w, f.comm, big);
        if (coop::lane_id() == 0) {
          std::lock_guard<std::mutex> lock(mu);
          if (st.bytes != n || st.error != 0) errors.push_back("round " + std::to_string(r) + ": status");
          for (size_t i = 0; i < n; ++i) {
            if (static_cast<uint8_t>(dst[i]) != pat(key, i)) {
              errors.push_back("round " + std::to_string(r) + ": byte " + std::to_string(i));
              break;
            }
          }
        }
      } else {
        for (size_t i = coop::lane_id(); i < n; i += 32) src[i] = static_cast<char>(pat(key, i));
        while (posted.load() != r) std::this_thread::yield();
        __syncwarp();
        msg::send(w, f.comm, src, n, 0, 1);
        uint64_t small = static_cast<uint64_t>(r);
        if (!waiter_first) msg::send(w, f.comm, &small, 8, 0, 2);
      }
      __syncthreads();
    }
  });
  for (const auto& e : errors) ADD_FAILURE() << e;
}

TEST(MsgEmulated, RendezvousGetClaimedByItsWaiter) {
  get_claimed_by_either(true, 60);
}
TEST(MsgEmulated, RendezvousGetClaimedByTheHolder) {
  get_claimed_by_either(false, 60);
}

// The message-rate shape: warp 0 posts a window of receives (message k of sender s has tag s; ANY_SOURCE
// in mode mpi), releases the sending warps and waits for all (its rounds take the posts and drain
// the messages in warp batches); every payload is checked. Rounds repeat on the same keys.
void window_into_one_warp(msg::Mode mode, int senders, int per, int rounds, bool all_sent_first = false) {
  msg::MessengerOptions o{};
  o.slots = 64;  // every message of a round fits the ring: the receiver drains them in batches
  Fixture f(mode, o);
  std::atomic<int> sent{0};
  const int w = senders * per;
  std::vector<uint64_t> rbuf(static_cast<size_t>(w)), sbuf(static_cast<size_t>(senders) * 4);
  std::vector<msg::Request> reqs(static_cast<size_t>(w));
  std::atomic<int> go{0};
  std::vector<std::string> errors;
  std::mutex mu;
  simt::launch(static_cast<uint32_t>(32 * (senders + 1)), [&] {
    coop::Warp c;
    const int warp = static_cast<int>(coop::warp_id());
    for (int r = 0; r < rounds; ++r) {
      if (warp == 0) {
        const int source = mode == msg::Mode::mpi ? msg::kAnySource : 0;
        for (int j = 0; j < w; ++j)
          reqs[static_cast<size_t>(j)] = msg::irecv(c, f.comm, &rbuf[static_cast<size_t>(j)], 8, source, j % senders);
        if (coop::lane_id() == 0) go.store(r + 1);
        if (all_sent_first)
          while (sent.load() < (r + 1) * senders) std::this_thread::yield();
        __syncwarp();
        msg::waitall(c, f.comm, reqs.data(), w);
        if (coop::lane_id() == 0) {
          for (int j = 0; j < w; ++j) {
            const uint64_t want =
                (static_cast<uint64_t>(j % senders) << 32) | static_cast<uint64_t>(r * per + j / senders);
            if (rbuf[static_cast<size_t>(j)] != want) {
              std::lock_guard<std::mutex> lock(mu);
              errors.push_back("round " + std::to_string(r) + " receive " + std::to_string(j) + " got " +
                               std::to_string(rbuf[static_cast<size_t>(j)]) + ", want " + std::to_string(want));
              break;
            }
          }
        }
        __syncwarp();
      } else {
        const int sender = warp - 1;
        while (go.load() < r + 1) std::this_thread::yield();
        uint64_t* out = &sbuf[static_cast<size_t>(sender) * 4];
        for (int k = 0; k < per; ++k) {
          if (coop::lane_id() == 0) out[0] = (static_cast<uint64_t>(sender) << 32) | static_cast<uint64_t>(r * per + k);
          __syncwarp();
          msg::send(c, f.comm, out, 8, 0, sender);
        }
        if (coop::lane_id() == 0) sent.fetch_add(1);
      }
      __syncthreads();
    }
  });
  for (const auto& e : errors) ADD_FAILURE() << e;
}

TEST(MsgEmulated, WindowIntoOneWarpMpi) {
  window_into_one_warp(msg::Mode::mpi, 3, 12, 3);
}
TEST(MsgEmulated, WindowIntoOneWarpNoAnySource) {
  window_into_one_warp(msg::Mode::no_any_source, 2, 20, 3);
}
TEST(MsgEmulated, WindowIntoOneWarpInBatches) {
  window_into_one_warp(msg::Mode::mpi, 3, 12, 2, true);
  window_into_one_warp(msg::Mode::no_any_source, 4, 9, 2, true);
}

// Probes, matched probes, cancel and PROC_NULL at warp level.
TEST(MsgEmulated, ProbesAndCancel) {
  Fixture f(msg::Mode::mpi);
  std::vector<char> a(100, 'a'), b(5000, 'b'), in(8192);
  std::vector<std::string> errors;
  simt::launch(32, [&] {
    coop::Warp w;
    msg::Request s1 = msg::isend(w, f.comm, a.data(), a.size(), 0, 3);
    msg::Request s2 = msg::isend(w, f.comm, b.data(), b.size(), 0, 4);
    const msg::Status p = msg::probe(w, f.comm, 0, 4);
    msg::Status ms{};
    msg::Message m = msg::mprobe(w, f.comm, msg::kAnySource, 3, &ms);
    const bool again = msg::iprobe(w, f.comm, 0, 3);
    const msg::Status r1 = msg::mrecv(w, f.comm, in.data(), in.size(), m);
    const msg::Status r2 = msg::recv(w, f.comm, in.data(), in.size(), 0, 4);
    msg::wait(w, f.comm, s1);
    msg::wait(w, f.comm, s2);
    msg::Request never = msg::irecv(w, f.comm, in.data(), 8, 0, 99);
    msg::cancel(w, f.comm, never);
    const msg::Status c = msg::wait(w, f.comm, never);
    const msg::Status pn = msg::recv(w, f.comm, in.data(), 8, msg::kProcNull, 1);
    if (coop::lane_id() == 0) {
      if (p.bytes != 5000 || p.tag != 4) errors.push_back("probe");
      if (ms.bytes != 100) errors.push_back("mprobe");
      if (again) errors.push_back("iprobe saw a message mprobe took");
      if (r1.bytes != 100 || r2.bytes != 5000) errors.push_back("mrecv/recv");
      if (c.error != msg::kErrCancelled) errors.push_back("cancel");
      if (pn.source != msg::kProcNull) errors.push_back("PROC_NULL");
    }
  });
  for (const auto& e : errors) ADD_FAILURE() << e;
}

}  // namespace
