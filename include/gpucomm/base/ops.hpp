#pragma once
// The operation codes every layer shares: comparisons of waits, signal operations and atomic
// operations. One enum each, one operand order everywhere:
//   atomic(op, operand, compare): `operand` is the value applied (added, stored, swapped in, the
//   desired value of compare_swap); `compare` is only read by compare_swap (the expected value).
// Plain C++ usable from host and device code (the helpers are constexpr).
#include <cstdint>

#include "gpucomm/base/hd.hpp"

namespace gpucomm {

enum class Cmp : uint32_t { eq, ne, gt, ge, lt, le, last = le };
enum class SignalOp : uint32_t { set, add, last = add };
// `set` returns the old value too (it is an exchange wherever a result is produced).
enum class AtomicOp : uint8_t {
  fetch,
  set,
  fetch_add,
  swap,
  compare_swap,
  fetch_and,
  fetch_or,
  fetch_xor,
  last = fetch_xor
};

// Whether `seen cmp value` holds.
template <class T>
GPUCOMM_HD constexpr bool compare(T seen, Cmp cmp, T value) {
  switch (cmp) {
    case Cmp::eq:
      return seen == value;
    case Cmp::ne:
      return seen != value;
    case Cmp::gt:
      return seen > value;
    case Cmp::ge:
      return seen >= value;
    case Cmp::lt:
      return seen < value;
    case Cmp::le:
      return seen <= value;
  }
  return false;
}

// Range checks for values that come from outside the type system (casts, other processes).
GPUCOMM_HD constexpr bool is_valid(Cmp c) {
  return static_cast<uint32_t>(c) <= static_cast<uint32_t>(Cmp::last);
}
GPUCOMM_HD constexpr bool is_valid(SignalOp s) {
  return static_cast<uint32_t>(s) <= static_cast<uint32_t>(SignalOp::last);
}
GPUCOMM_HD constexpr bool is_valid(AtomicOp a) {
  return static_cast<uint32_t>(a) <= static_cast<uint32_t>(AtomicOp::last);
}

// Names for diagnostics (src/base/names.cpp): "==", "set", "fetch_add", ...; "?" when invalid.
const char* cmp_name(Cmp c);
const char* signal_op_name(SignalOp s);
const char* atomic_op_name(AtomicOp a);

}  // namespace gpucomm
