// gpucomm.Runtime for Python: identity, barriers and symmetric arrays (DLPack, device type CUDA on
// GPU PEs and CPU on host-memory PEs). The one-sided calls on them (put/get included) are added by
// bind_rma.cpp, bind_stream_ops.cpp and bind_teams.cpp. Blocking calls release the interpreter's
// lock and react to Ctrl-C (blocking.hpp); errors are gpucomm.Error classes (bind_errors.cpp);
// arrays keep their heap memory mapped after the runtime closes.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "blocking.hpp"
#include "gpucomm/gpucomm.hpp"

namespace nb = nanobind;

namespace {

using gpucomm::Runtime;
using gpucomm::python::blocking;

struct DtypeInfo {
  nb::dlpack::dtype dt;
  size_t bytes;
};

DtypeInfo parse_dtype(nb::handle obj) {
  std::string name;
  if (nb::isinstance<nb::str>(obj)) {
    name = nb::cast<std::string>(obj);
  } else if (nb::hasattr(obj, "__name__") && nb::isinstance<nb::type_object>(obj)) {
    name = nb::cast<std::string>(obj.attr("__name__"));
  } else {
    name = nb::cast<std::string>(nb::str(obj));
  }
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  using C = nb::dlpack::dtype_code;
  static const std::map<std::string, std::pair<C, int>> table = {
      {"float16", {C::Float, 16}},   {"float32", {C::Float, 32}}, {"float64", {C::Float, 64}},
      {"bfloat16", {C::Bfloat, 16}}, {"int8", {C::Int, 8}},       {"int16", {C::Int, 16}},
      {"int32", {C::Int, 32}},       {"int64", {C::Int, 64}},     {"uint8", {C::UInt, 8}},
      {"uint16", {C::UInt, 16}},     {"uint32", {C::UInt, 32}},   {"uint64", {C::UInt, 64}},
      {"bool", {C::Bool, 8}},        {"half", {C::Float, 16}},    {"float", {C::Float, 32}},
      {"double", {C::Float, 64}}};
  auto it = table.find(name);
  if (it == table.end()) gpucomm::raise_arg("Runtime.empty", "dtype", "'" + name + "' is not a supported dtype");
  nb::dlpack::dtype dt{static_cast<uint8_t>(it->second.first), static_cast<uint8_t>(it->second.second), 1};
  return {dt, static_cast<size_t>(it->second.second / 8)};
}

std::vector<size_t> to_shape(nb::handle shape) {
  std::vector<int64_t> dims;
  if (nb::isinstance<nb::int_>(shape)) {
    dims.push_back(nb::cast<int64_t>(shape));
  } else {
    dims = nb::cast<std::vector<int64_t>>(shape);
  }
  std::vector<size_t> out;
  for (int64_t d : dims) {
    if (d < 0) gpucomm::raise_arg("Runtime.empty", "shape", "has a negative extent " + std::to_string(d));
    out.push_back(static_cast<size_t>(d));
  }
  return out;
}

// Bytes of an array of `shape` with elements of `elem` bytes; a product past size_t is refused.
size_t array_bytes(const std::vector<size_t>& shape, size_t elem) {
  size_t total = elem;
  for (size_t s : shape) {
    if (__builtin_mul_overflow(total, s, &total))
      gpucomm::raise_arg("Runtime.empty", "shape", "has more bytes than a size_t can count");
  }
  return total;
}

using AnyArray = nb::ndarray<nb::c_contig>;

size_t nbytes(const AnyArray& a) {
  return a.nbytes();
}

class PyRuntime {
 public:
  explicit PyRuntime(const std::string& device, size_t heap_bytes) {
    gpucomm::RuntimeOptions o;
    o.device = device;
    o.heap_bytes = heap_bytes;
    rt_ = blocking([&] { return std::make_unique<Runtime>(o); });
    current_ = this;
  }
  ~PyRuntime() {
    if (current_ == this) current_ = nullptr;
  }
  static PyRuntime* current() {
    if (!current_) {
      gpucomm::raise(gpucomm::Errc::invalid_argument, "Runtime.current",
                     "no open Runtime (create one: `with gpucomm.Runtime() as rt:`)");
    }
    return current_;
  }
  static PyRuntime* open_runtime() { return current_; }
  Runtime& rt() {
    if (!rt_) {
      if (!aborted_.empty())
        gpucomm::raise(gpucomm::Errc::aborted, "Runtime", "this PE's runtime was aborted: " + aborted_);
      gpucomm::raise(gpucomm::Errc::invalid_argument, "Runtime", "the Runtime is closed");
    }
    return *rt_;
  }
  // Collective: finalizes the runtime (or aborts the job when this PE failed on its own). Arrays
  // keep their memory, no longer symmetric.
  void close() {
    std::unique_ptr<Runtime> r = std::move(rt_);
    if (current_ == this) current_ = nullptr;
    if (r) blocking([&] { r.reset(); });
  }
  // Fails the whole job now (not collective) and closes.
  void abort(const std::string& reason) {
    std::unique_ptr<Runtime> r = std::move(rt_);
    if (current_ == this) current_ = nullptr;
    if (!r) return;
    aborted_ = reason;
    blocking([&] {
      r->abort(reason);
      r.reset();
    });
  }
  bool closed() const { return !rt_; }

