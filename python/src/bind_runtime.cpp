// gpucomm.Runtime for Python: identity, barriers and symmetric arrays (DLPack, device type CUDA on
// GPU PEs and CPU on host-memory PEs). The one-sided calls on them (put/get included) are added by
// bind_rma.cpp, bind_stream_ops.cpp and bind_teams.cpp.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/gpucomm.hpp"

namespace nb = nanobind;

namespace {

using gpucomm::Runtime;

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
  if (it == table.end()) throw nb::value_error(("gpucomm: unsupported dtype '" + name + "'").c_str());
  nb::dlpack::dtype dt{static_cast<uint8_t>(it->second.first), static_cast<uint8_t>(it->second.second), 1};
  return {dt, static_cast<size_t>(it->second.second / 8)};
}

std::vector<size_t> to_shape(nb::handle shape) {
  if (nb::isinstance<nb::int_>(shape)) return {nb::cast<size_t>(shape)};
  return nb::cast<std::vector<size_t>>(shape);
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
    rt_ = std::make_unique<Runtime>(o);
    current_ = this;
  }
  ~PyRuntime() {
    if (current_ == this) current_ = nullptr;
  }
  static PyRuntime* current() {
    if (!current_) throw std::runtime_error("gpucomm: no open Runtime (create one: `with gpucomm.Runtime() as rt:`)");
    return current_;
  }
  Runtime& rt() {
    if (!rt_) throw std::runtime_error("gpucomm: the Runtime is closed");
    return *rt_;
  }
  // Collective: finalizes the runtime; symmetric arrays become invalid.
  void close() {
    rt_.reset();
    if (current_ == this) current_ = nullptr;
  }
  bool closed() const { return !rt_; }

  nb::ndarray<nb::array_api> alloc(nb::handle self, const std::vector<size_t>& shape, nb::handle dtype, bool zero) {
    DtypeInfo d = parse_dtype(dtype);
    size_t count = 1;
    for (size_t s : shape) count *= s;
    Runtime& r = rt();
    void* p = zero ? r.calloc(count, d.bytes) : r.malloc(count * d.bytes);
    bool gpu = r.pe_kind() == gpucomm::PeKind::gpu;
    return nb::ndarray<nb::array_api>(p, shape.size(), shape.data(), self, nullptr, d.dt,
                                      gpu ? nb::device::cuda::value : nb::device::cpu::value, gpu ? r.device_id() : 0);
  }

  void* sym_address(const AnyArray& a, const char* what) {
    Runtime& r = rt();
    if (!r.heap().contains(a.data(), nbytes(a))) {
      throw nb::value_error(
          (std::string("gpucomm: ") + what + " is not a symmetric array (allocate it with Runtime.empty/zeros)")
              .c_str());
    }
    return a.data();
  }

 private:
  std::unique_ptr<Runtime> rt_;
  static inline PyRuntime* current_ = nullptr;
};

}  // namespace

// The Runtime of a gpucomm.Runtime object, for the methods other files add (py_runtime.hpp).
gpucomm::Runtime& py_runtime(nb::handle self) {
  return nb::cast<PyRuntime&>(self).rt();
}

void bind_runtime(nb::module_& m) {
  nb::class_<PyRuntime>(m, "Runtime",
                        "A gpucomm PE (collective: every process of the job creates one). Use as a context manager; "
                        "leaving it finalizes the job.")
      .def(nb::init<const std::string&, size_t>(), nb::arg("device") = "", nb::arg("heap_bytes") = 0,
           "device: '', 'auto', 'gpu' or 'host' ('' reads GPUCOMM_DEVICE); heap_bytes: 0 reads GPUCOMM_HEAP_SIZE")
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__", [](PyRuntime& self, nb::handle, nb::handle, nb::handle) { self.close(); }, nb::arg().none(),
          nb::arg().none(), nb::arg().none())
      .def("close", &PyRuntime::close, "Finalize (collective). Symmetric arrays become invalid.")
      .def_prop_ro("closed", &PyRuntime::closed)
      .def_static("current", &PyRuntime::current, nb::rv_policy::reference, "The most recently opened Runtime.")
      .def_prop_ro("rank", [](PyRuntime& s) { return s.rt().rank(); })
      .def_prop_ro("size", [](PyRuntime& s) { return s.rt().size(); })
      .def_prop_ro("local_rank", [](PyRuntime& s) { return s.rt().local_rank(); })
      .def_prop_ro("local_size", [](PyRuntime& s) { return s.rt().local_size(); })
      .def_prop_ro("device_id", [](PyRuntime& s) { return s.rt().device_id(); })
      .def_prop_ro("pe_kind", [](PyRuntime& s) { return s.rt().pe_kind() == gpucomm::PeKind::gpu ? "gpu" : "host"; })
      .def("describe", [](PyRuntime& s) { return s.rt().describe(); })
      .def(
          "barrier_all", [](PyRuntime& s) { s.rt().barrier_all(); }, "Quiet, then wait for every PE.")
      .def("quiet", [](PyRuntime& s) { s.rt().quiet(); })
      .def(
          "empty",
          [](nb::handle self, nb::handle shape, nb::handle dtype) {
            return nb::cast<PyRuntime&>(self).alloc(self, to_shape(shape), dtype, false);
          },
          nb::arg("shape"), nb::arg("dtype") = "float32",
          "Collective: a symmetric array (same shape and dtype on every PE), through DLPack.")
      .def(
          "zeros",
          [](nb::handle self, nb::handle shape, nb::handle dtype) {
            return nb::cast<PyRuntime&>(self).alloc(self, to_shape(shape), dtype, true);
          },
          nb::arg("shape"), nb::arg("dtype") = "float32", "Collective: like empty, filled with zeros.")
      .def(
          "malloc",
          [](nb::handle self, nb::handle shape, nb::handle dtype) {
            return nb::cast<PyRuntime&>(self).alloc(self, to_shape(shape), dtype, false);
          },
          nb::arg("shape"), nb::arg("dtype") = "uint8",
          "Collective: same as empty (default dtype uint8, shape in elements).")
      .def(
          "free", [](PyRuntime& s, const AnyArray& a) { s.rt().free(s.sym_address(a, "the array")); }, nb::arg("array"),
          "Collective: returns a symmetric array's memory.")
      .def(
          "peer_address",
          [](PyRuntime& s, const AnyArray& a, int pe) {
            return reinterpret_cast<uintptr_t>(s.rt().ptr(s.sym_address(a, "the array"), pe));
          },
          nb::arg("array"), nb::arg("pe"), "Address of PE pe's copy (0 when not directly reachable).");
}
