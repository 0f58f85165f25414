// Checks that ship: bad inputs refused with a clear error (never a crash, never a hang), heaps and
// collective allocations that differ between PEs named, puts to a dead PE refused, barrier
// timeouts that blame the stalled PE, no descriptor leaking into programs a PE starts.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fault_pe.hpp"
#include "gpucomm/gpucomm.hpp"

namespace faultpe {
namespace {

using gpucomm::Cmp;
using gpucomm::Errc;
using gpucomm::Error;
using gpucomm::Runtime;
using gpucomm::SignalOp;

// Runs every bad call; each must raise gpucomm::Error with `code` (invalid argument unless named).
int bad_inputs(Runtime& rt) {
  const int n = rt.size();
  auto* s = rt.alloc<uint64_t>(4);
  char* end = rt.heap().base() + rt.heap().size();
  uint64_t local = 0;
  gpucomm::Team none;
  struct Case {
    const char* what;
    std::function<void()> call;
    Errc code = Errc::invalid_argument;
  };
  const std::vector<Case> cases = {
      {"put to pe = size", [&] { rt.put(s, s, 8, n); }},
      {"put to pe = -1", [&] { rt.put(s, s, 8, -1); }},
      {"put to pe = INT_MAX", [&] { rt.put(s, s, 8, INT_MAX); }},
      {"put to pe = INT_MIN", [&] { rt.put(s, s, 8, INT_MIN); }},
      {"get from pe = INT_MAX", [&] { rt.get(&local, s, 8, INT_MAX); }},
      {"put_signal to pe = INT_MAX", [&] { rt.put_signal(s, s, 8, s + 1, 1, SignalOp::set, INT_MAX); }},
      {"signal to pe = -7", [&] { rt.signal(s, 1, SignalOp::add, -7); }},
      {"atomic to pe = size", [&] { rt.atomic_add<uint64_t>(s, 1, n); }},
      {"put past the heap's end", [&] { rt.put(end - 8, s, 64, 0); }},
      {"put to a local address", [&] { rt.put(&local, s, 8, 0); }},
      {"put from a null source", [&] { rt.put(s, nullptr, 8, 0); }},
      {"get into a null destination", [&] { rt.get(nullptr, s, 8, 0); }},
      {"get of SIZE_MAX bytes", [&] { rt.get(&local, s, SIZE_MAX, 0); }},
      {"misaligned atomic",
       [&] { rt.atomic_add<uint64_t>(reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(s) + 1), 1, 0); }},
      {"misaligned signal",
       [&] { rt.signal(reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(s) + 4), 1, SignalOp::set, 0); }},
      {"wait_until with Cmp 99", [&] { rt.wait_until<uint64_t>(s, static_cast<Cmp>(99), 1); }},
      {"test with Cmp 6", [&] { rt.test<uint64_t>(s, static_cast<Cmp>(6), 1); }},
      {"signal with SignalOp 7", [&] { rt.signal(s, 1, static_cast<SignalOp>(7), 0); }},
      {"put_signal with SignalOp 2", [&] { rt.put_signal(s, s, 8, s + 1, 1, static_cast<SignalOp>(2), 0); }},
      {"wait_until on a local address", [&] { rt.wait_until<uint64_t>(&local, Cmp::eq, 0); }},
      {"malloc(2^50)", [&] { rt.malloc(size_t(1) << 50); }},
      {"aligned_alloc with alignment 3", [&] { rt.aligned_alloc(3, 64); }},
      {"calloc whose size overflows", [&] { rt.calloc(SIZE_MAX / 2, 4); }},
      {"free of a local address", [&] { rt.free(&local); }},
      {"free inside a block", [&] { rt.free(reinterpret_cast<char*>(s) + 8); }},
      {"barrier of no team", [&] { rt.barrier(none); }},
      {"split of no team", [&] { rt.split(none, 0, 0); }},
      {"node_of(-1)", [&] { rt.node_of(-1); }},
      {"ptr for pe = size", [&] { rt.ptr(s, n); }},
  };
  int refused = 0;
  for (const Case& c : cases) {
    try {
      c.call();
      say("NOT REFUSED rank %d: %s", rt.rank(), c.what);
    } catch (const Error& e) {
      if (e.code() == c.code) {
        ++refused;
      } else {
        say("WRONG ERROR rank %d: %s: %s", rt.rank(), c.what, e.what());
      }
    }
  }
  rt.barrier_all();  // the job is still healthy
  rt.free(s);
  say("RESULT rank %d bad_inputs_tried=%zu refused=%d", rt.rank(), cases.size(), refused);
  return refused == static_cast<int>(cases.size()) ? 0 : kCheckFailed;
}

