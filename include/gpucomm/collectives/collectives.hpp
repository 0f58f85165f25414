#pragma once
// Collectives from the host (docs/COLLECTIVES.md). On GPU PEs every call validates its
// arguments, picks an algorithm and enqueues one kernel on `stream`: stream-ordered, no host
// synchronization, capturable into CUDA graphs. On host-memory PEs the same algorithms run on the
// calling thread (the stream is ignored). `team` defaults to the world.
//
//   gpucomm::Runtime rt;
//   gpucomm::coll::Collectives coll(rt);   // collective over the world
//   coll.allreduce(send, recv, n, coll::DataType::f32, coll::RedOp::sum, rt.world(), stream);
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gpucomm/collectives/cost_model.hpp"
#include "gpucomm/collectives/layout.hpp"
#include "gpucomm/collectives/types.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::coll {

// What a call would run (Collectives::plan).
struct Choice {
  Algorithm algorithm = Algorithm::oneshot;
  uint32_t channels = 1;
  std::string why;  // "model", "option", "GPUCOMM_COLL_ALGO", plus the estimates at debug level
};

class Collectives {
 public:
  // Collective over the world: allocates the pool of team workspaces in the symmetric heap
  // (GPUCOMM_COLL_POOL) and reads the GPUCOMM_COLL_* settings.
  explicit Collectives(Runtime& rt);
  // Collective over the world (frees the pool); GPU PEs wait for their collectives first. Once the
  // job failed, while an exception unwinds, or on a GPU whose kernel failed, it frees nothing and
  // waits for nobody (the runtime's finalize or abort releases the heap).
  ~Collectives();
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  Runtime& runtime() const;
  // Collective over `team`: carves the team's workspace out of the pool (the first collective on a
  // team does it too; prepare before capturing a graph, since preparing talks to the other PEs).
  void prepare(const Team& team);
  // The team as kernels see it (prepares it).
  CollHandle handle(const Team& team);
  // The team summary the cost model uses (prepares it).
  TopoSummary topology(const Team& team);

  void barrier(const Team& team, Stream stream = nullptr, const CollOptions& o = {});
  void broadcast(const void* send, void* recv, size_t count, DataType dt, int root, const Team& team,
                 Stream stream = nullptr, const CollOptions& o = {});
  void reduce(const void* send, void* recv, size_t count, DataType dt, RedOp op, int root, const Team& team,
              Stream stream = nullptr, const CollOptions& o = {});
  void allreduce(const void* send, void* recv, size_t count, DataType dt, RedOp op, const Team& team,
                 Stream stream = nullptr, const CollOptions& o = {});
  void allgather(const void* send, void* recv, size_t count, DataType dt, const Team& team, Stream stream = nullptr,
                 const CollOptions& o = {});
  void reduce_scatter(const void* send, void* recv, size_t count, DataType dt, RedOp op, const Team& team,
                      Stream stream = nullptr, const CollOptions& o = {});
  void alltoall(const void* send, void* recv, size_t count, DataType dt, const Team& team, Stream stream = nullptr,
                const CollOptions& o = {});
  // Counts and displacements in elements, one per team rank: host arrays, or device arrays with
  // o.counts_on_device (GPU PEs; read by the kernel when it runs).
  void alltoallv(const void* send, const uint64_t* send_counts, const uint64_t* send_displs, void* recv,
                 const uint64_t* recv_counts, const uint64_t* recv_displs, DataType dt, const Team& team,
                 Stream stream = nullptr, const CollOptions& o = {});

  // What a call of `op` moving `bytes` per PE would run on `team` (prepares it).
  Choice plan(CollOp op, DataType dt, uint64_t bytes, const Team& team, const CollOptions& o = {});

  // GPU PEs: raises the failure a collective's kernel recorded (team, operation, sequence number,
  // PEs that had not arrived, mismatched arguments), else what Runtime::check_device() raises.
  void check_device();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpucomm::coll
