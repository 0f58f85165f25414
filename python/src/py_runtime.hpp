#pragma once
// What the files that add methods to gpucomm.Runtime share: the Runtime behind the Python object
// (bind_runtime.cpp defines the class) and a way to add methods to the class from another file.
#include <nanobind/nanobind.h>

#include <string>
#include <utility>

namespace gpucomm {
class Runtime;
}

// The Runtime of `self` (a gpucomm.Runtime); raises when it was closed.
gpucomm::Runtime& py_runtime(nanobind::handle self);

namespace gpucomm::py {

// Adds methods to an existing bound class: Methods(m.attr("Runtime")).def("name", f, args...).
// `f` takes the Python object (nb::handle) first.
class Methods {
 public:
  explicit Methods(nanobind::handle cls) : cls_(cls) {}
  template <class F, class... Extra>
  Methods& def(const char* name, F&& f, const Extra&... extra) {
    nanobind::cpp_function_def(std::forward<F>(f), nanobind::scope(cls_), nanobind::name(name), nanobind::is_method(),
                               extra...);
    return *this;
  }
  template <class F>
  Methods& prop(const char* name, F&& getter, const char* doc) {
    nanobind::object fget = nanobind::cpp_function(std::forward<F>(getter), nanobind::is_method());
    nanobind::object property = nanobind::module_::import_("builtins").attr("property");
    nanobind::setattr(cls_, name, property(fget, nanobind::none(), nanobind::none(), doc));
    return *this;
  }

 private:
  nanobind::handle cls_;
};

// __exit__ of an object whose close() is collective (Collectives, Messenger): an exception leaving
// the with-block fails the job at once through `runtime` (Runtime.abort, naming the exception),
// because a collective close would wait for PEs that may be waiting for this one; then `close`
// (which only releases once the runtime is closed).
template <class Close>
void exit_block(nanobind::handle runtime, nanobind::handle type, nanobind::handle value, Close&& close) {
  namespace nb = nanobind;
  if (!type.is_none() && !nb::cast<bool>(runtime.attr("closed"))) {
    const std::string why =
        nb::cast<std::string>(nb::str(type.attr("__name__"))) + ": " + nb::cast<std::string>(nb::str(value));
    runtime.attr("abort")(why);
  }
  close();
}

}  // namespace gpucomm::py
