#pragma once
// A CPU matcher in the style of MPICH and Open MPI: per communicator, the posted receives and
// the unexpected messages are linked lists searched from the head; a match unlinks the node.
// This is the realistic CPU baseline the GPU engines are measured against.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "gpucomm/matching/batch.hpp"

namespace gpucomm::matching {

class ListMatcher {
 public:
  // Replaces the queues (entries in arrival/post order).
  void load(std::span<const Envelope> umq, std::span<const Envelope> prq);

  // A message arrives: returns true and the receive's handle when a posted receive matches.
  bool arrive(const Envelope& msg, uint32_t* recv_handle);
  // A receive is posted: returns true and the message's handle when an unexpected message matches.
  bool post(const Envelope& recv, uint32_t* msg_handle);

  // The batch semantics: every message arrives, then every receive is posted.
  void process(std::span<const Envelope> msgs, std::span<const Envelope> recvs, std::vector<Match>& out);

  // Queue contents in global arrival/post order (across communicators).
  std::vector<Envelope> umq() const;
  std::vector<Envelope> prq() const;
  size_t umq_size() const { return umq_count_; }
  size_t prq_size() const { return prq_count_; }

  // Convenience: load the batch's queues, process it, return the outcome.
  static Outcome run(const Batch& b);

 private:
  static constexpr uint32_t kNil = 0xffffffffu;
  struct Node {
    uint64_t bits;  // source in the high half, tag in the low half
    uint64_t mask;  // receives: zero where a wildcard is
    uint64_t seq;   // global order, to export the queues
    Envelope env;
    uint32_t next, prev;
  };
  struct List {
    uint32_t head = kNil, tail = kNil;
  };
  struct CommQueues {
    List umq, prq;
  };

  uint32_t alloc(const Envelope& e, bool is_recv);
  void append(List& l, uint32_t n);
  void unlink(List& l, uint32_t n);
  CommQueues& comm(int32_t c);
  std::vector<Envelope> export_list(bool prq) const;

  std::vector<Node> nodes_;
  std::vector<uint32_t> free_;
  std::unordered_map<int32_t, CommQueues> comms_;
  int32_t last_comm_ = 0;
  CommQueues* last_ = nullptr;
  uint64_t seq_ = 0;
  size_t umq_count_ = 0, prq_count_ = 0;
};

}  // namespace gpucomm::matching
