#pragma once
// The vocabulary of the collectives, shared by host and device code: operations, data types,
// reductions, algorithms, and the options of a host call. Plain C++ (docs/COLLECTIVES.md).
#include <cstddef>
#include <cstdint>

#include "gpucomm/base/hd.hpp"

namespace gpucomm::coll {

enum class CollOp : uint8_t {
  barrier,
  broadcast,
  reduce,
  allreduce,
  allgather,
  reduce_scatter,
  alltoall,
  alltoallv,
  last = alltoallv
};

// Storage types. FP8 are the OCP formats (__nv_fp8_e4m3, __nv_fp8_e5m2).
enum class DataType : uint8_t { f8e4m3, f8e5m2, f16, bf16, f32, f64, i32, i64, u32, u64, last = u64 };

// band/bor/bxor: bitwise, integer types only.
enum class RedOp : uint8_t { sum, prod, min, max, band, bor, bxor, last = bxor };

enum class Algorithm : uint8_t {
  automatic,      // the cost model's choice
  oneshot,        // push to every peer, reduce locally
  oneshot_ll,     // the same with the flag inside 8-byte data words
  twoshot,        // reduce-scatter, then all-gather
  ring,           // one ring
  multiring,      // one ring per channel, alternating directions
  hierarchical,   // node-local reduce-scatter, inter-node exchange per local rank, node-local all-gather
  dissemination,  // barrier in log2(n) rounds
  last = dissemination
};

GPUCOMM_HD constexpr size_t type_size(DataType t) {
  switch (t) {
    case DataType::f8e4m3:
    case DataType::f8e5m2:
      return 1;
    case DataType::f16:
    case DataType::bf16:
      return 2;
    case DataType::f32:
    case DataType::i32:
    case DataType::u32:
      return 4;
    case DataType::f64:
    case DataType::i64:
    case DataType::u64:
      return 8;
  }
  return 0;
}
GPUCOMM_HD constexpr bool is_integer(DataType t) {
  return t == DataType::i32 || t == DataType::i64 || t == DataType::u32 || t == DataType::u64;
}
GPUCOMM_HD constexpr bool is_bitwise(RedOp op) {
  return op == RedOp::band || op == RedOp::bor || op == RedOp::bxor;
}
// Operations that combine values (take a RedOp).
GPUCOMM_HD constexpr bool reduces(CollOp op) {
  return op == CollOp::reduce || op == CollOp::allreduce || op == CollOp::reduce_scatter;
}
// Operations with a root.
GPUCOMM_HD constexpr bool rooted(CollOp op) {
  return op == CollOp::broadcast || op == CollOp::reduce;
}
GPUCOMM_HD constexpr bool is_valid(CollOp v) {
  return static_cast<unsigned>(v) <= static_cast<unsigned>(CollOp::last);
}
GPUCOMM_HD constexpr bool is_valid(DataType v) {
  return static_cast<unsigned>(v) <= static_cast<unsigned>(DataType::last);
}
GPUCOMM_HD constexpr bool is_valid(RedOp v) {
  return static_cast<unsigned>(v) <= static_cast<unsigned>(RedOp::last);
}
GPUCOMM_HD constexpr bool is_valid(Algorithm v) {
  return static_cast<unsigned>(v) <= static_cast<unsigned>(Algorithm::last);
}

// Whether `a` implements `op` (automatic implements everything).
GPUCOMM_HD constexpr bool implements(Algorithm a, CollOp op) {
  switch (a) {
    case Algorithm::automatic:
    case Algorithm::oneshot:
      return true;
    case Algorithm::oneshot_ll:
      return op == CollOp::allreduce || op == CollOp::allgather || op == CollOp::reduce_scatter ||
             op == CollOp::barrier;
    case Algorithm::twoshot:
      return op == CollOp::allreduce || op == CollOp::reduce || op == CollOp::broadcast;
    case Algorithm::ring:
    case Algorithm::multiring:
      return op == CollOp::allreduce || op == CollOp::reduce || op == CollOp::broadcast || op == CollOp::allgather ||
             op == CollOp::reduce_scatter;
    case Algorithm::hierarchical:
      return op == CollOp::allreduce;
    case Algorithm::dissemination:
      return op == CollOp::barrier;
  }
  return false;
}

// Names: "allreduce", "bf16", "sum", "oneshot_ll", ...; "?" when out of range (src/collectives/names.cpp).
const char* op_name(CollOp op);
const char* type_name(DataType t);
const char* redop_name(RedOp op);
const char* algorithm_name(Algorithm a);
// Parsers for names (also "float32"/"float16"/"bfloat16"/"int32"... for types, "auto" for
// automatic): false when the text names nothing.
bool parse_op(const char* text, CollOp* out);
bool parse_type(const char* text, DataType* out);
bool parse_redop(const char* text, RedOp* out);
bool parse_algorithm(const char* text, Algorithm* out);

// Options of a host call.
struct CollOptions {
  Algorithm algorithm = Algorithm::automatic;
  int max_ctas = 0;               // 0: GPUCOMM_COLL_MAX_CTAS
  int channels = 0;               // > 0: exactly this many channels (CTAs), at most the workspace's; 0: the model's
  bool counts_on_device = false;  // alltoallv: the four count/displacement arrays are device memory
};

}  // namespace gpucomm::coll
