// Diagnostics of the messaging layer: the text of a failed wait, a bad argument, a truncation or a
// protocol fault, from the Diag record the protocol fills (host PEs raise it at once; GPU PEs read
// it from device memory after the kernel trapped).
#include "diag.hpp"

#include <string>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/format.hpp"

namespace gpucomm::msg::detail {

namespace {

const char* op_name(DiagOp op) {
  switch (op) {
    case DiagOp::none:
      return "messaging";
    case DiagOp::send:
      return "send";
    case DiagOp::isend:
      return "isend";
    case DiagOp::recv:
      return "recv";
    case DiagOp::irecv:
      return "irecv";
    case DiagOp::wait:
      return "wait";
    case DiagOp::test:
      return "test";
    case DiagOp::probe:
      return "probe";
    case DiagOp::mprobe:
      return "mprobe";
    case DiagOp::mrecv:
      return "mrecv";
    case DiagOp::cancel:
      return "cancel";
    case DiagOp::progress:
      return "progress";
    case DiagOp::am_send:
      return "am_send";
    case DiagOp::event_wait:
      return "event_wait";
    case DiagOp::pready:
      return "pready";
    case DiagOp::parrived:
      return "parrived";
  }
  return "messaging";
}

const char* state_name(uint32_t s) {
  switch (s) {
    case kReqSendPending:
      return "send waiting for inbox credits";
    case kReqSendWaitFin:
      return "rendezvous send waiting for the receiver to get the data";
    case kReqSendWaitCts:
      return "staged rendezvous send waiting for the receiver's match (CTS)";
    case kReqSendStaging:
      return "staged rendezvous send streaming chunks";
    case kReqRecvPosted:
      return "receive posted, no matching message yet";
    case kReqRecvGet:
      return "receive getting the data";
    case kReqRecvStaged:
      return "receive fetching staged chunks";
    case kReqDone:
      return "complete";
    case kReqProbe:
      return "probe waiting for a matching message";
    default:
      return "free";
  }
}

std::string rank_text(int32_t r) {
  if (r == kAnySource) return "ANY_SOURCE";
  if (r == kProcNull) return "PROC_NULL";
  return std::to_string(r);
}
std::string tag_text(int32_t t) {
  return t == kAnyTag ? "ANY_TAG" : std::to_string(t);
}

std::string comm_text(const Diag& d) {
  return "communicator " + std::to_string(d.ctx) + " (mode " + mode_name(static_cast<Mode>(d.mode)) + ")";
}

std::string request_text(const Diag& d) {
  const bool send = d.req_state >= kReqSendPending && d.req_state <= kReqSendStaging;
  std::string s = send ? "send to rank " + rank_text(d.rank) : "receive from rank " + rank_text(d.rank);
  if (d.peer >= 0) s += " (PE " + std::to_string(d.peer) + ")";
  s += ", tag " + tag_text(d.tag) + ", " + std::to_string(d.bytes) + " bytes, " + state_name(d.req_state);
  return s;
}

std::string queue_text(const Diag& d, const Config& c) {
  return "queues: UMQ " + std::to_string(d.umq) + "/" + std::to_string(c.queue_cap) + ", PRQ " + std::to_string(d.prq) +
         "/" + std::to_string(c.queue_cap) + ", active requests " + std::to_string(d.active) + ", not yet taken " +
         std::to_string(d.submitted);
}

std::string peer_text(const Diag& d, const Config& c) {
  if (d.peer < 0) return "";
  const auto freed = static_cast<uint32_t>(d.value), eager = static_cast<uint32_t>(d.value >> 32);
  return "; PE " + std::to_string(d.peer) + ": inbox slots freed " + std::to_string(freed) + " of tickets taken " +
         std::to_string(d.limit) + " (ring of " + std::to_string(c.slots) + "), eager credits returned " +
         std::to_string(eager) + ", this PE drained " + std::to_string(d.drained) + " of its tickets";
}

std::string argument_text(const Diag& d) {
  const auto v = static_cast<int64_t>(d.value);
  switch (static_cast<DiagArg>(d.arg)) {
    case DiagArg::rank:
      return "rank " + std::to_string(v) + " is outside the communicator's ranks 0.." +
             std::to_string(static_cast<int64_t>(d.limit) - 1) + " (or PROC_NULL, ANY_SOURCE for receives)";
    case DiagArg::tag:
      return "tag " + std::to_string(v) + " is outside 0.." + std::to_string(d.limit) + " (or ANY_TAG for receives)";
    case DiagArg::buffer:
      return d.value == 0 ? "buffer is null with a count of " + std::to_string(d.limit) + " bytes"
                          : "buffer " + hex(d.value) + " (" + std::to_string(d.limit) +
                                " bytes) is not global memory (a thread's stack or shared memory cannot be sent)";
    case DiagArg::bytes:
      return "count " + std::to_string(d.value) + " bytes is beyond the limit of " + std::to_string(d.limit) + " bytes";
    case DiagArg::mode:
      return std::string(v == kAnySource ? "ANY_SOURCE" : "ANY_TAG") +
             " on a communicator whose mode asserted it away (no wildcards of that kind)";
    case DiagArg::comm:
      return "context id " + std::to_string(v) + " is no live communicator (a stale or foreign CommHandle)";
    case DiagArg::message:
      return "message " + std::to_string(v) + " was not taken by mprobe/improbe (or was received already)";
    case DiagArg::event:
      return "the event is null (make events with Messenger::make_event)";
    case DiagArg::handler:
      return "active-message handler id " + std::to_string(v) +
             " is not registered (Messenger::register_am; ids below " + std::to_string(d.limit) + ")";
    case DiagArg::reply:
      return d.limit == 0 ? "am_reply to an active message that wants no reply (send it with am_request)"
                          : "the handler of active-message id " + std::to_string(v) +
                                " did not answer its request with am_reply (or answered twice)";
    default:
      return "invalid argument";
  }
}

}  // namespace

std::string describe(const Diag& d, const Config& c) {
  const std::string who = "rank " + std::to_string(c.rank) + " " + op_name(d.op);
  switch (d.kind) {
    case DiagKind::timeout: {
      std::string s = who + " on " + comm_text(d) + ": " + request_text(d) + "; " + queue_text(d, c) + peer_text(d, c) +
                      "; timed out after " + std::to_string(static_cast<double>(d.elapsed_ns) / 1e9).substr(0, 6) +
                      " s (GPUCOMM_TIMEOUT sets the limit)";
      if (d.req_state == kReqSendPending || d.umq >= c.queue_cap) {
        s += ". If every PE is stuck sending, the program needs more buffering than the inboxes give (an unsafe "
             "program: post receives first or use non-blocking sends)";
      } else if (d.req_state == kReqSendWaitFin || d.req_state == kReqSendWaitCts) {
        s += ". The receiver has not posted a matching receive: if it is blocked in a send itself, the program is "
             "unsafe (it depends on buffering; post receives first or use non-blocking sends)";
      }
      return s;
    }
    case DiagKind::truncated:
      return who + " on " + comm_text(d) + ": the message from rank " + rank_text(d.rank) + ", tag " + tag_text(d.tag) +
             " has " + std::to_string(d.sent_bytes) + " bytes, more than the " + std::to_string(d.value) +
             "-byte receive buffer (truncated to its size; create the communicator with errors_return to get "
             "it in Status.error instead)";
    case DiagKind::peer_failure:
      return who + " on " + comm_text(d) + ": " +
             (d.req_state != 0 ? request_text(d)
                               : "receive from rank " + rank_text(d.rank) + ", tag " + tag_text(d.tag)) +
             ": the job failed while waiting";
    case DiagKind::resource:
      return who + ": " +
             (d.arg == static_cast<uint32_t>(DiagArg::request)
                  ? "the request table is full (" + std::to_string(c.requests) +
                        " requests in flight; GPUCOMM_MSG_REQUESTS raises it)"
                  : std::string("a messaging table is full"));
    case DiagKind::protocol:
      switch (static_cast<ProtocolFault>(d.arg)) {
        case ProtocolFault::unknown_comm:
          return who + ": a message from PE " + std::to_string(d.peer) + " (tag " + std::to_string(d.tag) + ", " +
                 std::to_string(d.bytes) + " bytes) names context id " + std::to_string(d.ctx) +
                 ", which is no live communicator here (communicators must be created and freed collectively)";
        case ProtocolFault::pool_full:
          return who + ": PE " + std::to_string(d.peer) + " sent a " + std::to_string(d.bytes) +
                 "-byte eager message while all " + std::to_string(d.limit) +
                 " pool slots it may use here were full (the PEs disagree on GPUCOMM_MSG_POOL_SLOTS?)";
        case ProtocolFault::ll_incomplete:
          return who + ": the LL message of ticket " + std::to_string(d.limit) + " from PE " + std::to_string(d.peer) +
                 " never completed (a word still reads " + hex(d.value) + ")";
        case ProtocolFault::am_full:
          return who + ": PE " + std::to_string(d.peer) + " sent an active message (tag " +
                 hex(static_cast<uint32_t>(d.tag)) + ") while all " + std::to_string(d.limit) +
                 " entries it may use here were taken (the PEs disagree on GPUCOMM_MSG_AM_PER_SENDER?)";
        case ProtocolFault::no_unexpected:
          return who + " on " + comm_text(d) + ": a message from rank " + rank_text(d.rank) + " (PE " +
                 std::to_string(d.peer) + ", tag " + tag_text(d.tag) + ", " + std::to_string(d.bytes) +
                 " bytes) found no posted receive, which the communicator's mode no_unexpected asserted away "
                 "(post receives before their messages can arrive, or use mode mpi)";
        case ProtocolFault::none:
          break;
      }
      return who + ": protocol fault with PE " + std::to_string(d.peer);
    case DiagKind::bad_argument:
      return who + " on " + comm_text(d) + ": " + argument_text(d);
    case DiagKind::none:
      break;
  }
  return who + ": invalid argument";
}

void raise_diag(const Diag& d, const Config& c) {
  Errc code = Errc::internal;
  switch (d.kind) {
    case DiagKind::timeout:
      code = Errc::timeout;
      break;
    case DiagKind::bad_argument:
    case DiagKind::truncated:
      code = Errc::invalid_argument;
      break;
    case DiagKind::peer_failure:
      code = Errc::peer_failure;
      break;
    case DiagKind::resource:
      code = Errc::out_of_memory;
      break;
    case DiagKind::protocol:
      code = Errc::protocol;
      break;
    case DiagKind::none:
      break;
  }
  raise(code, std::string("msg::") + op_name(d.op), describe(d, c));
}

}  // namespace gpucomm::msg::detail
