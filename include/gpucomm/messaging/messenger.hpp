#pragma once
// Two-sided messaging, host side (docs/MESSAGING.md): a Messenger per Runtime (collective over the
// world) owns the PE's inboxes, pools and request table; communicators on any team carry a context
// id and a matching mode. Blocking and non-blocking sends and receives, probes, matched probes,
// cancel and PROC_NULL with MPI semantics.
//
// Threading: any number of host threads may call any function of a Messenger and its
// communicators at once (MPI_THREAD_MULTIPLE); progress is serialized inside. Creating and
// destroying Messengers and communicators is collective and must not overlap other calls.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpucomm/messaging/comm_handle.hpp"
#include "gpucomm/messaging/layout.hpp"
#include "gpucomm/messaging/types.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::msg {

// Sizes of the messaging state (docs/MESSAGING.md, "Memory per PE"); 0 reads the GPUCOMM_MSG_*
// variable (its default when unset). Every PE must use the same values (checked).
struct MessengerOptions {
  uint32_t slot_bytes = 0;
  uint32_t slots = 0;
  int32_t pool_slots = -1;  // 0 is a valid value (no eager buffering); -1 reads the variable
  uint32_t eager_max = 0;
  uint32_t requests = 0;
  uint32_t unexpected = 0;
  uint32_t queue = 0;
  uint32_t staging_pairs = 0;
  uint64_t chunk_bytes = 0;
  uint32_t am_per_sender = 0;
  uint32_t am_max = 0;
};

// A communicator's assertions (MPI 4 info keys), fixed at creation.
struct CommOptions {
  Mode mode = Mode::mpi;
  bool allow_overtaking = false;  // mpi_assert_allow_overtaking: required by Mode::unordered
  bool errors_return = false;     // truncation and peer failure come back in Status instead of ending the job
};

class Messenger;

// A communicator: a team, a context id and a matching mode. A value type; the last copy frees the
// context id (destroy communicators collectively, after their traffic completed, like
// MPI_Comm_free). Ranks are ranks in the team.
class Comm {
 public:
  Comm() = default;
  bool valid() const { return state_ != nullptr; }
  int rank() const;
  int size() const;
  int context_id() const;
  Mode mode() const;
  bool errors_return() const;
  const Team& team() const;
  Messenger& messenger() const;

  // Blocking: returns when the buffer may be reused (eager: copied into the receiver's ring;
  // rendezvous: the receiver has the data).
  void send(const void* buf, size_t bytes, int dest, int tag);
  Status recv(void* buf, size_t bytes, int source = kAnySource, int tag = kAnyTag);
  // Non-blocking; complete with Messenger::wait/test (or the forwarding calls below). `event`, if
  // given, counts the request's completion.
  Request isend(const void* buf, size_t bytes, int dest, int tag, const Event* event = nullptr);
  Request irecv(void* buf, size_t bytes, int source = kAnySource, int tag = kAnyTag, const Event* event = nullptr);
  // MPI_Sendrecv: posts the receive, then the send, and returns the receive's Status once both
  // completed, so two ranks that sendrecv with each other do not deadlock. Buffers as for
  // send/recv (GPU PEs stage buffers in host memory); either peer may be kProcNull.
  Status sendrecv(const void* send_buf, size_t send_bytes, int dest, int send_tag, void* recv_buf, size_t recv_bytes,
                  int source = kAnySource, int recv_tag = kAnyTag);
  // Stream-ordered (GPU PEs): a kernel on `stream` sends (receives) and waits for completion,
  // never synchronizing with the host, so CUDA graphs can capture it. Buffers and `status` must be
  // device-accessible (device memory, the heap, mapped host memory); the status of the receive is
  // written there. Inside a group they are deferred to Messenger::group_end. Host-memory PEs run
  // them at once (the stream is ignored; `status` is host memory).
  void send_on_stream(const void* buf, size_t bytes, int dest, int tag, Stream stream);

  // Active messages (docs/MESSAGING.md) between host-memory PEs (GPU PEs send and handle theirs in
  // kernels: gpucomm/messaging/am_device.cuh). am_send sends `bytes` (at most Config::am_max) to
  // rank `dest` for the handler registered as `id` there, once a request credit at `dest` is free;
  // am_request also reserves space for the one answer its handler must give with am_reply. While
  // they wait for a credit they progress, and run `poll` (when given) on active messages that
  // arrive here: PEs that send to each other must pass it, since credits come back only when the
  // receiver's handlers ran.
  using AmHandler = std::function<void(const AmMessage&)>;
  void am_send(int dest, uint32_t id, const void* payload, size_t bytes, const AmHandler& poll = {});
  void am_request(int dest, uint32_t id, const void* payload, size_t bytes, const AmHandler& poll = {});
  void am_reply(const AmMessage& msg, uint32_t id, const void* payload, size_t bytes);
  void recv_on_stream(void* buf, size_t bytes, int source, int tag, Stream stream, Status* status = nullptr);
  // Probes look at the unexpected messages as they stand, without receiving.
  bool iprobe(int source, int tag, Status* status = nullptr);
  Status probe(int source, int tag);
  // Matched probes: the message leaves the queue; only mrecv/imrecv receive it.
  bool improbe(int source, int tag, Message* msg, Status* status = nullptr);
  Message mprobe(int source, int tag, Status* status = nullptr);
  Request imrecv(void* buf, size_t bytes, Message& msg, const Event* event = nullptr);
  Status mrecv(void* buf, size_t bytes, Message& msg);

