#include "gpucomm/matching/list_matcher.hpp"

#include <algorithm>

namespace gpucomm::matching {
namespace {
uint64_t pack(int32_t src, int32_t tag) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(tag);
}
uint64_t recv_mask(const Envelope& r) {
  uint64_t m = ~0ull;
  if (r.src == kAnySource) m &= 0x00000000ffffffffull;
  if (r.tag == kAnyTag) m &= 0xffffffff00000000ull;
  return m;
}
}  // namespace

uint32_t ListMatcher::alloc(const Envelope& e, bool is_recv) {
  uint32_t n;
  if (!free_.empty()) {
    n = free_.back();
    free_.pop_back();
  } else {
    n = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back({});
  }
  Node& x = nodes_[n];
  x.bits = pack(e.src, e.tag);
  x.mask = is_recv ? recv_mask(e) : ~0ull;
  x.seq = seq_++;
  x.env = e;
  x.next = x.prev = kNil;
  return n;
}

void ListMatcher::append(List& l, uint32_t n) {
  nodes_[n].prev = l.tail;
  if (l.tail != kNil) {
    nodes_[l.tail].next = n;
  } else {
    l.head = n;
  }
  l.tail = n;
}

void ListMatcher::unlink(List& l, uint32_t n) {
  Node& x = nodes_[n];
  if (x.prev != kNil) {
    nodes_[x.prev].next = x.next;
  } else {
    l.head = x.next;
  }
  if (x.next != kNil) {
    nodes_[x.next].prev = x.prev;
  } else {
    l.tail = x.prev;
  }
  free_.push_back(n);
}

ListMatcher::CommQueues& ListMatcher::comm(int32_t c) {
  if (last_ && c == last_comm_) return *last_;
  last_ = &comms_[c];  // unordered_map references stay valid across inserts
  last_comm_ = c;
  return *last_;
}

void ListMatcher::load(std::span<const Envelope> umq, std::span<const Envelope> prq) {
  nodes_.clear();
  free_.clear();
  comms_.clear();
  last_ = nullptr;
  seq_ = 0;
  umq_count_ = umq.size();
  prq_count_ = prq.size();
  nodes_.reserve(umq.size() + prq.size());
  for (const auto& m : umq) append(comm(m.comm).umq, alloc(m, false));
  for (const auto& r : prq) append(comm(r.comm).prq, alloc(r, true));
}

bool ListMatcher::arrive(const Envelope& msg, uint32_t* recv_handle) {
  CommQueues& q = comm(msg.comm);
  const uint64_t bits = pack(msg.src, msg.tag);
  for (uint32_t n = q.prq.head; n != kNil; n = nodes_[n].next) {
    const Node& x = nodes_[n];
    if (((x.bits ^ bits) & x.mask) == 0) {
      *recv_handle = x.env.handle;
      unlink(q.prq, n);
      --prq_count_;
      return true;
    }
  }
  append(q.umq, alloc(msg, false));
  ++umq_count_;
  return false;
}

bool ListMatcher::post(const Envelope& recv, uint32_t* msg_handle) {
  CommQueues& q = comm(recv.comm);
  const uint64_t bits = pack(recv.src, recv.tag), mask = recv_mask(recv);
  for (uint32_t n = q.umq.head; n != kNil; n = nodes_[n].next) {
    const Node& x = nodes_[n];
    if (((x.bits ^ bits) & mask) == 0) {
      *msg_handle = x.env.handle;
      unlink(q.umq, n);
      --umq_count_;
      return true;
    }
  }
  append(q.prq, alloc(recv, true));
  ++prq_count_;
  return false;
}

void ListMatcher::process(std::span<const Envelope> msgs, std::span<const Envelope> recvs, std::vector<Match>& out) {
  uint32_t h;
  for (const auto& m : msgs)
    if (arrive(m, &h)) out.push_back({m.handle, h});
  for (const auto& r : recvs)
    if (post(r, &h)) out.push_back({h, r.handle});
}

std::vector<Envelope> ListMatcher::export_list(bool prq) const {
  std::vector<std::pair<uint64_t, Envelope>> all;
  for (const auto& [c, q] : comms_) {
    const List& l = prq ? q.prq : q.umq;
    for (uint32_t n = l.head; n != kNil; n = nodes_[n].next) all.push_back({nodes_[n].seq, nodes_[n].env});
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Envelope> out;
  out.reserve(all.size());
  for (auto& p : all) out.push_back(p.second);
  return out;
}

std::vector<Envelope> ListMatcher::umq() const {
  return export_list(false);
}
std::vector<Envelope> ListMatcher::prq() const {
  return export_list(true);
}

Outcome ListMatcher::run(const Batch& b) {
  ListMatcher m;
  m.load(b.umq, b.prq);
  Outcome out;
  m.process(b.msgs, b.recvs, out.matches);
  out.umq = m.umq();
  out.prq = m.prq();
  return out;
}

}  // namespace gpucomm::matching
