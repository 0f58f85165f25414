#pragma once
// From a run-time DataType to the templates of algorithms.hpp: f(TypeTag<DT>{}). (The reduction
// stays a run-time value: one instantiation per type serves all of them.)
#include "gpucomm/collectives/algorithms.hpp"

namespace gpucomm::coll {

template <DataType DT>
struct TypeTag {
  static constexpr DataType value = DT;
};

template <class F>
GPUCOMM_COLL_FN void with_type(DataType dt, F&& f) {
  switch (dt) {
    case DataType::f8e4m3:
      return f(TypeTag<DataType::f8e4m3>{});
    case DataType::f8e5m2:
      return f(TypeTag<DataType::f8e5m2>{});
    case DataType::f16:
      return f(TypeTag<DataType::f16>{});
    case DataType::bf16:
      return f(TypeTag<DataType::bf16>{});
    case DataType::f32:
      return f(TypeTag<DataType::f32>{});
    case DataType::f64:
      return f(TypeTag<DataType::f64>{});
    case DataType::i32:
      return f(TypeTag<DataType::i32>{});
    case DataType::i64:
      return f(TypeTag<DataType::i64>{});
    case DataType::u32:
      return f(TypeTag<DataType::u32>{});
    case DataType::u64:
      return f(TypeTag<DataType::u64>{});
  }
}

// An unsigned type of `bytes` bytes, for operations that only move elements.
template <size_t bytes>
struct Bits;
template <>
struct Bits<1> {
  using type = uint8_t;
};
template <>
struct Bits<2> {
  using type = uint16_t;
};
template <>
struct Bits<4> {
  using type = uint32_t;
};
template <>
struct Bits<8> {
  using type = uint64_t;
};

// This channel's part of any call (the host runs every channel with it).
template <class B>
GPUCOMM_COLL_FN void run_call(B& b, const Call& call, const CollHandle& h) {
  if (reduces(call.op)) {
    with_type(call.dt, [&](auto t) { run_reduction<decltype(t)::value>(b, call, h); });
    return;
  }
  switch (type_size(call.dt)) {
    case 1:
      return run_movement<uint8_t>(b, call);
    case 2:
      return run_movement<uint16_t>(b, call);
    case 4:
      return run_movement<uint32_t>(b, call);
    default:
      return run_movement<uint64_t>(b, call);
  }
}

}  // namespace gpucomm::coll
