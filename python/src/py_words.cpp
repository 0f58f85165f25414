#include "py_words.hpp"

#include <nanobind/stl/string.h>

#include <utility>

namespace gpucomm::py {

void raise_error(PyObject* type, const std::string& msg) {
  PyErr_SetString(type, msg.c_str());
  throw nb::python_error();
}

Cmp cmp_arg(nb::handle h, const char* call) {
  if (nb::isinstance<Cmp>(h)) return nb::cast<Cmp>(h);
  if (nb::isinstance<nb::str>(h)) {
    static constexpr std::pair<const char*, Cmp> kNames[] = {
        {"eq", Cmp::eq}, {"==", Cmp::eq}, {"ne", Cmp::ne}, {"!=", Cmp::ne}, {"gt", Cmp::gt}, {">", Cmp::gt},
        {"ge", Cmp::ge}, {">=", Cmp::ge}, {"lt", Cmp::lt}, {"<", Cmp::lt},  {"le", Cmp::le}, {"<=", Cmp::le}};
    const std::string s = nb::cast<std::string>(h);
    for (const auto& [name, c] : kNames)
      if (s == name) return c;
    raise_error(PyExc_ValueError, std::string("gpucomm: ") + call + ": cmp '" + s +
                                      "' is not one of eq, ne, gt, ge, lt, le (or ==, !=, >, >=, <, <=)");
  }
  raise_error(PyExc_TypeError, std::string("gpucomm: ") + call + ": cmp must be a gpucomm.Cmp or its name");
}

SignalOp signal_op_arg(nb::handle h, const char* call) {
  if (nb::isinstance<SignalOp>(h)) return nb::cast<SignalOp>(h);
  if (nb::isinstance<nb::str>(h)) {
    const std::string s = nb::cast<std::string>(h);
    if (s == "set") return SignalOp::set;
    if (s == "add") return SignalOp::add;
    raise_error(PyExc_ValueError, std::string("gpucomm: ") + call + ": op '" + s + "' is not 'set' or 'add'");
  }
  raise_error(PyExc_TypeError, std::string("gpucomm: ") + call + ": op must be a gpucomm.SignalOp or its name");
}

void require_one_element(const ArrayRef& a, const char* call, const char* arg) {
  if (a.count != 1) {
    raise_error(PyExc_ValueError, std::string("gpucomm: ") + call + ": " + arg +
                                      " must be one element (a one-element array, or a view such as a[k:k+1]), got " +
                                      std::to_string(a.count) + " elements");
  }
}

uint64_t* signal_word(const ArrayRef& a, const char* call) {
  require_one_element(a, call, "sig");
  if (a.dtype != nb::dtype<uint64_t>())
    raise_error(PyExc_TypeError, std::string("gpucomm: ") + call + ": sig must be uint64, got " + dtype_name(a.dtype));
  return static_cast<uint64_t*>(a.data);
}

}  // namespace gpucomm::py
