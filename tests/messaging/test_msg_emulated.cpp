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

#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
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
  std::vector<matching::Envelope> queues;
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
    h.timeout_ns = 5ull * 1000 * 1000 * 1000;
    view = msg::detail::carve(cfg, heap, local);
    view.diag = &msg_diag;
    queues.assign(size_t{2} * cfg.queue_cap, {});
    msg::CommState& cs = view.comms[0];
    cs.live = 1;
    cs.mode = mode;
    cs.ctx = 0;
    cs.size = 1;
    cs.rank = 0;
    cs.cap = cfg.queue_cap;
    cs.umq = queues.data();
    cs.prq = queues.data() + cfg.queue_cap;
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
