#include "gpucomm/trace/metrics.hpp"

#include <string>

namespace gpucomm::trace {
namespace {
std::string short_name(uint16_t id) {
  return std::string(function_short_name(id));
}
}  // namespace

double RankMetrics::t_app_s() const {
  return any_call ? double(last_stop_ns - first_start_ns) * 1e-9 : 0.0;
}

double RankMetrics::s_mpi() const {
  double app = double(last_stop_ns - first_start_ns);
  return any_call && app > 0 ? double(t_mpi_ns) / app : 0.0;
}

double RankMetrics::s_comm() const {
  double span = double(last_comm_stop_ns - first_comm_start_ns);
  return any_comm && span > 0 ? double(t_comm_ns) / span : 0.0;
}

double RankMetrics::s_admin() const {
  return t_mpi_ns > 0 ? 1.0 - double(t_comm_ns) / double(t_mpi_ns) : 0.0;
}

uint64_t RankMetrics::distinct_peers() const {
  std::set<int32_t> all = send_peers;
  all.insert(recv_peers.begin(), recv_peers.end());
  return all.size();
}

int64_t collective_elements(const Record& r) {
  switch (r.func) {
    case fid::Barrier:
      return 0;
    case fid::Alltoallv:
    case fid::Alltoallw:
    case fid::Reduce_scatter:
      return r.counts_sum < 0 ? 0 : r.counts_sum;
    default:
      return r.count == kUnset ? 0 : r.count;
  }
}

RankAccumulator::RankAccumulator(int rank, const std::vector<int32_t>& sizes) : sizes_(sizes) {
  m_.rank = rank;
}

int64_t RankAccumulator::type_size(int32_t dt) const {
  if (dt >= 0 && static_cast<size_t>(dt) < sizes_.size()) return sizes_[dt];
  auto it = learned_sizes_.find(dt);
  return it == learned_sizes_.end() ? -1 : it->second;
}

void RankAccumulator::on_send(const char* fn, bool nonblocking, int32_t count, int32_t datatype, int32_t peer,
                              int32_t tag, int32_t comm, int64_t t, std::vector<P2PEvent>& ev) {
  if (peer == kProcNull) {
    ++m_.proc_null_sends;
    return;
  }
  ++m_.sends;
  ++m_.send_functions[fn];
  if (nonblocking) ++m_.nonblocking_sends;
  if (comm != kCommWorld) ++m_.other_comm_p2p;
  int64_t ts = type_size(datatype);
  int64_t bytes = ts >= 0 ? int64_t(count) * ts : -1;
  m_.send_elements.add(count);
  if (bytes >= 0) {
    m_.send_bytes.add(bytes);
  } else {
    ++m_.send_size_unknown;
  }
  m_.send_peers.insert(peer);
  m_.tags.insert(tag);
  ++m_.sends_to[peer];
  if (bytes >= 0) m_.send_bytes_to[peer] += bytes;
  m_.p2p_rate.add(t);
  ev.push_back({P2PEvent::send, t, m_.rank, comm, peer, tag, bytes, count});
}

void RankAccumulator::on_recv(const char* fn, bool nonblocking, int32_t count, int32_t datatype, int32_t peer,
                              int32_t tag, int32_t comm, int64_t t, std::vector<P2PEvent>& ev, int32_t request,
                              const Status* status, bool status_recorded) {
  if (peer == kProcNull) {
    ++m_.proc_null_recvs;
    return;
  }
  ++m_.recvs;
  ++m_.recv_functions[fn];
  if (nonblocking) ++m_.nonblocking_recvs;
  if (comm != kCommWorld) ++m_.other_comm_p2p;
  int64_t ts = type_size(datatype);
  int64_t bytes = ts >= 0 ? int64_t(count) * ts : -1;
  m_.recv_elements.add(count);
  if (bytes >= 0) {
    m_.recv_bytes.add(bytes);
  } else {
    ++m_.recv_size_unknown;
  }
  m_.tags.insert(tag);
  PendingRecv p{peer == kAnySource, bytes, count};
  if (peer == kAnySource) {
    ++m_.any_source_recvs;
  } else {
    m_.recv_peers.insert(peer);
    ++m_.recvs_from[peer];
    if (bytes >= 0) m_.recv_bytes_from[peer] += bytes;
  }
  ev.push_back({P2PEvent::recv_post, t, m_.rank, comm, peer, tag, bytes, count});
  if (request == kUnset) {  // blocking receive: completes in this call
    if (p.any_source) resolve(p, status_recorded ? status : nullptr);
    return;
  }
  if (pending_.count(request)) ++m_.recv_request_id_reuse;
  pending_[request] = p;
  if (pending_.size() > m_.max_outstanding_recv_requests) m_.max_outstanding_recv_requests = pending_.size();
}

void RankAccumulator::resolve(const PendingRecv& p, const Status* status) {
  if (!p.any_source) return;
  // The trace tells no source: no status recorded, the receive was cancelled (its status names
  // no sender), or the status holds no rank (MPI_ANY_SOURCE, MPI_PROC_NULL).
  if (!status || status->cancelled != 0 || status->source < 0) {
    ++m_.any_source_unresolved;
    return;
  }
  m_.recv_peers.insert(status->source);
  ++m_.recvs_from[status->source];
  if (p.bytes >= 0) m_.recv_bytes_from[status->source] += p.bytes;
}

void RankAccumulator::complete(int32_t request, const Status* status) {
  auto it = pending_.find(request);
  if (it == pending_.end()) return;  // a send request, MPI_REQUEST_NULL, or a shared send id
  PendingRecv p = it->second;
  pending_.erase(it);
  resolve(p, status);
}

void RankAccumulator::on_start(int32_t request, int64_t t, const char* fn, std::vector<P2PEvent>& ev) {
  auto it = persistent_.find(request);
  if (it == persistent_.end()) return;
  const Persistent& p = it->second;
  if (p.is_send) {
    on_send(fn, true, p.count, p.datatype, p.peer, p.tag, p.comm, t, ev);
  } else {
    on_recv(fn, true, p.count, p.datatype, p.peer, p.tag, p.comm, t, ev, request, nullptr, false);
  }
}

void RankAccumulator::consume(const Record& r, int64_t t, int64_t stop, std::vector<P2PEvent>& ev) {
  const FuncClass cls = function_class(r.func);
  if (cls == FuncClass::marker) return;
  ++m_.calls;
  if (r.func < m_.calls_by_function.size()) ++m_.calls_by_function[r.func];
  if (!m_.any_call) {
    m_.first_start_ns = t;
    m_.any_call = true;
  }
  if (stop < t) stop = t;
  if (stop > m_.last_stop_ns) m_.last_stop_ns = stop;
  m_.t_mpi_ns += stop - t;
  if (is_communicating(cls)) {
    if (!m_.any_comm) {
      m_.first_comm_start_ns = t;
      m_.any_comm = true;
    }
    if (stop > m_.last_comm_stop_ns) m_.last_comm_stop_ns = stop;
    m_.t_comm_ns += stop - t;
  }

  const bool has_status = r.statuses_recorded && !r.statuses.empty();
  const Status* first_status = has_status ? &r.statuses[0] : nullptr;
  switch (r.func) {
    case fid::Send:
    case fid::Bsend:
    case fid::Ssend:
    case fid::Rsend:
    case fid::Isend:
    case fid::Ibsend:
    case fid::Issend:
    case fid::Irsend: {
      static thread_local std::string name;
      name = short_name(r.func);
      on_send(name.c_str(), is_nonblocking(r.func), r.count, r.datatype, r.peer, r.tag, r.comm, t, ev);
      return;
    }
    case fid::Recv:
      on_recv("Recv", false, r.count, r.datatype, r.peer, r.tag, r.comm, t, ev, kUnset, first_status, has_status);
      return;
    case fid::Irecv:
      on_recv("Irecv", true, r.count, r.datatype, r.peer, r.tag, r.comm, t, ev, r.request, nullptr, false);
      return;
    case fid::Sendrecv:
    case fid::Sendrecv_replace: {
      const char* fn = r.func == fid::Sendrecv ? "Sendrecv" : "Sendrecv_replace";
      int32_t rc = r.func == fid::Sendrecv ? r.count2 : r.count;
      int32_t rt = r.func == fid::Sendrecv ? r.datatype2 : r.datatype;
      // The receive half is posted before the send half goes out (a self-exchange matches).
      on_recv(fn, false, rc, rt, r.peer2, r.tag2, r.comm, t, ev, kUnset, first_status, has_status);
      on_send(fn, false, r.count, r.datatype, r.peer, r.tag, r.comm, t, ev);
      return;
    }
    case fid::Send_init:
    case fid::Bsend_init:
    case fid::Ssend_init:
    case fid::Rsend_init:
    case fid::Recv_init:
      persistent_[r.request] = {r.func != fid::Recv_init, r.func, r.count, r.datatype, r.peer, r.tag, r.comm};
      return;
    case fid::Start:
      on_start(r.request, t, "Start", ev);
      return;
    case fid::Startall:
      for (int32_t q : r.requests) on_start(q, t, "Startall", ev);
      return;
    case fid::Wait:
      complete(r.request, first_status);
      return;
    case fid::Test:
      if (r.flag != 0 && r.flag != kUnset) complete(r.request, first_status);
      return;
    case fid::Waitany:
    case fid::Testany:
      if ((r.func == fid::Waitany || (r.flag != 0 && r.flag != kUnset)) && r.index >= 0 &&
          static_cast<size_t>(r.index) < r.requests.size())
        complete(r.requests[r.index], first_status);
      return;
    case fid::Waitall:
    case fid::Testall:
      if (r.func == fid::Testall && (r.flag == 0 || r.flag == kUnset)) return;
      for (size_t k = 0; k < r.requests.size(); ++k)
        complete(r.requests[k], has_status && r.statuses.size() == r.requests.size() ? &r.statuses[k] : nullptr);
      return;
    case fid::Waitsome:
    case fid::Testsome:
      for (size_t k = 0; k < r.indices.size(); ++k) {
        int32_t i = r.indices[k];
        if (i < 0 || static_cast<size_t>(i) >= r.requests.size()) continue;
        complete(r.requests[i], has_status && k < r.statuses.size() ? &r.statuses[k] : nullptr);
      }
      return;
    case fid::Request_free:
      // A receive freed before it completed: it may still complete, but the trace never says from whom.
      if (auto it = pending_.find(r.request); it != pending_.end()) {
        resolve(it->second, nullptr);
        pending_.erase(it);
      }
      persistent_.erase(r.request);
      return;
    case fid::Probe:
    case fid::Iprobe:
      ++m_.probes;
      return;
    case fid::Type_size:
      if (r.datatype != kUnset && r.value != kUnset) learned_sizes_[r.datatype] = r.value;
      return;
    default:
      break;
  }
  if (cls == FuncClass::collective) {
    ++m_.collectives[short_name(r.func)];
    m_.coll_rate.add(t);
    int64_t el = collective_elements(r);
    m_.coll_elements.add(el);
    int64_t ts = r.func == fid::Barrier ? 1 : r.func == fid::Alltoallw ? -1 : type_size(r.datatype);
    if (ts >= 0) {
      m_.coll_bytes.add(el * ts);
    } else {
      ++m_.coll_size_unknown;
    }
  }
}

void RankAccumulator::finish() {
  for (auto& [req, p] : pending_)
    if (p.any_source) ++m_.any_source_unresolved;
  pending_.clear();
}

}  // namespace gpucomm::trace
