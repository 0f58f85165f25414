#pragma once
// What a Partitioned object and its requests hold (docs/MESSAGING.md, "Partitioned
// communication"): the pool in the symmetric heap and its allocator, the matching state (init
// announcements that arrived, receives not matched yet), and the host backend of the protocol
// (partitioned_protocol.hpp), which runs on the Runtime's host API so that it works on host-memory
// PEs and for host calls on GPU PEs alike.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpucomm/base/coop.cuh"
#include "gpucomm/messaging/partitioned.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::msg {

namespace part {

// The protocol's backend on host threads: this PE's words through the Runtime (atomic_ref on
// host-memory PEs, small copies and kernels on GPU PEs), puts through Runtime::put_signal (a copy
// and a release store, the copy engine and a signal kernel, or one descriptor through a proxy).
class HostBackend {
 public:
  explicit HostBackend(Runtime& rt) : rt_(&rt), me_(rt.rank()), base_(rt.heap().base()) {}
  static bool leader(coop::Thread) { return true; }
  template <class T>
  static T bcast(coop::Thread, T v) {
    return v;
  }
  uint64_t load(const uint64_t* p) const { return rt_->signal_fetch(p); }
  uint64_t exchange(uint64_t* p, uint64_t v) const { return rt_->atomic_swap(p, v, me_); }
  void add(uint64_t* p, uint64_t v) const { rt_->atomic_add(p, v, me_); }
  template <class T>
  T* at(uint64_t offset) const {
    return reinterpret_cast<T*>(base_ + offset);
  }
  void put_signal(coop::Thread, void* dst, const void* src, size_t n, uint64_t* sig, uint64_t v, int pe) const {
    rt_->put_signal(dst, src, n, sig, v, SignalOp::set, pe);
  }
  // This PE's words [p, p + n) into `out` (acquire per word on host-memory PEs; one copy on GPU PEs).
  void load_range(uint64_t* out, const uint64_t* p, size_t n) const;
  // Release store of one of this PE's words.
  void store(uint64_t* p, uint64_t v) const { rt_->signal(p, v, SignalOp::set, me_); }

 private:
  Runtime* rt_;
  int me_;
  char* base_;
};

// The first-fit allocator of the pool (offsets into it, 64-byte granules), local to this PE: the
// receiver tells the sender where its blocks are.
class Pool {
 public:
  explicit Pool(size_t bytes);
  // Offset of a block of `n` bytes, or -1 when no free range holds it.
  int64_t take(size_t n);
  void give(size_t offset, size_t n);
  size_t in_use() const { return used_; }

 private:
  std::map<size_t, size_t> free_;  // offset -> length, coalesced
  size_t used_ = 0;
};

// The tag of announcements on the Partitioned object's communicator.
inline constexpr int kAnnounceTag = 1;

// The message that carries a psend_init to its receiver (on the Partitioned object's own
// communicator, in init order).
struct Announcement {
  uint32_t magic;  // kPartMagic
  uint32_t version;
  int32_t ctx;
  int32_t tag;
  int32_t src_rank;  // the sender's rank in the communicator
  int32_t reserved;
  uint64_t partitions;
  uint64_t partition_bytes;
  uint64_t words;  // heap offset of the send request's words
};

}  // namespace part

using EngineLock = std::lock_guard<std::recursive_mutex>;

struct Partitioned::Engine {
  Runtime& rt;
  Messenger& m;
  Comm match_comm;  // the init announcements travel here, never meeting the application's messages
  bool gpu = false;
  char* pool_base = nullptr;  // symmetric
  size_t pool_bytes = 0;
  part::Pool pool;
  int64_t timeout_ms = 0;
  PartDiag* diag_host = nullptr;  // GPU PEs: host-mapped failure record
  PartDiag* diag_dev = nullptr;
  uint64_t inbox = 0;  // pool offset where announcements are received

  // Everything below and every request's state. Recursive: a request whose last copy goes while
  // progress holds the lock gives its blocks back under it.
  std::recursive_mutex mu;
  bool closed = false;
  struct Arrival {
    int src_world;
    part::Announcement a;
  };
  std::deque<Arrival> arrived;                                      // announcements not matched yet, in arrival order
  std::vector<std::weak_ptr<PartitionedRequest::State>> unmatched;  // receives in init order
  std::vector<std::weak_ptr<PartitionedRequest::State>> deferring;  // sends holding partitions back
  struct Outgoing {
    Request req;
    uint64_t block;  // the announcement's pool block
  };
  std::vector<Outgoing> outgoing;

  Engine(Runtime& r, Messenger& mm, size_t bytes) : rt(r), m(mm), pool(bytes) {}
  ~Engine();

  part::HostBackend backend() const { return part::HostBackend(rt); }
  // A zeroed block of the pool (raises Errc::out_of_memory naming the option when it is full).
  uint64_t take(size_t n, bool zero, const char* op);
  void give(uint64_t offset, size_t n);
  template <class T = char>
  T* at(uint64_t offset) const {
    return reinterpret_cast<T*>(pool_base + offset);
  }
  uint64_t heap_offset(const void* p) const { return rt.heap().offset_of(p); }
  void check_open(const char* op) const;

  // Under `mu`: one progress step (announcements, matches, deferred partitions).
  void progress_locked();
  void drain_announcements();
  void match(PartitionedRequest::State& r, const part::Announcement& a);
  void complete_announcements(bool all);
};

struct PartitionedRequest::State {
  std::shared_ptr<Partitioned::Engine> e;
  PartitionedHandle h{};  // what the protocol steps read (also on host-memory PEs)
  uint64_t words = 0;     // pool offset of the request's words
  size_t words_bytes = 0;
  uint64_t round = 0;
  bool active = false;
  bool freed = false;
  bool completed_once = false;
  // send
  bool announced = false;     // the receiver may know the words (and write into them)
  std::vector<int> deferred;  // marked ready while the receiver had not started the round
  // receive
  bool matched = false;
  uint64_t peer_parts = 0, peer_bytes = 0;
  uint64_t sender_words = 0;  // heap offset of the sender's words (the same on every PE)
  uint64_t flags = 0;         // pool offset of the arrival flags
  size_t flags_bytes = 0;
  uint64_t cts_sent = 0;  // the last round whose start the sender was told of
  bool staged = false;
  uint64_t staging = 0;          // pool offset of the staging area
  char* user_buf = nullptr;      // staged: the application's buffer
  std::vector<uint64_t> copied;  // staged: the round each receive partition was copied out in
  std::string refused;           // why the match failed (raised by every later call)

  ~State();

  size_t total() const { return static_cast<size_t>(h.partitions) * h.partition_bytes; }
  // "send to rank 1 (world 1), context 2, tag 5" for messages.
  std::string what() const;
  // Under e->mu: the receiver tells the sender that round `round` started.
  void send_cts();
  // Under e->mu: partitions deferred for the receiver's start, now moved if it started.
  void move_deferred();
  // Under e->mu: gives the pool blocks back unless a partner may still write into them (a request
  // that never completed a round: its start, its description, flags of a started round); those
  // stay taken until the Partitioned object goes.
  void release();
};

}  // namespace gpucomm::msg
