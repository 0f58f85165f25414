#pragma once
// Per-rank communication metrics, computed from one rank's calls in call order.
// docs/TRACES.md defines every field.
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpucomm/trace/functions.hpp"
#include "gpucomm/trace/record.hpp"
#include "gpucomm/trace/stats.hpp"

namespace gpucomm::trace {

// A point-to-point message event handed to the matching-queue replay.
struct P2PEvent {
  enum Kind : uint8_t { send, recv_post } kind = send;
  int64_t t_ns = 0;
  int rank = 0;  // the rank that made the call
  int32_t comm = 0;
  int32_t peer = 0;  // destination (send) or source (receive; may be kAnySource), in comm
  int32_t tag = 0;
  int64_t bytes = -1;  // -1: datatype size unknown
  int64_t elements = 0;
};

// Windows of the message-rate metric: 1 us, 100 us, 1 ms.
inline constexpr std::array<int64_t, 3> kRateWindowsNs{1000, 100000, 1000000};

struct RateCounter {
  std::array<WindowPeak, 3> peaks{WindowPeak(kRateWindowsNs[0]), WindowPeak(kRateWindowsNs[1]),
                                  WindowPeak(kRateWindowsNs[2])};
  uint64_t events = 0;
  void add(int64_t t) {
    ++events;
    for (auto& p : peaks) p.add(t);
  }
};

struct RankMetrics {
  int rank = 0;
  uint64_t calls = 0;
  std::array<uint64_t, 294> calls_by_function{};

  // Times (ns, on the trace's wall clock).
  int64_t first_start_ns = 0, last_stop_ns = 0;
  int64_t first_comm_start_ns = 0, last_comm_stop_ns = 0;
  int64_t t_mpi_ns = 0, t_comm_ns = 0;
  bool any_call = false, any_comm = false;

  // Point to point.
  uint64_t sends = 0, recvs = 0;
  std::map<std::string, uint64_t> send_functions, recv_functions;
  CountHistogram send_bytes, recv_bytes;        // messages whose datatype size is known
  CountHistogram send_elements, recv_elements;  // every message
  uint64_t send_size_unknown = 0, recv_size_unknown = 0;
  std::set<int32_t> send_peers, recv_peers, tags;
  std::map<int32_t, uint64_t> sends_to, send_bytes_to, recvs_from, recv_bytes_from;
  uint64_t any_source_recvs = 0, any_source_unresolved = 0;
  uint64_t proc_null_sends = 0, proc_null_recvs = 0;
  uint64_t nonblocking_sends = 0, nonblocking_recvs = 0;
  uint64_t probes = 0;
  uint64_t max_outstanding_recv_requests = 0;
  uint64_t recv_request_id_reuse = 0;  // an Irecv returned an id still pending (should not happen)
  uint64_t other_comm_p2p = 0;         // p2p calls on communicators other than MPI_COMM_WORLD

  // Collectives.
  std::map<std::string, uint64_t> collectives;
  CountHistogram coll_elements, coll_bytes;
  uint64_t coll_size_unknown = 0;

  // Message rates.
  RateCounter p2p_rate, coll_rate;

  double s_mpi() const;
  double s_comm() const;
  double s_admin() const;
  double t_app_s() const;
  uint64_t distinct_peers() const;
};

// Feeds one rank's calls, in order, into RankMetrics and emits the p2p events for the replay.
class RankAccumulator {
 public:
  RankAccumulator(int rank, const std::vector<int32_t>& datatype_sizes);
  // `t_ns` is the call's start on the common clock (the record's wall start, or a substitute).
  void consume(const Record& r, int64_t t_ns, int64_t stop_ns, std::vector<P2PEvent>& events);
  // Closes the stream: receives never completed with a status count as unresolved.
  void finish();
  const RankMetrics& metrics() const { return m_; }
  RankMetrics& metrics() { return m_; }
  int64_t type_size(int32_t datatype) const;

 private:
  struct PendingRecv {
    bool any_source;
    int64_t bytes;
    int64_t elements;
  };
  struct Persistent {
    bool is_send;
    uint16_t func;
    int32_t count, datatype, peer, tag, comm;
  };
  void on_send(const char* fn, bool nonblocking, int32_t count, int32_t datatype, int32_t peer, int32_t tag,
               int32_t comm, int64_t t, std::vector<P2PEvent>& ev);
  // Returns true if the receive is a message (not MPI_PROC_NULL) and, for request-based
  // receives, registers it as pending under `request`.
  void on_recv(const char* fn, bool nonblocking, int32_t count, int32_t datatype, int32_t peer, int32_t tag,
               int32_t comm, int64_t t, std::vector<P2PEvent>& ev, int32_t request, const Status* status,
               bool status_recorded);
  void complete(int32_t request, const Status* status);
  void resolve(const PendingRecv& p, const Status* status);
  void on_start(int32_t request, int64_t t, const char* fn, std::vector<P2PEvent>& ev);

  RankMetrics m_;
  std::vector<int32_t> sizes_;
  std::unordered_map<int32_t, int64_t> learned_sizes_;
  std::unordered_map<int32_t, PendingRecv> pending_;
  std::unordered_map<int32_t, Persistent> persistent_;
};

// Elements a collective call contributes (docs/TRACES.md, "collective message size").
int64_t collective_elements(const Record& r);

}  // namespace gpucomm::trace
