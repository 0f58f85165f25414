// The host API of the collectives: settings, team workspaces, argument checks, selection, and the
// hand-off to the host runner (host-memory PEs) or to one kernel on the caller's stream (GPU PEs).
#include "gpucomm/collectives/collectives.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/nvtx_range.hpp"
#include "diag_text.hpp"
#include "gpu_launch.hpp"
#include "gpucomm/base/ordering_host.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/log.hpp"
#include "gpucomm/topology/topology.hpp"
#include "host_run.hpp"
#include "workspace.hpp"

namespace gpucomm::coll {

using detail::TeamState;

namespace {

constexpr const char* kRangeNames[] = {"gpucomm::barrier",   "gpucomm::broadcast", "gpucomm::reduce",
                                       "gpucomm::allreduce", "gpucomm::allgather", "gpucomm::reduce_scatter",
                                       "gpucomm::alltoall",  "gpucomm::alltoallv"};

// NVTX range around a host call, named after the collective.
struct NvtxRange : gpucomm::detail::NvtxRange {
  explicit NvtxRange(CollOp op) : gpucomm::detail::NvtxRange(kRangeNames[static_cast<int>(op)]) {}
};

bool overlap(const void* a, size_t na, const void* b, size_t nb) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return na && nb && x < y + nb && y < x + na;
}

// GPUCOMM_COLL_ALGO: "ring" (every operation that implements it) or "allreduce=twoshot,allgather=ring".
std::array<Algorithm, kNumOps> parse_algo_env() {
  std::array<Algorithm, kNumOps> out{};
  out.fill(Algorithm::automatic);
  const std::string text = env::get_string("GPUCOMM_COLL_ALGO", "");
  if (text.empty()) return out;
  // Raises naming the variable's whole value and what is wrong with one item.
  auto bad = [&text](const std::string& what) {
    std::string msg = "GPUCOMM_COLL_ALGO='";
    msg += text;
    msg += "': ";
    msg += what;
    raise(Errc::invalid_argument, "environment", msg);
  };
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    Algorithm a{};
    const std::string algo = eq == std::string::npos ? item : item.substr(eq + 1);
    if (!parse_algorithm(algo.c_str(), &a)) {
      bad("'" + algo + "' is no algorithm");
    }
    if (eq == std::string::npos) {
      for (int o = 0; o < kNumOps; ++o)
        if (implements(a, static_cast<CollOp>(o))) out[static_cast<size_t>(o)] = a;
      continue;
    }
    CollOp op{};
    const std::string name = item.substr(0, eq);
    if (!parse_op(name.c_str(), &op)) {
      bad("'" + name + "' is no operation");
    }
    if (!implements(a, op)) {
      std::string why = algo;
      why += " does not implement ";
      bad(why += name);
    }
    out[static_cast<size_t>(op)] = a;
  }
  return out;
}

}  // namespace

struct Collectives::Impl {
  Runtime& rt;
  detail::Settings set;
  detail::Pool pool;
  std::array<Algorithm, kNumOps> env_algo{};
  int64_t timeout_ms = 0;
  // Teams by slot; each slot keeps the teams that held it (compared by members).
  std::array<std::vector<std::unique_ptr<TeamState>>, kMaxTeams> teams;
  bool gpu = false;
  DeviceHandle dh{};
  CollDiag* diag_host = nullptr;
  CollDiag* diag_dev = nullptr;
  int uncaught_at_start = 0;  // std::uncaught_exceptions() when constructed

