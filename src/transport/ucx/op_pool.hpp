#pragma once
// Bookkeeping of operations in flight: one Op per put, get, atomic or endpoint flush, taken from
// a pool of preallocated records (stable addresses: UCX holds them as callback user data) and
// returned when the operation is finished. Nothing is allocated per operation while fewer than
// the preallocated number are in flight.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace gpucomm::transport::ucx {

class UcxRemote;

enum class OpKind : uint8_t { put, get, atomic, flush };
inline constexpr int kOpKinds = 4;

// Puts of at most this many bytes are copied into the record, so that the caller may reuse the
// source as soon as put() returns (host PEs).
inline constexpr size_t kInlineBytes = 64;

struct Op {
  UcxRemote* owner = nullptr;
  uint32_t index = 0;          // in the pool (OpPool::find)
  uint32_t generation = 0;     // bumped on every acquire: a stale reference does not match
  Op* next = nullptr;          // in the peer's FIFO of puts waiting for remote completion
  uint64_t* done = nullptr;    // Completion::done
  uint64_t* result = nullptr;  // atomics: where the old value goes
  uint64_t seq = 0;            // put, posted atomic: the peer's sequence; flush: the sequence covered
  int pe = -1;
  OpKind kind = OpKind::put;
  uint8_t width = 0;                         // atomics: 4 or 8
  bool local_pending = false;                // a UCX request is in flight
  bool remote_pending = false;               // waiting in the peer's FIFO for a flush to cover `seq`
  alignas(8) unsigned char operand[8] = {};  // atomic operand (compare value for compare_swap)
  alignas(8) unsigned char reply[8] = {};    // atomic reply (swap value in, old value out)
  alignas(16) unsigned char data[kInlineBytes] = {};
};

class OpPool {
 public:
  explicit OpPool(UcxRemote* owner, size_t chunk = 1024);
  Op* acquire();  // grows by one chunk when every record is in use
  void release(Op* op);
  // The record with this index, or nullptr (an index from the wire is checked here).
  Op* find(uint64_t index) const {
    return index < chunks_.size() * chunk_ ? &chunks_[index / chunk_][index % chunk_] : nullptr;
  }
  size_t in_use() const { return in_use_; }

 private:
  void grow();
  UcxRemote* owner_;
  size_t chunk_;
  std::vector<std::unique_ptr<Op[]>> chunks_;
  std::vector<Op*> free_;
  size_t in_use_ = 0;
};

// Intrusive FIFO of Ops (linked through Op::next), in issue order.
struct OpFifo {
  Op* head = nullptr;
  Op* tail = nullptr;
  bool empty() const { return head == nullptr; }
  void push(Op* op) {
    op->next = nullptr;
    if (tail) {
      tail->next = op;
    } else {
      head = op;
    }
    tail = op;
  }
  Op* pop() {
    Op* op = head;
    head = op->next;
    if (!head) tail = nullptr;
    op->next = nullptr;
    return op;
  }
};

}  // namespace gpucomm::transport::ucx