  nb::ndarray<nb::array_api> alloc(const std::vector<size_t>& shape, nb::handle dtype, bool zero) {
    DtypeInfo d = parse_dtype(dtype);
    const size_t bytes = array_bytes(shape, d.bytes);
    Runtime& r = rt();
    void* p = blocking([&] { return zero ? r.calloc(bytes, 1) : r.malloc(bytes); });
    bool gpu = r.pe_kind() == gpucomm::PeKind::gpu;
    // The array (and every view of it: numpy, torch) owns a lease on the heap's memory.
    auto* lease = new std::shared_ptr<const void>(r.heap_lease());
    nb::capsule owner(lease, [](void* l) noexcept { delete static_cast<std::shared_ptr<const void>*>(l); });
    return nb::ndarray<nb::array_api>(p, shape.size(), shape.data(), owner, nullptr, d.dt,
                                      gpu ? nb::device::cuda::value : nb::device::cpu::value, gpu ? r.device_id() : 0);
  }

  void* sym_address(const AnyArray& a, const char* call, const char* arg) {
    Runtime& r = rt();
    if (!r.heap().contains(a.data(), nbytes(a)))
      gpucomm::raise_arg(call, arg, "is not a symmetric array (allocate it with Runtime.empty/zeros)");
    return a.data();
  }

 private:
  std::unique_ptr<Runtime> rt_;
  std::string aborted_;
  static inline PyRuntime* current_ = nullptr;
};

// At interpreter exit: a Runtime still open is closed, or, when the program ends with an uncaught
// exception (sys.last_value is set), the job is aborted with it, so the others do not wait.
void close_at_exit() {
  PyRuntime* open = PyRuntime::open_runtime();
  if (!open) return;
  nb::module_ sys = nb::module_::import_("sys");
  nb::object last = nb::none();
  for (const char* name : {"last_exc", "last_value"})
    if (last.is_none() && nb::hasattr(sys, name)) last = sys.attr(name);
  try {
    if (last.is_none()) {
      open->close();
    } else {
      open->abort("uncaught " + nb::cast<std::string>(nb::str(last.type().attr("__name__"))) + ": " +
                  nb::cast<std::string>(nb::str(last)));
    }
  } catch (const std::exception& e) {
    // The process is ending: say what failed, nobody is left to raise it to.
    PySys_WriteStderr("gpucomm: closing the runtime at exit: %s\n", e.what());
  }
}

}  // namespace

// The Runtime of a gpucomm.Runtime object, for the methods other files add (py_runtime.hpp).
gpucomm::Runtime& py_runtime(nb::handle self) {
  return nb::cast<PyRuntime&>(self).rt();
}