  explicit Impl(Runtime& r) : rt(r), set(detail::read_settings()), pool(r, set) {
    env_algo = parse_algo_env();
    timeout_ms = env::wait_timeout_ms();
    gpu = rt.pe_kind() == PeKind::gpu;
    if (gpu) {
      dh = rt.device_handle();
      check_cuda(cudaHostAlloc(reinterpret_cast<void**>(&diag_host), sizeof(CollDiag), cudaHostAllocMapped),
                 "cudaHostAlloc", "collective failure record");
      std::memset(static_cast<void*>(diag_host), 0, sizeof(CollDiag));
      check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&diag_dev), diag_host, 0),
                 "cudaHostGetDevicePointer", "collective failure record");
      check_cuda(detail::preload_kernels(), "Collectives", "loading the collective kernels");
    }
  }
  ~Impl() {
    if (diag_host) (void)cudaFreeHost(diag_host);
  }

  TeamState* find(const Team& team) {
    auto& list = teams[static_cast<size_t>(team.id())];
    for (auto& t : list)
      if (t->team.members() == team.members()) return t.get();
    return nullptr;
  }
  TeamState& state(const Team& team, const char* op) {
    GPUCOMM_CHECK_ARG(team.valid(), op, "team", "is not a team this PE belongs to");
    if (TeamState* t = find(team)) return *t;
    auto t = detail::make_team_state(rt, pool, set, team, diag_dev);
    TeamState* out = t.get();
    teams[static_cast<size_t>(team.id())].push_back(std::move(t));
    return *out;
  }

  Choice choose(TeamState& ts, CollOp op, DataType dt, uint64_t bytes, const CollOptions& o, const char* call) {
    Choice c;
    const uint32_t most =
        o.max_ctas > 0 ? std::min<uint32_t>(static_cast<uint32_t>(o.max_ctas), set.channels) : set.channels;
    Algorithm a = o.algorithm;
    c.why = "option";
    if (a == Algorithm::automatic && env_algo[static_cast<size_t>(op)] != Algorithm::automatic) {
      a = env_algo[static_cast<size_t>(op)];
      c.why = "GPUCOMM_COLL_ALGO";
    }
    if (op == CollOp::alltoallv) {
      GPUCOMM_CHECK_ARG(a == Algorithm::automatic || a == Algorithm::oneshot, call, "algorithm",
                        std::string(algorithm_name(a)) + " does not implement alltoallv (oneshot does)");
      GPUCOMM_CHECK_ARG(16 * static_cast<uint64_t>(ts.sizes.n) <= ts.sizes.slot, call, "team",
                        "alltoallv needs 16 bytes per member in each slot: raise GPUCOMM_COLL_SCRATCH");
      c.algorithm = Algorithm::oneshot;
      c.channels = o.channels > 0   ? std::min<uint32_t>(static_cast<uint32_t>(o.channels), set.channels)
                   : o.max_ctas > 0 ? most
                                    : 1;
      c.why = "alltoallv: oneshot, channels from the options";
      return c;
    }
    if (a == Algorithm::automatic) {
      const int r = auto_rule(ts.h, op, bytes);
      c.algorithm = static_cast<Algorithm>(ts.h.auto_algo[static_cast<int>(op)][r]);
      c.channels = std::min<uint32_t>(ts.h.auto_channels[static_cast<int>(op)][r], most);
      c.why = "model";
    } else {
      GPUCOMM_CHECK_ARG(implements(a, op), call, "algorithm",
                        std::string(algorithm_name(a)) + " does not implement " + op_name(op));
      if (a == Algorithm::oneshot_ll) {
        GPUCOMM_CHECK_ARG(ts.topo.all_direct, call, "algorithm",
                          "oneshot_ll needs every team member mapped by every other (PEs on one node)");
      }
      if (a == Algorithm::hierarchical) {
        GPUCOMM_CHECK_ARG(ts.topo.per_node > 0, call, "algorithm",
                          "hierarchical needs the same number of team members on every node");
      }
      c.algorithm = a;
      c.channels = a == Algorithm::ring ? 1 : best_channels(op, a, dt, bytes, ts.topo, ts.sizes, most).channels;
    }
    if (o.channels > 0) {
      GPUCOMM_CHECK_ARG(static_cast<uint32_t>(o.channels) <= set.channels, call, "options.channels",
                        std::to_string(o.channels) + " is more than the workspace's " + std::to_string(set.channels) +
                            " (GPUCOMM_COLL_MAX_CTAS)");
      c.channels = c.algorithm == Algorithm::ring ? 1 : static_cast<uint32_t>(o.channels);
    }
    c.channels = std::max<uint32_t>(1, c.channels);
    if (op != CollOp::barrier && window_elems(op, c.algorithm, dt, ts.sizes) == 0) {
      raise_arg(call, "algorithm",
                std::string(algorithm_name(c.algorithm)) + " does not fit this team's workspace (" +
                    std::to_string(ts.sizes.slot) + " bytes per slot): raise GPUCOMM_COLL_SCRATCH");
    }
    if (log::enabled(log::Level::debug)) {
      c.why += ": " + describe_estimates(estimates(op, dt, bytes, ts.topo, ts.sizes, most));
      GPUCOMM_LOG(debug, op_name(op) << " of " << bytes << " B (" << type_name(dt) << ") on team " << ts.h.team.slot
                                     << " (" << ts.h.team.size << " PEs, " << link_class_name(ts.topo.intra) << ", "
                                     << ts.topo.nodes << " nodes): " << algorithm_name(c.algorithm) << " on "
                                     << c.channels << " channels (" << c.why << ")");
    }
    return c;
  }

  // One-member teams on GPU PEs: no protocol, no workspace; one small kernel or nothing
  // (docs/COLLECTIVES.md, "One-member teams"). A barrier still completes earlier puts when a proxy
  // carries them, and alltoallv's counts on the device are read by the protocol's kernel.
  bool alone(const TeamState& ts, const Call& call, const uint64_t* inline_counts) const {
    if (ts.h.team.size != 1) return false;
    if ((ts.h.flags & kCollForceProtocol) && force_applies(call.op, call.algo))
      return false;  // the protocol with itself as its peer (GPUCOMM_COLL_FORCE_PROTOCOL)
    if (call.op == CollOp::barrier) return dh.num_queues == 0;
    return call.op != CollOp::alltoallv || inline_counts != nullptr;
  }
  static cudaError_t run_alone(const Call& call, const uint64_t* inline_counts, cudaStream_t s) {
    const size_t sz = type_size(call.dt);
    if (call.op == CollOp::barrier) return cudaSuccess;  // stream order is the whole barrier
    if (call.op == CollOp::alltoallv) {
      // inline_counts: send_counts, send_displs, recv_counts, recv_displs (one entry each).
      if (inline_counts[0] == 0) return cudaSuccess;
      return detail::launch_alone_copy(static_cast<char*>(call.recv) + inline_counts[3] * sz,
                                       static_cast<const char*>(call.send) + inline_counts[1] * sz,
                                       inline_counts[0] * sz, s);
    }
    if (reduces(call.op)) return detail::launch_alone_convert(call.dt, call.recv, call.send, call.count, s);
    return detail::launch_alone_copy(call.recv, call.send, call.count * sz, s);
  }

  void run(TeamState& ts, Call& call, Stream stream, const char* name, const uint64_t* inline_counts = nullptr) {
    if (!gpu) {
      detail::run_on_host(rt, ts.h, call, timeout_ms);
      return;
    }
    auto s = reinterpret_cast<cudaStream_t>(stream ? stream : rt.stream());
    cudaError_t e;
    if (alone(ts, call, inline_counts)) {
      e = run_alone(call, inline_counts, s);
    } else if (inline_counts) {
      const auto n = static_cast<size_t>(ts.h.team.size);
      e = detail::launch_alltoallv_inline(dh, ts.h, call, inline_counts, inline_counts + n, inline_counts + 2 * n,
                                          inline_counts + 3 * n, set.threads, s);
    } else {
      e = detail::launch(dh, ts.h, call, set.threads, s);
    }
    if (e != cudaSuccess)
      raise(Errc::cuda, name, std::string("launching the collective kernel: ") + cudaGetErrorString(e));
  }

  // Common checks and the call record of every operation.
  Call make_call(TeamState& ts, CollOp op, const void* send, void* recv, uint64_t count, DataType dt, RedOp red,
                 int root, const CollOptions& o, const char* name) {
    GPUCOMM_CHECK_ARG(is_valid(dt), name, "dtype", "is not a DataType");
    GPUCOMM_CHECK_ARG(count <= (uint64_t{1} << 40), name, "count", std::to_string(count) + " elements is too large");
    if (reduces(op)) {
      GPUCOMM_CHECK_ARG(is_valid(red), name, "op", "is not a RedOp");
      GPUCOMM_CHECK_ARG(valid_pair(dt, red), name, "op",
                        std::string(redop_name(red)) + " applies to integer types only, not " + type_name(dt));
    }
    GPUCOMM_CHECK_ARG(is_valid(o.algorithm), name, "options.algorithm", "is not an Algorithm");
    const int n = ts.h.team.size;
    if (rooted(op)) {
      GPUCOMM_CHECK_ARG(root >= 0 && root < n, name, "root",
                        std::to_string(root) + " is not a team rank (0.." + std::to_string(n - 1) + ")");
    }
    const uint64_t bytes = count * type_size(dt);
    const Choice c = choose(ts, op, dt, bytes, o, name);
    Call call{};
    call.op = op;
    call.dt = dt;
    call.redop = reduces(op) ? red : RedOp::sum;
    call.algo = c.algorithm;
    call.root = rooted(op) ? root : -1;
    call.channels = c.channels;
    call.count = count;
    call.send = send;
    call.recv = recv;
    call.sig = signature(op, dt, call.redop, call.algo, op == CollOp::alltoallv ? 0 : count, call.root, call.channels);
    return call;
  }
};

