#pragma once
// Scalar arguments of the one-sided bindings: the word an operation acts on (one element of a
// symmetric array, dispatched on its element type), values converted to the word's type, and the
// Cmp / SignalOp operation codes (enum values or their names).
#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "gpucomm/base/ops.hpp"
#include "py_arrays.hpp"

namespace gpucomm::py {

[[noreturn]] void raise_error(PyObject* type, const std::string& msg);
Cmp cmp_arg(nb::handle h, const char* call);
SignalOp signal_op_arg(nb::handle h, const char* call);
// The one element of `a`; raises ValueError when `a` holds another count.
void require_one_element(const ArrayRef& a, const char* call, const char* arg);
// The uint64 signal word of `a` (one element of dtype uint64).
uint64_t* signal_word(const ArrayRef& a, const char* call);
// The name of C++ type T in messages.
template <class T>
constexpr const char* type_label() {
  if constexpr (std::is_same_v<T, int8_t>) return "int8";
  if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
  if constexpr (std::is_same_v<T, int16_t>) return "int16";
  if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
  if constexpr (std::is_same_v<T, int32_t>) return "int32";
  if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  if constexpr (std::is_same_v<T, int64_t>) return "int64";
  if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
  return "?";
}

// An integer value for a word of type T: TypeError when `v` is no integer, OverflowError when it
// does not fit T.
template <class T>
T value_arg(nb::handle v, const char* call, const char* arg) {
  if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr()))
    raise_error(PyExc_TypeError, std::string("gpucomm: ") + call + ": " + arg + " must be an integer");
  nb::object index = nb::steal(PyNumber_Index(v.ptr()));
  if (!index.is_valid()) throw nb::python_error();
  T out;
  if (!nb::try_cast<T>(index, out, false)) {
    raise_error(PyExc_OverflowError, std::string("gpucomm: ") + call + ": " + arg + " " +
                                         nb::cast<std::string>(nb::str(index)) + " does not fit the word's type " +
                                         type_label<T>());
  }
  return out;
}

// A value for an element of type T: an integer as value_arg, or any real number for float types.
template <class T>
T scalar_arg(nb::handle v, const char* call, const char* arg) {
  if constexpr (std::is_floating_point_v<T>) {
    double d = PyFloat_AsDouble(v.ptr());
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      raise_error(PyExc_TypeError, std::string("gpucomm: ") + call + ": " + arg + " must be a number");
    }
    return static_cast<T>(d);
  } else {
    return value_arg<T>(v, call, arg);
  }
}

// Calls f(T*) with the one element of `a` for the word types of waits and atomics (int32,
// uint32, int64, uint64); TypeError for others.
template <class F>
nb::object with_word(const ArrayRef& a, const char* call, const char* arg, F&& f) {
  using C = nb::dlpack::dtype_code;
  require_one_element(a, call, arg);
  const auto code = static_cast<C>(a.dtype.code);
  const int bits = a.dtype.bits;
  if (code == C::Int && bits == 32) return f(static_cast<int32_t*>(a.data));
  if (code == C::UInt && bits == 32) return f(static_cast<uint32_t*>(a.data));
  if (code == C::Int && bits == 64) return f(static_cast<int64_t*>(a.data));
  if (code == C::UInt && bits == 64) return f(static_cast<uint64_t*>(a.data));
  raise_error(PyExc_TypeError, std::string("gpucomm: ") + call + ": " + arg +
                                   " must be an int32, uint32, int64 or uint64 element, got " + dtype_name(a.dtype));
}

// Like with_word, for p and g: every integer width, float32 and float64.
template <class F>
nb::object with_scalar(const ArrayRef& a, const char* call, const char* arg, F&& f) {
  using C = nb::dlpack::dtype_code;
  require_one_element(a, call, arg);
  const auto code = static_cast<C>(a.dtype.code);
  const int bits = a.dtype.bits;
  if (code == C::Int && bits == 8) return f(static_cast<int8_t*>(a.data));
  if (code == C::UInt && bits == 8) return f(static_cast<uint8_t*>(a.data));
  if (code == C::Int && bits == 16) return f(static_cast<int16_t*>(a.data));
  if (code == C::UInt && bits == 16) return f(static_cast<uint16_t*>(a.data));
  if (code == C::Float && bits == 32) return f(static_cast<float*>(a.data));
  if (code == C::Float && bits == 64) return f(static_cast<double*>(a.data));
  if ((code == C::Int || code == C::UInt) && (bits == 32 || bits == 64)) return with_word(a, call, arg, f);
  raise_error(PyExc_TypeError, std::string("gpucomm: ") + call + ": " + arg +
                                   " must be an integer, float32 or float64 element (put/get move other types), got " +
                                   dtype_name(a.dtype));
}

}  // namespace gpucomm::py
