#include "ucx_harness.hpp"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <stdexcept>

#include "gpucomm/core/env.hpp"
#include "polling.hpp"
#include "test_support.hpp"

namespace ucxtest {

using gpucomm::transport::ucx::Backoff;
using gpucomm::transport::ucx::progressing_barrier;
int g_failures = 0;

void check(bool ok, const char* condition, const char* format, ...) {
  if (ok) return;
  std::fprintf(stderr, "CHECK failed: %s: ", condition);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  ++g_failures;
}

Job::Job(gpucomm::Runtime& runtime, std::vector<bool> reach) : rt(runtime) {
  me = rt.rank();
  n = rt.size();
  heap = rt.heap().base();
  heap_bytes = rt.heap().size();
  seed = job_seed(rt);
  gpucomm::transport::RemoteContext ctx;
  ctx.bootstrap = &rt.bootstrap();
  ctx.rank = me;
  ctx.size = n;
  ctx.heap_base = heap;
  ctx.heap_bytes = heap_bytes;
  ctx.heap_on_device = rt.pe_kind() == gpucomm::PeKind::gpu;
  ctx.remote_pes = reach.empty() ? std::vector<bool>(static_cast<size_t>(n), true) : std::move(reach);
  remote = gpucomm::transport::open_remote("ucx", ctx);
}

void Job::wait(const std::function<bool()>& ready, const std::string& what) {
  const int64_t limit = gpucomm::env::wait_timeout_ms();
  const auto start = std::chrono::steady_clock::now();
  Backoff backoff(false);
  for (uint64_t spin = 0;; ++spin) {
    backoff.after(remote->progress());
    if (ready()) return;
    if ((spin & 255) == 0 && limit > 0 && std::chrono::steady_clock::now() - start > std::chrono::milliseconds(limit))
      throw std::runtime_error("rank " + std::to_string(me) + " timed out waiting for " + what);
  }
}

void Job::barrier() {
  remote->flush();
  progressing_barrier([this] { return remote->progress(); }, [this] { rt.bootstrap().barrier(); }, false);
}

uint64_t job_seed(gpucomm::Runtime& rt) {
  auto all = rt.bootstrap().allgather(std::to_string(gpucomm::testing::test_seed()));
  return std::stoull(all[0]);
}

uint64_t mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t x = a ^ 0x9e3779b97f4a7c15ULL;
  for (uint64_t v : {b, c, d}) {
    x ^= v + 0x9e3779b97f4a7c15ULL + (x << 6) + (x >> 2);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
  }
  return x;
}

void fill_pattern(uint8_t* p, size_t n, uint64_t key) {
  uint64_t x = key;
  for (size_t i = 0; i < n; ++i) {
    if ((i & 7) == 0) x = mix(x, i);
    p[i] = static_cast<uint8_t>(x >> ((i & 7) * 8));
  }
}

size_t check_pattern(const uint8_t* p, size_t n, uint64_t key) {
  uint64_t x = key;
  for (size_t i = 0; i < n; ++i) {
    if ((i & 7) == 0) x = mix(x, i);
    if (p[i] != static_cast<uint8_t>(x >> ((i & 7) * 8))) return i;
  }
  return n;
}

uint64_t load_acquire(const uint64_t* p) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_acquire);
}

void store_release(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_release);
}

}  // namespace ucxtest