Collectives::Collectives(Runtime& rt) : impl_(std::make_unique<Impl>(rt)) {
  impl_->uncaught_at_start = std::uncaught_exceptions();
}

Collectives::~Collectives() {
  try {
    // Nobody would join the pool's release (a collective free) once the job failed, nor while an
    // error unwinds (a collective left in the middle: the others may still wait inside it; the
    // runtime aborts the job when the error leaves its scope).
    if (impl_->rt.aborted() || impl_->rt.failed() || std::uncaught_exceptions() > impl_->uncaught_at_start) {
      GPUCOMM_LOG(debug, "Collectives: the job failed or an error unwinds; the pool stays allocated until finalize");
      return;
    }
    // A GPU whose kernel failed cannot take part in the pool's release (a collective free).
    if (impl_->gpu && cudaDeviceSynchronize() != cudaSuccess) {
      GPUCOMM_LOG(debug, "Collectives: the GPU failed; the pool stays allocated until finalize");
      return;
    }
    impl_->pool.release();
  } catch (const std::exception& e) {
    GPUCOMM_LOG(warn, "Collectives: " << e.what());
  }
}

Runtime& Collectives::runtime() const {
  return impl_->rt;
}

void Collectives::prepare(const Team& team) {
  impl_->state(team, "Collectives::prepare");
}
CollHandle Collectives::handle(const Team& team) {
  return impl_->state(team, "Collectives::handle").h;
}
TopoSummary Collectives::topology(const Team& team) {
  return impl_->state(team, "Collectives::topology").topo;
}
Choice Collectives::plan(CollOp op, DataType dt, uint64_t bytes, const Team& team, const CollOptions& o) {
  return impl_->choose(impl_->state(team, "Collectives::plan"), op, dt, bytes, o, "Collectives::plan");
}

