// Names of the collectives' operations, types, reductions and algorithms, and their parsers.
#include <cstring>
#include <iterator>

#include "gpucomm/collectives/types.hpp"

namespace gpucomm::coll {

namespace {

constexpr const char* kOps[] = {"barrier",   "broadcast",      "reduce",   "allreduce",
                                "allgather", "reduce_scatter", "alltoall", "alltoallv"};
constexpr const char* kTypes[] = {"f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64", "i32", "i64", "u32", "u64"};
constexpr const char* kRedOps[] = {"sum", "prod", "min", "max", "band", "bor", "bxor"};
constexpr const char* kAlgorithms[] = {"auto", "oneshot",   "oneshot_ll",   "twoshot",
                                       "ring", "multiring", "hierarchical", "dissemination"};
static_assert(std::size(kOps) == static_cast<size_t>(CollOp::last) + 1);
static_assert(std::size(kTypes) == static_cast<size_t>(DataType::last) + 1);
static_assert(std::size(kRedOps) == static_cast<size_t>(RedOp::last) + 1);
static_assert(std::size(kAlgorithms) == static_cast<size_t>(Algorithm::last) + 1);

template <class E, size_t N>
const char* name_of(const char* const (&table)[N], E v) {
  const auto i = static_cast<size_t>(v);
  return i < N ? table[i] : "?";
}
template <class E, size_t N>
bool parse_in(const char* const (&table)[N], const char* text, E* out) {
  if (!text) return false;
  for (size_t i = 0; i < N; ++i) {
    if (std::strcmp(text, table[i]) == 0) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* op_name(CollOp op) {
  return name_of(kOps, op);
}
const char* type_name(DataType t) {
  return name_of(kTypes, t);
}
const char* redop_name(RedOp op) {
  return name_of(kRedOps, op);
}
const char* algorithm_name(Algorithm a) {
  return name_of(kAlgorithms, a);
}

bool parse_op(const char* text, CollOp* out) {
  if (text && std::strcmp(text, "reducescatter") == 0) return *out = CollOp::reduce_scatter, true;
  return parse_in(kOps, text, out);
}
bool parse_type(const char* text, DataType* out) {
  static constexpr struct {
    const char* name;
    DataType type;
  } kAliases[] = {{"float8_e4m3fn", DataType::f8e4m3},
                  {"float8_e5m2", DataType::f8e5m2},
                  {"e4m3", DataType::f8e4m3},
                  {"e5m2", DataType::f8e5m2},
                  {"float16", DataType::f16},
                  {"half", DataType::f16},
                  {"bfloat16", DataType::bf16},
                  {"float32", DataType::f32},
                  {"float", DataType::f32},
                  {"float64", DataType::f64},
                  {"double", DataType::f64},
                  {"int32", DataType::i32},
                  {"int64", DataType::i64},
                  {"uint32", DataType::u32},
                  {"uint64", DataType::u64}};
  if (parse_in(kTypes, text, out)) return true;
  if (!text) return false;
  for (const auto& a : kAliases) {
    if (std::strcmp(text, a.name) == 0) {
      *out = a.type;
      return true;
    }
  }
  return false;
}
bool parse_redop(const char* text, RedOp* out) {
  return parse_in(kRedOps, text, out);
}
bool parse_algorithm(const char* text, Algorithm* out) {
  if (text && std::strcmp(text, "automatic") == 0) return *out = Algorithm::automatic, true;
  return parse_in(kAlgorithms, text, out);
}

}  // namespace gpucomm::coll
