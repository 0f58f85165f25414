#include "op_pool.hpp"

namespace gpucomm::transport::ucx {

OpPool::OpPool(UcxRemote* owner, size_t chunk) : owner_(owner), chunk_(chunk) {
  grow();
}

void OpPool::grow() {
  chunks_.push_back(std::make_unique<Op[]>(chunk_));
  Op* ops = chunks_.back().get();
  free_.reserve(chunks_.size() * chunk_);
  const size_t first = (chunks_.size() - 1) * chunk_;
  for (size_t i = chunk_; i-- > 0;) {
    ops[i].owner = owner_;
    ops[i].index = static_cast<uint32_t>(first + i);
    free_.push_back(&ops[i]);
  }
}

Op* OpPool::acquire() {
  if (free_.empty()) grow();
  Op* op = free_.back();
  free_.pop_back();
  ++in_use_;
  ++op->generation;
  op->next = nullptr;
  op->done = nullptr;
  op->result = nullptr;
  op->seq = 0;
  op->local_pending = false;
  op->remote_pending = false;
  return op;
}

void OpPool::release(Op* op) {
  free_.push_back(op);
  --in_use_;
}

}  // namespace gpucomm::transport::ucx