void Collectives::barrier(const Team& team, Stream stream, const CollOptions& o) {
  NvtxRange r(CollOp::barrier);
  TeamState& ts = impl_->state(team, "barrier");
  Call c = impl_->make_call(ts, CollOp::barrier, nullptr, nullptr, 0, DataType::u64, RedOp::sum, -1, o, "barrier");
  c.channels = 1;
  c.sig = signature(CollOp::barrier, DataType::u64, RedOp::sum, c.algo, 0, -1, 1);
  impl_->run(ts, c, stream, "barrier");
}

void Collectives::broadcast(const void* send, void* recv, size_t count, DataType dt, int root, const Team& team,
                            Stream stream, const CollOptions& o) {
  NvtxRange r(CollOp::broadcast);
  TeamState& ts = impl_->state(team, "broadcast");
  Call c = impl_->make_call(ts, CollOp::broadcast, send, recv, count, dt, RedOp::sum, root, o, "broadcast");
  if (count == 0) return;
  const size_t bytes = count * type_size(dt);
  GPUCOMM_CHECK_ARG(recv != nullptr, "broadcast", "recv", "is null");
  if (ts.h.team.rank == root) {
    GPUCOMM_CHECK_ARG(send != nullptr, "broadcast", "send", "is null on the root");
    GPUCOMM_CHECK_ARG(send == recv || !overlap(send, bytes, recv, bytes), "broadcast", "recv",
                      "overlaps send without being the same buffer (in place)");
  }
  impl_->run(ts, c, stream, "broadcast");
}

void Collectives::reduce(const void* send, void* recv, size_t count, DataType dt, RedOp op, int root, const Team& team,
                         Stream stream, const CollOptions& o) {
  NvtxRange r(CollOp::reduce);
  TeamState& ts = impl_->state(team, "reduce");
  Call c = impl_->make_call(ts, CollOp::reduce, send, recv, count, dt, op, root, o, "reduce");
  if (count == 0) return;
  const size_t bytes = count * type_size(dt);
  GPUCOMM_CHECK_ARG(send != nullptr, "reduce", "send", "is null");
  if (ts.h.team.rank == root) {
    GPUCOMM_CHECK_ARG(recv != nullptr, "reduce", "recv", "is null on the root");
    GPUCOMM_CHECK_ARG(send == recv || !overlap(send, bytes, recv, bytes), "reduce", "recv",
                      "overlaps send without being the same buffer (in place)");
  } else {
    c.recv = nullptr;
  }
  impl_->run(ts, c, stream, "reduce");
}