void bind_runtime(nb::module_& m) {
  nb::class_<PyRuntime>(m, "Runtime",
                        "A gpucomm PE (collective: every process of the job creates one). Use as a context manager; "
                        "leaving it finalizes the job, or aborts it when an exception leaves the block.")
      .def(nb::init<const std::string&, size_t>(), nb::arg("device") = "", nb::arg("heap_bytes") = 0,
           "device: '', 'auto', 'gpu' or 'host' ('' reads GPUCOMM_DEVICE); heap_bytes: 0 reads GPUCOMM_HEAP_SIZE")
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__",
          [](PyRuntime& self, nb::handle type, nb::handle value, nb::handle) {
            // An exception leaving the block would leave the others waiting in finalize: abort.
            if (type.is_none()) return self.close();
            self.abort(nb::cast<std::string>(nb::str(type.attr("__name__"))) + ": " +
                       nb::cast<std::string>(nb::str(value)));
          },
          nb::arg().none(), nb::arg().none(), nb::arg().none())
      .def("close", &PyRuntime::close,
           "Finalize (collective; an abort instead when one of this PE's waits failed). Arrays keep their memory.")
      .def("abort", &PyRuntime::abort, nb::arg("reason") = "aborted by the program",
           "Fail the whole job now (not collective): every PE's waits raise PeerFailureError naming this PE, and "
           "this runtime closes.")
      .def_prop_ro("closed", &PyRuntime::closed)
      .def_static("current", &PyRuntime::current, nb::rv_policy::reference, "The most recently opened Runtime.")
      .def_prop_ro("rank", [](PyRuntime& s) { return s.rt().rank(); })
      .def_prop_ro("size", [](PyRuntime& s) { return s.rt().size(); })
      .def_prop_ro("local_rank", [](PyRuntime& s) { return s.rt().local_rank(); })
      .def_prop_ro("local_size", [](PyRuntime& s) { return s.rt().local_size(); })
      .def_prop_ro("device_id", [](PyRuntime& s) { return s.rt().device_id(); })
      .def_prop_ro("pe_kind", [](PyRuntime& s) { return s.rt().pe_kind() == gpucomm::PeKind::gpu ? "gpu" : "host"; })
      .def_prop_ro(
          "failed", [](PyRuntime& s) { return s.rt().failed(); }, "True once the job failed.")
      .def("describe", [](PyRuntime& s) { return s.rt().describe(); })
      .def(
          "barrier_all",
          [](PyRuntime& s) {
            Runtime& r = s.rt();
            blocking([&] { r.barrier_all(); });
          },
          "Quiet, then wait for every PE.")
      .def("quiet",
           [](PyRuntime& s) {
             Runtime& r = s.rt();
             blocking([&] { r.quiet(); });
           })
      .def(
          "empty",
          [](PyRuntime& s, nb::handle shape, nb::handle dtype) { return s.alloc(to_shape(shape), dtype, false); },
          nb::arg("shape"), nb::arg("dtype") = "float32",
          "Collective: a symmetric array (same shape and dtype on every PE), through DLPack.")
      .def(
          "zeros",
          [](PyRuntime& s, nb::handle shape, nb::handle dtype) { return s.alloc(to_shape(shape), dtype, true); },
          nb::arg("shape"), nb::arg("dtype") = "float32", "Collective: like empty, filled with zeros.")
      .def(
          "malloc",
          [](PyRuntime& s, nb::handle shape, nb::handle dtype) { return s.alloc(to_shape(shape), dtype, false); },
          nb::arg("shape"), nb::arg("dtype") = "uint8",
          "Collective: same as empty (default dtype uint8, shape in elements).")
      .def(
          "free",
          [](PyRuntime& s, const AnyArray& a) {
            void* p = s.sym_address(a, "Runtime.free", "array");
            Runtime& r = s.rt();
            blocking([&] { r.free(p); });
          },
          nb::arg("array"), "Collective: returns a symmetric array's memory.")
      .def(
          "peer_address",
          [](PyRuntime& s, const AnyArray& a, int pe) {
            return reinterpret_cast<uintptr_t>(s.rt().ptr(s.sym_address(a, "peer_address", "array"), pe));
          },
          nb::arg("array"), nb::arg("pe"), "Address of PE pe's copy (0 when not directly reachable).");
  m.def("_close_at_exit", &close_at_exit);
  nb::module_::import_("atexit").attr("register")(m.attr("_close_at_exit"));
}
