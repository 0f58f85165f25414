#include "cases.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "gpucomm/collectives/dispatch.hpp"
#include "gpucomm/collectives/numeric.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::bench {

using coll::CollOp;
using coll::DataType;
using coll::RedOp;

namespace {

// Operations whose buffers hold one block per team rank on one side.
bool blocked(CollOp op) {
  return op == CollOp::allgather || op == CollOp::reduce_scatter || op == CollOp::alltoall;
}

void encode(DataType dt, double v, uint8_t* out) {
  coll::with_type(dt, [&](auto t) {
    using N = coll::Num<decltype(t)::value>;
    auto s = N::from_acc(static_cast<typename N::A>(v));
    std::memcpy(out, &s, sizeof s);
  });
}

double decode(DataType dt, const uint8_t* in) {
  double v = 0;
  coll::with_type(dt, [&](auto t) {
    using N = coll::Num<decltype(t)::value>;
    typename N::S s;
    std::memcpy(&s, in, sizeof s);
    v = static_cast<double>(N::to_acc(s));
  });
  return v;
}

// The reduction over n PEs of inputs that are all 1.
double reduced_ones(RedOp op, int n) {
  switch (op) {
    case RedOp::sum:
      return n;
    case RedOp::bxor:
      return n & 1;
    default:
      return 1;  // prod, min, max, band, bor
  }
}

}  // namespace

Case make_case(CollOp op, DataType dt, RedOp redop, size_t bytes, bool in_place, int n, int rank) {
  Case c{op, dt, redop, 0, 0, in_place, n, rank};
  size_t elems = bytes / coll::type_size(dt);
  c.count = blocked(op) ? elems / static_cast<size_t>(n) : elems;
  if (op == CollOp::barrier) c.count = 0;
  return c;
}

size_t send_bytes(const Case& c) {
  size_t b = c.count * coll::type_size(c.dt);
  return c.op == CollOp::reduce_scatter || c.op == CollOp::alltoall ? b * static_cast<size_t>(c.n) : b;
}
size_t recv_bytes(const Case& c) {
  size_t b = c.count * coll::type_size(c.dt);
  return c.op == CollOp::allgather || c.op == CollOp::alltoall ? b * static_cast<size_t>(c.n) : b;
}
size_t case_bytes(const Case& c) {
  return std::max(send_bytes(c), recv_bytes(c));
}
uint64_t plan_bytes(const Case& c) {
  return c.count * coll::type_size(c.dt);
}

double bus_factor(const Case& c) {
  const double n = c.n;
  switch (c.op) {
    case CollOp::allreduce:
      return 2.0 * (n - 1) / n;
    case CollOp::allgather:
    case CollOp::reduce_scatter:
    case CollOp::alltoall:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

CaseBuffers place(const Case& c, void* send_alloc, void* recv_alloc) {
  auto* recv = static_cast<uint8_t*>(recv_alloc);
  const size_t block = c.count * coll::type_size(c.dt) * static_cast<size_t>(c.rank);
  if (!c.in_place) return {send_alloc, recv_alloc};
  switch (c.op) {
    case CollOp::allgather:
      return {recv + block, recv};  // NCCL's in-place allgather: send is this rank's block of recv
    case CollOp::reduce_scatter:
      return {recv, recv + block};  // in-place reduce-scatter: recv is this rank's block of send
    default:
      return {recv, recv};
  }
}

CollCall make_call(coll::Collectives& coll, const Team& team, const Case& c, const CaseBuffers& b,
                   const coll::CollOptions& o) {
  const void* s = b.send;
  void* r = b.recv;
  switch (c.op) {
    case CollOp::barrier:
      return [&coll, &team, o](Stream st) { coll.barrier(team, st, o); };
    case CollOp::broadcast:
      return [&coll, &team, c, s, r, o](Stream st) { coll.broadcast(s, r, c.count, c.dt, c.root, team, st, o); };
    case CollOp::reduce:
      return [&coll, &team, c, s, r, o](Stream st) { coll.reduce(s, r, c.count, c.dt, c.redop, c.root, team, st, o); };
    case CollOp::allreduce:
      return [&coll, &team, c, s, r, o](Stream st) { coll.allreduce(s, r, c.count, c.dt, c.redop, team, st, o); };
    case CollOp::allgather:
      return [&coll, &team, c, s, r, o](Stream st) { coll.allgather(s, r, c.count, c.dt, team, st, o); };
    case CollOp::reduce_scatter:
      return [&coll, &team, c, s, r, o](Stream st) { coll.reduce_scatter(s, r, c.count, c.dt, c.redop, team, st, o); };
    case CollOp::alltoall:
      return [&coll, &team, c, s, r, o](Stream st) { coll.alltoall(s, r, c.count, c.dt, team, st, o); };
    case CollOp::alltoallv:
      break;
  }
  raise_arg("gpucomm-bench-coll", "--ops", std::string(coll::op_name(c.op)) + " is not benchmarked");
}

std::vector<uint8_t> fill_input(const Case& c) {
  const size_t ts = coll::type_size(c.dt);
  std::vector<uint8_t> out(case_bytes(c));
  const double v = coll::reduces(c.op) ? 1.0 : c.rank + 1.0;
  for (size_t i = 0; i + ts <= out.size(); i += ts) encode(c.dt, v, out.data() + i);
  return out;
}

size_t count_wrong(const Case& c, const std::vector<uint8_t>& recv) {
  const size_t ts = coll::type_size(c.dt);
  const size_t block = c.count;
  size_t wrong = 0;
  if (c.op == CollOp::barrier || (c.op == CollOp::reduce && c.rank != c.root)) return 0;
  for (size_t i = 0; i < recv_bytes(c) / ts; ++i) {
    double want = 0;
    switch (c.op) {
      case CollOp::allgather:
      case CollOp::alltoall: {
        const size_t from = i / block;  // block j came from team rank j
        want = static_cast<double>(from) + 1.0;
        break;
      }
      case CollOp::broadcast:
        want = c.root + 1.0;
        break;
      default:
        want = reduced_ones(c.redop, c.n);
    }
    if (decode(c.dt, recv.data() + i * ts) != want) ++wrong;
  }
  return wrong;
}

}  // namespace gpucomm::bench