void Collectives::allreduce(const void* send, void* recv, size_t count, DataType dt, RedOp op, const Team& team,
                            Stream stream, const CollOptions& o) {
  NvtxRange r(CollOp::allreduce);
  TeamState& ts = impl_->state(team, "allreduce");
  Call c = impl_->make_call(ts, CollOp::allreduce, send, recv, count, dt, op, -1, o, "allreduce");
  if (count == 0) return;
  const size_t bytes = count * type_size(dt);
  GPUCOMM_CHECK_ARG(send != nullptr && recv != nullptr, "allreduce", send ? "recv" : "send", "is null");
  GPUCOMM_CHECK_ARG(send == recv || !overlap(send, bytes, recv, bytes), "allreduce", "recv",
                    "overlaps send without being the same buffer (in place)");
  impl_->run(ts, c, stream, "allreduce");
}

void Collectives::allgather(const void* send, void* recv, size_t count, DataType dt, const Team& team, Stream stream,
                            const CollOptions& o) {
  NvtxRange r(CollOp::allgather);
  TeamState& ts = impl_->state(team, "allgather");
  Call c = impl_->make_call(ts, CollOp::allgather, send, recv, count, dt, RedOp::sum, -1, o, "allgather");
  if (count == 0) return;
  const size_t bytes = count * type_size(dt), n = static_cast<size_t>(ts.h.team.size);
  GPUCOMM_CHECK_ARG(send != nullptr && recv != nullptr, "allgather", send ? "recv" : "send", "is null");
  const void* in_place = static_cast<const char*>(recv) + static_cast<size_t>(ts.h.team.rank) * bytes;
  GPUCOMM_CHECK_ARG(send == in_place || !overlap(send, bytes, recv, n * bytes), "allgather", "send",
                    "overlaps recv without being this PE's block of it (in place: send == recv + rank * count)");
  impl_->run(ts, c, stream, "allgather");
}

void Collectives::reduce_scatter(const void* send, void* recv, size_t count, DataType dt, RedOp op, const Team& team,
                                 Stream stream, const CollOptions& o) {
  NvtxRange r(CollOp::reduce_scatter);
  TeamState& ts = impl_->state(team, "reduce_scatter");
  Call c = impl_->make_call(ts, CollOp::reduce_scatter, send, recv, count, dt, op, -1, o, "reduce_scatter");
  if (count == 0) return;
  const size_t bytes = count * type_size(dt), n = static_cast<size_t>(ts.h.team.size);
  GPUCOMM_CHECK_ARG(send != nullptr && recv != nullptr, "reduce_scatter", send ? "recv" : "send", "is null");
  const void* in_place = static_cast<const char*>(send) + static_cast<size_t>(ts.h.team.rank) * bytes;
  GPUCOMM_CHECK_ARG(recv == in_place || !overlap(send, n * bytes, recv, bytes), "reduce_scatter", "recv",
                    "overlaps send without being this PE's block of it (in place: recv == send + rank * count)");
  impl_->run(ts, c, stream, "reduce_scatter");
}

void Collectives::alltoall(const void* send, void* recv, size_t count, DataType dt, const Team& team, Stream stream,
                           const CollOptions& o) {
  NvtxRange r(CollOp::alltoall);
  TeamState& ts = impl_->state(team, "alltoall");
  Call c = impl_->make_call(ts, CollOp::alltoall, send, recv, count, dt, RedOp::sum, -1, o, "alltoall");
  if (count == 0) return;
  const size_t bytes = count * type_size(dt) * static_cast<size_t>(ts.h.team.size);
  GPUCOMM_CHECK_ARG(send != nullptr && recv != nullptr, "alltoall", send ? "recv" : "send", "is null");
  GPUCOMM_CHECK_ARG(send == recv || !overlap(send, bytes, recv, bytes), "alltoall", "recv",
                    "overlaps send without being the same buffer (in place)");
  impl_->run(ts, c, stream, "alltoall");
}