// Every PE's start-up must fail naming the other PE (rank `victim` asks for another heap size).
int heap_mismatch(int victim) {
  const int me = env_rank();
  if (me == victim) setenv("GPUCOMM_HEAP_SIZE", "3M", 1);
  try {
    Runtime rt;
    say("NOT REFUSED rank %d: heaps of different sizes", rt.rank());
    return kCheckFailed;
  } catch (const Error& e) {
    const std::string other = "rank " + std::to_string(me == victim ? 0 : victim) + " asked for a symmetric heap";
    const bool named = e.code() == Errc::invalid_argument && std::string(e.what()).find(other) != std::string::npos;
    say("%s rank %d: %s", named ? "REFUSED" : "WRONG ERROR", me, e.what());
    if (named) say("PE OK rank %d", me);
    return named ? 0 : kCheckFailed;
  }
}

// A collective allocation of another size on `victim`: every PE gets an error naming a PE that
// differs, nobody writes at a wrong offset, and the job goes on (the next allocation matches).
int alloc_mismatch(Runtime& rt, int victim) {
  const size_t bytes = rt.rank() == victim ? 8192 : 4096;
  int ok = 0;
  try {
    rt.malloc(bytes);
    say("NOT REFUSED rank %d: allocation of %zu bytes", rt.rank(), bytes);
  } catch (const Error& e) {
    ok = e.code() == Errc::invalid_argument && std::string(e.what()).find("is not symmetric") != std::string::npos;
    say("%s rank %d: %s", ok ? "REFUSED" : "WRONG ERROR", rt.rank(), e.what());
  }
  void* p = rt.malloc(4096);  // the allocators are in step again
  rt.barrier_all();
  rt.free(p);
  return ok ? 0 : kCheckFailed;
}

// After `victim` died, a put to it (and to anybody) raises a peer failure instead of succeeding.
int dead_put(Runtime& rt, int victim) {
  auto* s = rt.alloc<uint64_t>(1);
  rt.barrier_all();
  if (rt.rank() == victim) {
    fault_here(rt.rank(), "SIGKILL");
    ::raise(SIGKILL);
  }
  for (int i = 0; i < 10000 && !rt.failed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  try {
    uint64_t v = 1;
    rt.put(s, &v, sizeof v, victim);
    say("NOT REFUSED rank %d: a put to dead PE %d", rt.rank(), victim);
    return kCheckFailed;
  } catch (const Error& e) {
    const bool ok = e.code() == Errc::peer_failure;
    say("%s rank %d: %s", ok ? "REFUSED" : "WRONG ERROR", rt.rank(), e.what());
    return ok ? 0 : kCheckFailed;
  }
}

// `victim` stops itself before a barrier: the timeout message must name it.
int barrier_blame(Runtime& rt, int victim) {
  rt.barrier_all();
  if (rt.rank() == victim) {
    fault_here(rt.rank(), "SIGSTOP");
    ::raise(SIGSTOP);
  }
  rt.barrier_all();
  return kCheckFailed;  // unreachable while the victim is stopped
}

// Every descriptor above stderr is close-on-exec once the runtime exists: programs a PE starts
// do not inherit the store's listening socket, the lifeline or the heap's memfds.
int cloexec(Runtime& rt) {
  int leaks = 0, seen = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    const std::string name = e.path().filename().string();
    int fd = -1;
    std::from_chars(name.data(), name.data() + name.size(), fd);
    if (fd <= 2) continue;
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0) continue;  // the directory's own descriptor, closed since
    ++seen;
    if (!(flags & FD_CLOEXEC)) {
      std::error_code ec;
      say("LEAK rank %d: fd %d (%s) is inherited by programs this PE starts", rt.rank(), fd,
          std::filesystem::read_symlink(e.path(), ec).c_str());
      ++leaks;
    }
  }
  rt.barrier_all();
  say("RESULT rank %d descriptors=%d inheritable=%d", rt.rank(), seen, leaks);
  return leaks == 0 ? 0 : kCheckFailed;
}

}  // namespace

int run_check(const std::string& scenario, int victim, int /*arg*/) {
  if (scenario == "heap-mismatch") return heap_mismatch(victim);
  const bool known = scenario == "bad-input" || scenario == "alloc-mismatch" || scenario == "dead-put" ||
                     scenario == "barrier-blame" || scenario == "cloexec";
  if (!known) return -1;
  return with_runtime([&](Runtime& rt) {
    if (scenario == "bad-input") return bad_inputs(rt);
    if (scenario == "alloc-mismatch") return alloc_mismatch(rt, victim);
    if (scenario == "dead-put") return dead_put(rt, victim);
    if (scenario == "barrier-blame") return barrier_blame(rt, victim);
    return cloexec(rt);
  });
}

}  // namespace faultpe
