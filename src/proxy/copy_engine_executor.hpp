#pragma once
// Executes descriptors of a GPU PE with the copy engine: cudaMemcpyAsync between the producer's
// device memory and the peers' heaps mapped into this process, on the executor's own stream.
// Signals and atomics are one-thread kernels on the same stream (a fence.sc.sys, then a release
// store, a posted add or the atomic), so stream order puts every signal after the data of its
// entry and of the entries before it. Completion is tracked with one event per round of
// started entries (late completion: the proxy thread never waits for a copy).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <deque>
#include <vector>

#include "executor.hpp"

namespace gpucomm::proxy {

class CopyEngineExecutor final : public Executor {
 public:
  // `user_bases[pe]`: pe's user part as mapped on this GPU (nullptr: not mapped; control blocks lie
  // just below). `device`: the CUDA device of this PE; the stream is created there.
  CopyEngineExecutor(std::vector<char*> user_bases, int device);
  ~CopyEngineExecutor() override;
  const char* name() const override { return "copy-engine"; }
  void start(const Descriptor& d, uint64_t* done) override;
  void flush() override;
  void progress() override;
  bool busy() const override { return !groups_.empty() || !unflushed_.empty(); }

 private:
  char* at(int pe, int64_t off) const;
  void check(cudaError_t e, const char* call, const Descriptor& d) const;
  uint64_t* stage_inline(uint64_t value);
  cudaEvent_t take_event();

  struct Group {  // entries started before one event
    cudaEvent_t event;
    std::vector<uint64_t*> done;
    uint64_t stage_end;  // inline staging slots below this are free once the event completed
  };
  std::vector<char*> bases_;
  cudaStream_t stream_ = nullptr;
  std::deque<Group> groups_;
  std::vector<uint64_t*> unflushed_;
  std::vector<cudaEvent_t> free_events_;
  uint64_t* staging_ = nullptr;  // pinned slots for inline payloads
  uint64_t stage_next_ = 0, stage_free_ = 0;
};

}  // namespace gpucomm::proxy