void Collectives::alltoallv(const void* send, const uint64_t* send_counts, const uint64_t* send_displs, void* recv,
                            const uint64_t* recv_counts, const uint64_t* recv_displs, DataType dt, const Team& team,
                            Stream stream, const CollOptions& o) {
  NvtxRange r(CollOp::alltoallv);
  constexpr const char* name = "alltoallv";
  TeamState& ts = impl_->state(team, name);
  GPUCOMM_CHECK_ARG(send_counts && send_displs && recv_counts && recv_displs, name, "counts",
                    "the four count and displacement arrays are required");
  GPUCOMM_CHECK_ARG(send != recv || send == nullptr, name, "recv", "in-place alltoallv is not supported");
  Call c = impl_->make_call(ts, CollOp::alltoallv, send, recv, 0, dt, RedOp::sum, -1, o, name);
  const int n = ts.h.team.size;
  c.send_counts = send_counts;
  c.send_displs = send_displs;
  c.recv_counts = recv_counts;
  c.recv_displs = recv_displs;
  if (!o.counts_on_device) {
    // One member: what it sends itself is what it receives (larger teams check pairwise in the protocol).
    GPUCOMM_CHECK_ARG(n != 1 || send_counts[0] == recv_counts[0], name, "recv_counts",
                      "recv_counts[0] is " + std::to_string(recv_counts[0]) + ", send_counts[0] is " +
                          std::to_string(send_counts[0]) + " (a one-member team sends to itself)");
    uint64_t sent = 0, got = 0;
    for (int i = 0; i < n; ++i) {
      GPUCOMM_CHECK_ARG(send_counts[i] <= (uint64_t{1} << 40) && recv_counts[i] <= (uint64_t{1} << 40), name, "counts",
                        "entry " + std::to_string(i) + " is too large");
      // Displacements bounded too, so that displacement + count cannot wrap around the address space.
      GPUCOMM_CHECK_ARG(send_displs[i] <= (uint64_t{1} << 40) && recv_displs[i] <= (uint64_t{1} << 40), name, "displs",
                        "entry " + std::to_string(i) + " is too large");
      sent += send_counts[i];
      got += recv_counts[i];
    }
    GPUCOMM_CHECK_ARG(sent == 0 || send != nullptr, name, "send", "is null");
    GPUCOMM_CHECK_ARG(got == 0 || recv != nullptr, name, "recv", "is null");
  } else {
    GPUCOMM_CHECK_ARG(impl_->gpu, name, "options.counts_on_device", "exists on GPU PEs only");
  }
  if (impl_->gpu && !o.counts_on_device) {
    GPUCOMM_CHECK_ARG(n <= detail::kInlineCountsMax, name, "counts",
                      "host-side counts are limited to teams of " + std::to_string(detail::kInlineCountsMax) +
                          " PEs; pass device arrays with options.counts_on_device");
    std::vector<uint64_t> all(4 * static_cast<size_t>(n));
    std::copy(send_counts, send_counts + n, all.begin());
    std::copy(send_displs, send_displs + n, all.begin() + n);
    std::copy(recv_counts, recv_counts + n, all.begin() + 2 * static_cast<ptrdiff_t>(n));
    std::copy(recv_displs, recv_displs + n, all.begin() + 3 * static_cast<ptrdiff_t>(n));
    impl_->run(ts, c, stream, name, all.data());
    return;
  }
  impl_->run(ts, c, stream, name);
}

void Collectives::check_device() {
  Impl& m = *impl_;
  if (m.diag_host && mem::host_load(&m.diag_host->state, std::memory_order_acquire) == CollDiag::kReady) {
    const CollDiag d = *m.diag_host;
    std::vector<int> members;
    for (auto& t : m.teams[static_cast<size_t>(std::clamp(d.team_slot, 0, kMaxTeams - 1))]) {
      if (t->h.team.size == d.team_size) members = t->team.members();
    }
    const std::string text = detail::describe(d, members);
    // This PE's kernel failed by itself (it trapped; its GPU is unusable, and peers may wait on the
    // device for its next push): the job fails now, so their waits leave naming this PE. A record of
    // a wait that left because the job failed elsewhere names that failure instead.
    if (d.kind != CollDiag::aborted && !m.rt.failed()) m.rt.bootstrap().abort(text);
    const Errc code = d.kind == CollDiag::timeout   ? Errc::timeout
                      : d.kind == CollDiag::aborted ? Errc::peer_failure
                                                    : Errc::invalid_argument;
    raise(code, "collective", text);
  }
  m.rt.check_device();
}

}  // namespace gpucomm::coll
