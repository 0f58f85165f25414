#pragma once
// Executes descriptors of a GPU PE on the executor's own stream, several descriptors per CUDA call:
// what one round of the proxy thread started goes through a RoundBuilder (round_builder.hpp: copies
// merged, inline puts and set signals as stream memory operations or scatter kernels, add signals
// and atomics as one-thread kernels, all in order) and is issued at flush().
// Stream order puts every signal after the data of its entry and of the entries before it.
// Completion: the round's last stream operation writes the round's number into a pinned host word
// after a system-wide barrier; the proxy thread reads it with a plain load (no CUDA call). Without
// stream memory operations (old drivers, GPUCOMM_PROXY_MEMOPS=0) kernels and events do it all.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "executor.hpp"
#include "round_builder.hpp"

namespace gpucomm::proxy {

struct CopyEngineOptions {
  bool memops = true;       // stream memory operations where the driver offers them
  uint32_t memop_max = 64;  // a round with more small writes uses the scatter kernel
  int64_t timeout_ms = 0;   // limit for waiting on the stream (0: none)
  int self = -1;            // this PE: signals to it are read on this GPU only
};

class CopyEngineExecutor final : public Executor, private StreamOps {
 public:
  // `user_bases[pe]`: pe's user part as mapped on this GPU (nullptr: not mapped; control blocks lie
  // just below). `device`: the CUDA device of this PE; the stream is created there.
  CopyEngineExecutor(std::vector<char*> user_bases, int device, CopyEngineOptions opts = {});
  ~CopyEngineExecutor() override;
  CopyEngineExecutor(const CopyEngineExecutor&) = delete;
  CopyEngineExecutor& operator=(const CopyEngineExecutor&) = delete;
  const char* name() const override { return "copy-engine"; }
  void start(const Descriptor& d, uint64_t* done) override;
  void flush() override;
  void progress() override;
  bool busy() const override { return !groups_.empty() || !unflushed_.empty(); }

 private:
  struct Group {  // entries started in one round
    uint64_t round;
    cudaEvent_t event;  // without memory operations
    std::vector<uint64_t*> done;
    uint64_t stage_end;  // scatter staging slots below this are free once the round completed
  };

  // StreamOps: the builder's operations on the stream.
  void copy(char* dst, const char* src, uint64_t bytes) override;
  void memops(CUstreamBatchMemOpParams* ops, unsigned n) override;
  void scatter(const ScatterWrite* w, uint32_t n) override;
  void signal_kernel(uint64_t* addr, uint64_t value, SignalOp op) override;
  void atomic_kernel(AtomicOp op, unsigned width, void* addr, uint64_t operand, uint64_t compare,
                     uint64_t* result) override;
  void reclaim_slots() override;

  char* at(int pe, int64_t off) const;
  void close_round(std::vector<uint64_t*> done, bool through_builder);
  cudaEvent_t take_event();
  BatchMemOpFn probe_memops();

  CopyEngineOptions opts_;
  std::vector<char*> bases_;
  cudaStream_t stream_ = nullptr;
  BatchMemOpFn memop_ = nullptr;
  ScatterWrite* staging_ = nullptr;  // pinned scatter slots
  std::unique_ptr<RoundBuilder> round_;
  std::deque<Group> groups_;
  std::vector<uint64_t*> unflushed_;
  std::vector<cudaEvent_t> free_events_;
  uint64_t round_no_ = 0;
  uint64_t* done_host_ = nullptr;  // pinned: the last round whose work completed
  uint64_t done_dev_ = 0;          // its device address
  uint32_t idle_polls_ = 0;
  bool round_remote_ = false;  // an entry of the open round targets another PE
};

}  // namespace gpucomm::proxy
