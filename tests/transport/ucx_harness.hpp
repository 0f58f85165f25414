#pragma once
// Harness of the UCX transport's multi-process tests (gpucomm_test_ucx_pe): a Job is this PE's
// runtime (host-memory PE: bootstrap and symmetric heap) plus the transport opened over it. The
// target of a put over UCX's TCP transport must progress its own worker for the put to land, so
// every wait here calls progress() (one thread: the Remote is not thread-safe).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/gpucomm.hpp"
#include "gpucomm/transport/transport.hpp"

namespace ucxtest {

using gpucomm::transport::Completion;
using gpucomm::transport::Remote;
using AtomicOp = gpucomm::AtomicOp;

extern int g_failures;
// Records a failed check (printed with the condition); the scenario goes on.
void check(bool ok, const char* condition, const char* format, ...) __attribute__((format(printf, 3, 4)));
#define UCX_CHECK(cond, ...) ::ucxtest::check(static_cast<bool>(cond), #cond, __VA_ARGS__)

struct Job {
  Job(gpucomm::Runtime& runtime, std::vector<bool> reach = {});
  gpucomm::Runtime& rt;
  std::unique_ptr<Remote> remote;
  int me = 0, n = 1;
  char* heap = nullptr;
  size_t heap_bytes = 0;
  uint64_t seed = 0;  // rank 0's, the same on every PE

  Remote& r() { return *remote; }
  template <class T>
  T* at(uint64_t offset) const {
    return reinterpret_cast<T*>(heap + offset);
  }
  // Progresses the transport until ready() holds; throws after GPUCOMM_TIMEOUT naming `what`.
  void wait(const std::function<bool()>& ready, const std::string& what);
  // flush(), then a bootstrap barrier during which a helper thread progresses the transport
  // (the peers may need this PE's progress to finish their own flushes).
  void barrier();
};

// The job's seed: GPUCOMM_TEST_SEED, or a fresh one drawn by rank 0.
uint64_t job_seed(gpucomm::Runtime& rt);
uint64_t mix(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0);
// A byte pattern determined by `key`; check_pattern returns the index of the first wrong byte, or n.
void fill_pattern(uint8_t* p, size_t n, uint64_t key);
size_t check_pattern(const uint8_t* p, size_t n, uint64_t key);
uint64_t load_acquire(const uint64_t* p);
void store_release(uint64_t* p, uint64_t v);

}  // namespace ucxtest
