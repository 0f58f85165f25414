#pragma once
// Turns the entries of one CPU proxy round into as few stream operations as keep their order -
// the copy-engine executor's batching, as host logic that tests drive on host memory:
//   copy(dst, src, n)   consecutive copies whose ranges continue each other (and do not overlap)
//                       become one
//   write(addr, v, n)   inline writes of 1..8 bytes and set signals form a segment: stream memory
//                       operations (32/64-bit writes, a system-wide barrier before every signal) when
//                       the driver has them, the segment holds at most `memop_max` writes and all are
//                       naturally aligned 4 or 8 bytes; otherwise scatter batches (one kernel thread
//                       per write) - the writes of a batch never overlap: a later write of the same
//                       address and size replaces the earlier one (nothing orders them otherwise), a
//                       write that overlaps one of another shape, or may straddle words, starts a new
//                       batch
//   signal(addr, v, op) set signals join the segment (a GPU-wide barrier before one whose readers
//                       are on this GPU, system-wide otherwise); add signals (and every signal
//                       without stream memory operations) are one-thread kernels after what came
//                       before
//   atomic(...)         a one-thread kernel after what came before
// Everything is issued in the order of the calls: a signal is issued after the data of every entry
// before it. Memory operations are held back until something else must be issued or the round
// ends, so that finish() can append the round's completion mark to the same call.
#include <cuda.h>

#include <cstdint>
#include <vector>

#include "copy_engine_kernels.hpp"
#include "gpucomm/base/ops.hpp"
#include "stream_memops.hpp"

namespace gpucomm::proxy {

// Where the operations go, in stream order (the executor: a CUDA stream; tests: host memory).
class StreamOps {
 public:
  virtual ~StreamOps() = default;
  virtual void copy(char* dst, const char* src, uint64_t bytes) = 0;
  virtual void memops(CUstreamBatchMemOpParams* ops, unsigned n) = 0;  // n <= kMaxMemOps
  virtual void scatter(const ScatterWrite* w, uint32_t n) = 0;         // w: staging slots of one batch
  virtual void signal_kernel(uint64_t* addr, uint64_t value, SignalOp op) = 0;
  virtual void atomic_kernel(AtomicOp op, unsigned width, void* addr, uint64_t operand, uint64_t compare,
                             uint64_t* result) = 0;
  // Every staging slot is in flight: make the stream release some (RoundBuilder::release_slots)
  // before returning. The builder issued everything it holds before this call.
  virtual void reclaim_slots() = 0;
};

struct RoundLimits {
  bool memops = true;         // stream memory operations available
  uint32_t memop_max = 64;    // small writes of a segment issued as memory operations at most
  uint64_t slots = 1u << 16;  // scatter staging slots (a power of two)
  uint32_t batch_max = 8192;  // writes per scatter batch
};

class RoundBuilder {
 public:
  // `staging`: `limits.slots` slots that the scatter batches are written into (pinned memory).
  RoundBuilder(StreamOps& out, RoundLimits limits, ScatterWrite* staging);
  void copy(char* dst, const char* src, uint64_t bytes);
  void write(uint64_t addr, uint64_t value, uint32_t bytes);
  // `this_gpu`: only threads of this GPU read the signal (its target is this PE): the barrier before
  // it may be GPU-wide instead of system-wide.
  void signal(uint64_t* addr, uint64_t value, SignalOp op, bool this_gpu = false);
  void atomic(AtomicOp op, unsigned width, void* addr, uint64_t operand, uint64_t compare, uint64_t* result);
  // Issues everything held, with `tail` (memory operations, e.g. the completion mark) last.
  void finish(const CUstreamBatchMemOpParams* tail = nullptr, unsigned n = 0);
  // Staging slots below `stage_next()` are taken; the stream frees them up to a value it saw.
  uint64_t stage_next() const { return stage_next_; }
  void release_slots(uint64_t upto) {
    if (upto > stage_free_) stage_free_ = upto;
  }
  bool memops() const { return limits_.memops; }
  void disable_memops() { limits_.memops = false; }

 private:
  struct Small {
    uint64_t addr;
    uint64_t value;
    uint32_t bytes;
    bool signal;    // a set signal (8 bytes)
    bool this_gpu;  // signal read on this GPU only
  };
  void emit_copy();
  void emit_small();
  void emit_batch();
  void submit_ops();
  void scatter_write(uint64_t addr, uint64_t value, uint32_t bytes);
  void issue_signal(uint64_t* addr, uint64_t value, SignalOp op, bool this_gpu);

  StreamOps& out_;
  RoundLimits limits_;
  ScatterWrite* staging_;
  char* copy_dst_ = nullptr;
  const char* copy_src_ = nullptr;
  uint64_t copy_bytes_ = 0;
  std::vector<Small> small_;
  std::vector<CUstreamBatchMemOpParams> ops_;
  uint64_t stage_next_ = 0, stage_free_ = 0, batch_begin_ = 0;
  uint32_t batch_n_ = 0, generation_ = 1;
  // The open batch's 8-byte words (open addressing; entries of older generations are free): the
  // bytes written in the word and the slot of its latest write, one cache line per lookup.
  static constexpr uint64_t kTable = uint64_t(1) << 14;  // >= 2 x batch_max
  struct Word {
    uint64_t word;
    uint64_t slot;
    uint32_t generation;
    uint32_t mask;
  };
  std::vector<Word> words_ = std::vector<Word>(kTable, Word{0, 0, 0, 0});
  Word& word_entry(uint64_t word);  // the open batch's entry of `word` (a new one: mask 0)
};

}  // namespace gpucomm::proxy
