#include "round_builder.hpp"

#include <algorithm>

namespace gpucomm::proxy {

namespace {

bool natural(uint64_t addr, uint32_t bytes) {
  return bytes != 0 && (bytes & (bytes - 1)) == 0 && (addr & (bytes - 1)) == 0;
}
uint64_t hash_word(uint64_t w) {
  w ^= w >> 29;
  w *= 0xBF58476D1CE4E5B9ull;
  return w ^ (w >> 32);
}
}  // namespace

RoundBuilder::RoundBuilder(StreamOps& out, RoundLimits limits, ScatterWrite* staging)
    : out_(out), limits_(limits), staging_(staging) {
  limits_.batch_max = std::min<uint32_t>({limits_.batch_max, static_cast<uint32_t>(kTable / 2),
                                          static_cast<uint32_t>(std::min<uint64_t>(limits_.slots, kTable))});
  ops_.reserve(kMaxMemOps);
}

void RoundBuilder::submit_ops() {
  for (size_t i = 0; i < ops_.size(); i += kMaxMemOps) {
    const auto n = static_cast<unsigned>(std::min<size_t>(kMaxMemOps, ops_.size() - i));
    out_.memops(ops_.data() + i, n);
  }
  ops_.clear();
}

void RoundBuilder::emit_copy() {
  if (copy_bytes_ == 0) return;
  submit_ops();
  const uint64_t n = copy_bytes_;
  copy_bytes_ = 0;
  out_.copy(copy_dst_, copy_src_, n);
}

void RoundBuilder::copy(char* dst, const char* src, uint64_t bytes) {
  if (bytes == 0) return;
  emit_small();
  if (copy_bytes_) {
    const uint64_t n = copy_bytes_ + bytes;
    const auto s = reinterpret_cast<uintptr_t>(copy_src_), d = reinterpret_cast<uintptr_t>(copy_dst_);
    const bool continues = dst == copy_dst_ + copy_bytes_ && src == copy_src_ + copy_bytes_;
    if (continues && (s + n <= d || d + n <= s)) {  // one copy of the union, whose ranges are disjoint
      copy_bytes_ = n;
      return;
    }
    emit_copy();
  }
  copy_dst_ = dst;
  copy_src_ = src;
  copy_bytes_ = bytes;
}

void RoundBuilder::write(uint64_t addr, uint64_t value, uint32_t bytes) {
  emit_copy();
  small_.push_back(Small{addr, value, bytes, false, false});
}

void RoundBuilder::signal(uint64_t* addr, uint64_t value, SignalOp op, bool this_gpu) {
  if (op == SignalOp::set && limits_.memops) {
    emit_copy();
    small_.push_back(Small{reinterpret_cast<uint64_t>(addr), value, 8, true, this_gpu});
    return;
  }
  emit_copy();
  emit_small();
  submit_ops();
  out_.signal_kernel(addr, value, op);
}

void RoundBuilder::atomic(AtomicOp op, unsigned width, void* addr, uint64_t operand, uint64_t compare,
                          uint64_t* result) {
  emit_copy();
  emit_small();
  submit_ops();
  out_.atomic_kernel(op, width, addr, operand, compare, result);
}

void RoundBuilder::issue_signal(uint64_t* addr, uint64_t value, SignalOp op, bool this_gpu) {
  if (limits_.memops && op == SignalOp::set) {
    ops_.push_back(barrier_op(this_gpu));
    ops_.push_back(write_op(reinterpret_cast<uint64_t>(addr), value, true));
    return;
  }
  submit_ops();
  out_.signal_kernel(addr, value, op);
}

void RoundBuilder::emit_small() {
  if (small_.empty()) return;
  size_t writes = 0;
  bool expressible = limits_.memops;
  for (const Small& s : small_) {
    if (s.signal) continue;
    ++writes;
    expressible = expressible && (s.bytes == 8 || s.bytes == 4) && natural(s.addr, s.bytes);
  }
  if (expressible && writes <= limits_.memop_max) {
    for (const Small& s : small_) {
      if (s.signal) {
        ops_.push_back(barrier_op(s.this_gpu));
        ops_.push_back(write_op(s.addr, s.value, true));
      } else {
        ops_.push_back(write_op(s.addr, s.value, s.bytes == 8));
      }
    }
  } else {
    for (const Small& s : small_) {
      if (s.signal) {
        emit_batch();
        issue_signal(reinterpret_cast<uint64_t*>(s.addr), s.value, SignalOp::set, s.this_gpu);
      } else {
        scatter_write(s.addr, s.value, s.bytes);
      }
    }
    emit_batch();
  }
  small_.clear();
}

void RoundBuilder::emit_batch() {
  if (batch_n_ == 0) return;
  submit_ops();
  const uint32_t n = batch_n_;
  batch_n_ = 0;
  if (++generation_ == 0) {  // wrapped: clear the table once
    for (Word& w : words_) w.generation = 0;
    generation_ = 1;
  }
  out_.scatter(&staging_[batch_begin_ & (limits_.slots - 1)], n);
}

RoundBuilder::Word& RoundBuilder::word_entry(uint64_t word) {
  uint64_t h = hash_word(word) & (kTable - 1);
  for (; words_[h].generation == generation_; h = (h + 1) & (kTable - 1))
    if (words_[h].word == word) return words_[h];
  words_[h] = Word{word, 0, generation_, 0};
  return words_[h];
}

void RoundBuilder::scatter_write(uint64_t addr, uint64_t value, uint32_t bytes) {
  const bool simple = natural(addr, bytes) && bytes <= 8;
  // A batch is contiguous in the staging ring and holds at most batch_max writes; a write that may
  // straddle words goes alone.
  if (!simple || batch_n_ == limits_.batch_max || (batch_n_ > 0 && (stage_next_ & (limits_.slots - 1)) == 0))
    emit_batch();
  const uint64_t packed = addr | uint64_t(bytes) << kScatterSizeShift;
  const auto mask = static_cast<uint32_t>(((uint64_t(1) << bytes) - 1) << (addr & 7u));
  if (simple && batch_n_ > 0) {
    Word& w = word_entry(addr >> 3);
    if (w.mask & mask) {
      ScatterWrite& last = staging_[w.slot & (limits_.slots - 1)];
      if (last.addr_bytes == packed) {
        // The batch's writes never overlap, so that one covers exactly these bytes: the later value
        // wins (nothing orders two writes of one batch otherwise).
        last.value = value;
        return;
      }
      emit_batch();  // overlaps a write of another shape: keep the order
    }
  }
  if (stage_next_ - stage_free_ >= limits_.slots) {
    emit_batch();
    submit_ops();
    out_.reclaim_slots();
  }
  if (batch_n_ == 0) batch_begin_ = stage_next_;
  const uint64_t slot = stage_next_++;
  staging_[slot & (limits_.slots - 1)] = ScatterWrite{packed, value};
  ++batch_n_;
  if (!simple) {
    emit_batch();
    return;
  }
  Word& w = word_entry(addr >> 3);  // a new entry if a batch began above
  w.mask |= mask;
  w.slot = slot;
}

void RoundBuilder::finish(const CUstreamBatchMemOpParams* tail, unsigned n) {
  emit_copy();
  emit_small();
  ops_.insert(ops_.end(), tail, tail + n);
  submit_ops();
}

}  // namespace gpucomm::proxy
