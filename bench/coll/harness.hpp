#pragma once
// gpucomm-bench-coll: memory and clocks of one kind of PE. Host-memory PEs time the calling
// thread with steady_clock; GPU PEs time a stream with CUDA events, eager (back-to-back calls) or
// as replays of a CUDA graph that holds the same calls.
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::bench {

// One collective call on the given stream.
using CollCall = std::function<void(Stream)>;

class Harness {
 public:
  virtual ~Harness() = default;
  virtual bool gpu() const = 0;
  virtual void* alloc(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, const void* src, size_t bytes) = 0;
  // Runs `call` once and waits for it (warm-up, correctness check).
  virtual void run_once(const CollCall& call) = 0;
  // `samples` samples (after one warm-up sample) of `iters` back-to-back calls, each the
  // microseconds per call on this PE; the PEs start every sample together (a host barrier).
  // graph: each sample replays one CUDA graph that holds the `iters` calls (GPU PEs only).
  virtual std::vector<double> samples_us(const CollCall& call, int iters, int samples, bool graph) = 0;
  // GPU PEs: host microseconds per stream-ordered call (`iters` calls enqueued back to back,
  // median of `samples`) and the same for an empty kernel launch on the same stream.
  virtual double enqueue_us(const CollCall& call, int iters, int samples) = 0;
  virtual double launch_floor_us(int iters, int samples) = 0;
  // GPU PEs: microseconds per in-kernel call on the world, `samples` kernels (after one warm-up) of
  // `iters` back-to-back calls by one block of `threads` threads: the barrier (bytes 0) or an f32
  // sum allreduce of `bytes` out of place, by algorithm `a` (automatic: the handle's rules); `session`:
  // the calls in one coll::device::Session. `wrong` gets the result elements that differ from the
  // number of PEs. Empty on host-memory PEs.
  virtual std::vector<double> kernel_samples_us(coll::Collectives& coll, size_t bytes, coll::Algorithm a, int iters,
                                                int samples, unsigned threads, bool session, long long* wrong) = 0;
};

std::unique_ptr<Harness> make_host_harness(Runtime& rt);
std::unique_ptr<Harness> make_gpu_harness(Runtime& rt);  // CUDA builds only

double median(std::vector<double> v);

}  // namespace gpucomm::bench
