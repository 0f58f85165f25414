#pragma once
// Partitioned point-to-point, host side (MPI 4.0 chapter 4; docs/MESSAGING.md, "Partitioned
// communication"). A Partitioned object (one per Messenger, collective over the world) owns a pool
// in the symmetric heap for the requests' words, the receivers' arrival flags and staging areas,
// and a communicator of its own on which the init calls are matched. psend_init / precv_init make
// persistent requests; each round is start, pready (sender, host or kernels), parrived (receiver),
// then wait or test. Partitions move with one-sided puts straight into the receive buffer, each
// followed by its flag.
//
//   msg::Messenger m(rt);
//   msg::Partitioned part(m);                    // collective
//   msg::Comm w = m.world();
//   auto s = part.psend_init(w, src, 8, 4096, right, 7);    // 8 partitions of 4 KiB
//   auto r = part.precv_init(w, dst, 2, 16384, left, 7);    // 2 partitions of 16 KiB: same total
//   r.start(); s.start();
//   for (int i = 7; i >= 0; --i) s.pready(i);    // or msg::pready(c, s.device(), i) in a kernel
//   while (!r.parrived(0)) {}                    // or msg::wait_arrived(c, r.device(), 0)
//   s.wait(); r.wait();
//
// Sender and receiver may partition differently; the totals must be equal. A receive buffer
// outside the symmetric heap goes through a staging area of the pool (host calls copy partitions
// out as parrived, test and wait see them; kernels cannot use staged receives). Threading: any
// host thread may call anything (one lock per Partitioned object); creation and destruction are
// collective and must not overlap other calls.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "gpucomm/messaging/messenger.hpp"
#include "gpucomm/messaging/partitioned_handle.hpp"

namespace gpucomm::msg {

struct PartitionedOptions {
  // Bytes of symmetric heap for request words, arrival flags and staging areas; 0: 8 MiB. Every
  // PE must use the same value (checked).
  size_t pool_bytes = 0;
};

class Partitioned;

// A persistent partitioned request (send or receive). A value type: copies share the request;
// the last copy frees it. Every call raises Errc::invalid_argument naming the argument for a bad
// argument or a call out of order (pready before start, start during a round, a partition marked
// twice in a round, parrived on a send request, ...).
class PartitionedRequest {
 public:
  PartitionedRequest() = default;
  bool valid() const { return s_ != nullptr; }
  PartKind kind() const;
  int partitions() const;
  size_t partition_bytes() const;
  uint64_t round() const;  // rounds started so far
  bool active() const;     // started, not yet completed by wait or test
  bool staged() const;     // a receive into a buffer outside the heap

  // Starts the next round (the request must be inactive). A receiver's start allows the sender to
  // write into its buffer.
  void start();
  // Sender: marks partitions ready; their bytes go to the receiver now, or as soon as the receiver
  // started the round (later calls of any partitioned operation of this PE move them).
  void pready(int partition);
  void pready_range(int low, int high);  // low..high, inclusive
  void pready_list(std::span<const int> partitions);
  // Receiver: whether the partition of the current round arrived (a completed round: true).
  bool parrived(int partition);
  // Completes the round: sender, every partition was sent (its buffer may be reused); receiver,
  // every byte arrived. wait has the GPUCOMM_TIMEOUT limit; on an inactive request both return at
  // once.
  bool test();
  void wait();
  // Frees the request (it must be inactive); the handle becomes invalid.
  void free();

  // What kernels use (GPU PEs, after start(): partitioned_device.cuh). Receive buffers must lie in
  // the symmetric heap. The inline call passes the version of the headers the caller was compiled
  // with; a mismatch raises.
  PartitionedHandle device() const { return device_checked(kPartVersion, sizeof(PartitionedHandle)); }
  PartitionedHandle device_checked(uint32_t header_version, size_t header_bytes) const;

  struct State;

 private:
  friend class Partitioned;
  explicit PartitionedRequest(std::shared_ptr<State> s) : s_(std::move(s)) {}
  State& st(const char* op) const;
  std::shared_ptr<State> s_;
};

class Partitioned {
 public:
  // Collective over the world: the pool (symmetric heap) and the matching communicator. Destroy
  // the Partitioned object before its Messenger.
  explicit Partitioned(Messenger& m, const PartitionedOptions& opts = {});
  // Collective. Requests still alive raise from then on.
  ~Partitioned();
  Partitioned(const Partitioned&) = delete;
  Partitioned& operator=(const Partitioned&) = delete;

  // Persistent requests on `comm` (local calls; the pair is matched by communicator, source and tag
  // in the order of the init calls, as MPI orders them). `partition_bytes` bytes per partition,
  // `partitions` partitions; no wildcards, no PROC_NULL.
  PartitionedRequest psend_init(const Comm& comm, const void* buf, int partitions, size_t partition_bytes, int dest,
                                int tag);
  PartitionedRequest precv_init(const Comm& comm, void* buf, int partitions, size_t partition_bytes, int source,
                                int tag);
  // Matches arrived init calls, starts rounds at senders that waited for the match, and moves
  // partitions that waited for their receiver (every partitioned call does this too).
  void progress();
  // GPU PEs: raises the failure a kernel recorded in a partitioned call (naming the call, the
  // partition, the round, rank, peer, communicator and tag), then the one-sided layer's record.
  void check_device() const;
  size_t pool_bytes() const;
  size_t pool_in_use() const;

  struct Engine;

 private:
  std::shared_ptr<Engine> e_;
};

}  // namespace gpucomm::msg