  // Collective over the team (MPI_Comm_dup): the same team and options under a new context id.
  Comm dup() const;
  // Collective over the team (MPI_Comm_split): the ranks that pass the same color form a new
  // communicator with this one's options, ordered by key, then by rank here; a negative color
  // (MPI_UNDEFINED) returns an invalid Comm. Both raise, naming the limit, when a member holds all
  // kMaxComms context ids.
  Comm split(int color, int key) const;

  // This communicator's counters (docs/MESSAGING.md, "Observability").
  Counters counters() const;
  // The handle kernels use (GPU PEs; raises on host-memory PEs). The inline call passes the
  // version of the headers the caller was compiled with; a mismatch raises.
  CommHandle device() const { return device_checked(kCommVersion, sizeof(CommHandle)); }
  CommHandle device_checked(uint32_t header_version, size_t header_bytes) const;

  struct State;

 private:
  friend class Messenger;
  explicit Comm(std::shared_ptr<State> s) : state_(std::move(s)) {}
  State& st() const;
  std::shared_ptr<State> state_;
};

class Messenger {
 public:
  // Collective over the world: allocates the inboxes (symmetric heap) and the local tables.
  explicit Messenger(Runtime& rt, const MessengerOptions& opts = {});
  // Collective: every PE destroys its Messenger at the same point, after its traffic completed.
  ~Messenger();
  Messenger(const Messenger&) = delete;
  Messenger& operator=(const Messenger&) = delete;

  Runtime& runtime() const;
  const Config& config() const;
  // Bytes of symmetric heap and of local memory the messaging state takes on this PE.
  size_t heap_bytes() const;
  size_t local_bytes() const;

  // Collective over the world (world()) or over `team` (create()).
  Comm world(const CommOptions& opts = {});
  Comm create(const Team& team, const CommOptions& opts = {});

  // Completion of requests of any communicator of this Messenger.
  bool test(Request& r, Status* status = nullptr);
  Status wait(Request& r);
  void waitall(std::span<Request> rs, std::span<Status> statuses = {});
  // Index of a completed request (it is reset to null), or -1 when every request is null.
  int waitany(std::span<Request> rs, Status* status = nullptr);
  bool testall(std::span<Request> rs, std::span<Status> statuses = {});
  // MPI_Testany: true when a request completed (its index in *index, it is reset to null) or when
  // every request is null (*index = -1); false, with *index = -1, when none completed yet.
  bool testany(std::span<Request> rs, int* index, Status* status = nullptr);
  // MPI_Waitsome: waits until at least one request completed, then returns how many did, their
  // indices in `indices` and their statuses in `statuses` (each as long as the requests, or
  // `statuses` empty); -1 when every request is null.
  int waitsome(std::span<Request> rs, std::span<int> indices, std::span<Status> statuses = {});
  // Cancels a receive that has not matched yet (wait then reports kErrCancelled).
  void cancel(const Request& r);
  // One progress round (test and wait progress by themselves).
  void progress();

  // Active messages. register_am (collective) declares the handler ids (each < kMaxAmHandlers)
  // this program handles; every PE must name the same ids (checked), and am_send to an id not
  // registered is a bad argument. am_poll (host-memory PEs) progresses once and calls `handler`
  // for each active message that arrived, at most `max`, in arrival order; it returns how many.
  void register_am(std::span<const uint32_t> ids);
  int am_poll(const std::function<void(const AmMessage&)>& handler, int max = 8);

  // Groups: Comm::send_on_stream / recv_on_stream between group_start and group_end are started
  // together and then waited for together (at most 64), so two PEs that each send before they
  // receive do not deadlock. GPU PEs: group_end enqueues one kernel on `stream` (CUDA graphs can
  // capture it); host-memory PEs run the group in group_end. Groups do not nest; one thread at a
  // time.
  void group_start();
  void group_end(Stream stream = nullptr);

  // Events: completion counters (docs/MESSAGING.md, "Events").
  Event make_event();
  uint64_t event_value(const Event& e) const;
  // Waits until the event reached `value` (progressing meanwhile).
  void event_wait(const Event& e, uint64_t value);

  // GPU PEs: raises the failure a kernel recorded in a messaging call (a wait that timed out, a
  // bad argument, a truncation), naming the communicator, the request, the queues and the peer;
  // then the one-sided layer's record (Runtime::check_device). Nothing when no failure was recorded.
  void check_device() const;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucomm::msg
