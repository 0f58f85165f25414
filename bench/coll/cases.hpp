#pragma once
// gpucomm-bench-coll: one benchmark case (operation, type, size, placement) with the nccl-tests
// conventions: `bytes` is the larger of the send and receive buffer, algbw = bytes / time,
// busbw = algbw * the operation's factor (allreduce 2(n-1)/n; allgather, reduce-scatter,
// alltoall (n-1)/n; broadcast, reduce 1).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpucomm/collectives/collectives.hpp"
#include "harness.hpp"

namespace gpucomm::bench {

struct Case {
  coll::CollOp op = coll::CollOp::allreduce;
  coll::DataType dt = coll::DataType::f32;
  coll::RedOp redop = coll::RedOp::sum;
  int root = 0;
  size_t count = 0;  // elements of the host call (per block for allgather, reduce-scatter, alltoall)
  bool in_place = false;
  int n = 1;     // team size
  int rank = 0;  // team rank
};

// The case for `bytes` (rounded down to whole elements and blocks).
Case make_case(coll::CollOp op, coll::DataType dt, coll::RedOp redop, size_t bytes, bool in_place, int n, int rank);
size_t case_bytes(const Case& c);    // nccl-tests' size column
size_t send_bytes(const Case& c);    // what the send buffer holds
size_t recv_bytes(const Case& c);    // what the receive buffer holds
double bus_factor(const Case& c);    // busbw / algbw
uint64_t plan_bytes(const Case& c);  // the bytes per PE the cost model sees

// Buffers of a case: `send` and `recv` point into the harness's two allocations, or both into
// `recv`'s for in-place calls.
struct CaseBuffers {
  void* send = nullptr;
  void* recv = nullptr;
};
CaseBuffers place(const Case& c, void* send_alloc, void* recv_alloc);

// The call of a case.
CollCall make_call(coll::Collectives& coll, const Team& team, const Case& c, const CaseBuffers& b,
                   const coll::CollOptions& o);

// Inputs whose results are exact in every type (reductions of ones; rank + 1 for the others;
// case_bytes of them, for the send buffer or, in place, the receive buffer), and the number of
// elements of the receive buffer (recv_bytes from CaseBuffers::recv) that differ from the expected.
std::vector<uint8_t> fill_input(const Case& c);
size_t count_wrong(const Case& c, const std::vector<uint8_t>& recv);

}  // namespace gpucomm::bench
