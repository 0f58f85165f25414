// gpucomm::Error -> the gpucomm.Error hierarchy of python/gpucomm/errors.py, for every binding.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <exception>

#include "gpucomm/core/error.hpp"

namespace nb = nanobind;

namespace {

const char* code_name(gpucomm::Errc c) {
  using gpucomm::Errc;
  switch (c) {
    case Errc::invalid_argument:
      return "invalid_argument";
    case Errc::timeout:
      return "timeout";
    case Errc::peer_failure:
      return "peer_failure";
    case Errc::protocol:
      return "protocol";
    case Errc::system:
      return "system";
    case Errc::cuda:
      return "cuda";
    case Errc::unsupported:
      return "unsupported";
    case Errc::out_of_memory:
      return "out_of_memory";
    case Errc::internal:
      return "internal";
    case Errc::aborted:
      return "aborted";
  }
  return "internal";
}

// gpucomm.errors.class_for, kept for the process's lifetime (the translator may run at exit).
PyObject* g_class_for = nullptr;

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const gpucomm::Error& e) {
    // A wait that a signal handler interrupted: the handler's exception (KeyboardInterrupt) is set.
    if (e.code() == gpucomm::Errc::aborted && PyErr_Occurred()) return;
    nb::object cls = nb::borrow(g_class_for)(code_name(e.code()));
    nb::object exc = cls(e.what());
    exc.attr("code") = code_name(e.code());
    exc.attr("call") = e.call();
    exc.attr("detail") = e.detail();
    exc.attr("rank") = e.rank();
    PyErr_SetObject(cls.ptr(), exc.ptr());
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  nb::module_ errors = nb::module_::import_("gpucomm.errors");
  g_class_for = nb::object(errors.attr("class_for")).release().ptr();
  for (const char* name : {"Error", "TimeoutError", "PeerFailureError", "AbortError", "InvalidArgumentError"})
    m.attr(name) = errors.attr(name);
  nb::register_exception_translator(&translate);
}
