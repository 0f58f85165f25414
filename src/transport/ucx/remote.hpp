#pragma once
// UcxRemote: transport::Remote over UCX (docs/UCX.md).
//
// Completion: a get is complete when its UCX request completes (the data arrived); an atomic on
// a host heap when its reply arrived (am_atomics.cpp), on a device heap when UCX's fetching
// atomic completed. A put, or a posted UCX atomic (device heap, no result, no completion flag),
// is complete at the target only once an endpoint flush issued after it completed: every such
// operation takes the next number of its peer's sequence (`issued`), a flush covers the sequence
// at the time it is issued, and its completion moves `flushed` forward and sets the completion
// flags of the puts waiting in the peer's FIFO. progress() issues one flush per peer per call
// for the puts that wait (batching); flush() issues one for every peer with work outstanding.
// fence() is ucp_worker_fence (UCX orders RMA and UCX atomics on the endpoint); atomics on host
// heaps travel as active messages (am_atomics.cpp), which UCX's fence does not order, so an
// operation that crosses between the two kinds after a fence first waits until the earlier
// operations to that PE are complete at the target (order()).
#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/transport/transport.hpp"
#include "memory.hpp"
#include "op_pool.hpp"
#include "worker.hpp"

namespace gpucomm::transport::ucx {

struct Peer {
  UcxRemote* owner = nullptr;
  int pe = -1;
  bool reachable = false;  // listed in RemoteContext::remote_pes: an endpoint exists
  ucp_ep_h ep = nullptr;
  RemoteKey rkey;
  uint64_t base = 0;         // the peer's heap address
  uint64_t bytes = 0;        // and size
  bool device_heap = false;  // its atomics go through UCX (ucp_atomic_op_nbx), not active messages
  // Ordering: operations since the last fence(pe); a fence to honour before the next operation.
  bool touched = false;
  bool fence_pending = false;
  // Remote completion (puts and posted atomics).
  uint64_t issued = 0;                // sequence numbers handed out
  uint64_t flush_issued = 0;          // highest sequence covered by a flush issued so far
  uint64_t flushed = 0;               // highest sequence covered by a completed flush
  OpFifo waiting;                     // puts with a completion flag, by sequence
  bool flush_queued = false;          // in UcxRemote::flush_queue_
  uint32_t in_flight[kOpKinds] = {};  // UCX requests in flight, by OpKind
  // Failure: set by the endpoint's error callback or a failed operation.
  bool failed = false;
  bool reported = false;  // progress() raised it once
  std::string failure;
  uint64_t lost = 0;  // operations whose completion will never be set
};

class UcxRemote final : public Remote {
 public:
  // Collective over ctx.bootstrap (every PE opens the transport).
  explicit UcxRemote(const RemoteContext& ctx);
  // Collective too: flushes (bounded by GPUCOMM_TIMEOUT), waits for every PE while progressing
  // (peers may still need this PE's progress for their flushes), closes the endpoints.
  ~UcxRemote() override;

  const char* name() const override { return "ucx"; }
  void put(int pe, uint64_t dst_offset, const void* src, size_t bytes, Completion c) override;
  void get(void* dst, int pe, uint64_t src_offset, size_t bytes, Completion c) override;
  void atomic(int pe, uint64_t offset, AtomicOp op, unsigned width, uint64_t operand, uint64_t compare,
              uint64_t* result, Completion c) override;
  void fence(int pe) override;
  void flush() override;
  size_t progress() override;

  // Called from UCX callbacks, inside ucp_worker_progress (completion.cpp, am_atomics.cpp).
  void on_request(Op* op, ucs_status_t status);
  void on_endpoint_error(Peer& p, ucs_status_t status);
  void serve_atomic(const void* header, size_t bytes, const ucp_am_recv_param_t* param);
  void take_atomic_reply(const void* header, size_t bytes);

 private:
  // remote.cpp
  void connect(const std::vector<std::string>& infos, const std::vector<bool>& remote_pes);
  void handshake();
  Peer& peer(int pe, const char* call);
  Peer& target(int pe, uint64_t offset, uint64_t bytes, const char* call, const char* arg);
  Op* start(OpKind kind, Peer& p, Completion c);
  ucp_request_param_t request_param(Op* op) const;
  void launch(Op* op, Peer& p, ucs_status_ptr_t sp, const char* call);
  [[noreturn]] void raise_send_error(Peer& p, const char* call, ucs_status_t s);
  void order(Peer& p, bool active_message, const char* call);
  void atomic_native(Op* op, Peer& p, uint64_t offset, AtomicOp aop, uint64_t operand, uint64_t compare);
  // am_atomics.cpp
  void register_atomic_handlers();
  void send_atomic(Op* op, Peer& p, uint64_t offset, AtomicOp aop, uint64_t operand, uint64_t compare);
  // completion.cpp
  void finish(Op* op, ucs_status_t status);
  void complete_now(uint64_t* done);
  void covered(Peer& p, uint64_t seq);
  void queue_flush(Peer& p);
  void issue_flush(Peer& p);
  void fail_peer(Peer& p, const std::string& why, uint64_t extra_lost);
  uint64_t outstanding(const Peer& p) const;
  std::string describe_outstanding() const;
  std::string who(const char* call, int pe = -1) const;
  [[noreturn]] void raise_failed(const Peer& p, const char* call) const;
  void raise_lost(const char* call) const;
  void wait_for(const std::function<bool()>& ready, const char* call);
  // teardown.cpp
  void close_endpoints(bool graceful);

  bootstrap::Bootstrap* bootstrap_;
  mutable bool waited_for_verdict_ = false;  // raise_failed gave the job's record its one chance
  int rank_;
  int size_;
  bool on_device_;
  char* heap_base_;  // this PE's heap: the target of active-message atomics
  uint64_t heap_bytes_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<HeapRegistration> heap_;
  std::vector<Peer> peers_;
  OpPool pool_;
  std::vector<int> flush_queue_;  // peers whose waiting puts need a flush (progress issues it)
  size_t in_flight_ = 0;          // UCX requests in flight
  uint64_t pending_remote_ = 0;   // puts and posted atomics not yet covered by a flush
  uint64_t completed_ = 0;        // completions since the last progress()
  uint64_t progress_calls_ = 0;
  int peers_with_loss_ = 0;
  bool unfenced_ = false;     // operations issued since the last fence
  bool new_failure_ = false;  // a peer failed since progress() last looked
  bool job_failure_reported_ = false;
  bool closing_ = false;  // teardown: endpoint errors are expected
};

}  // namespace gpucomm::transport::ucx
