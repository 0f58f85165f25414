#include "py_arrays.hpp"

#include <nanobind/stl/string.h>

#include <vector>

#include "gpucomm/core/error.hpp"
#include "gpucomm/gpucomm.hpp"

namespace gpucomm::py {
namespace {

std::string type_label_of(nb::handle obj) {
  return nb::cast<std::string>(nb::str(obj.type().attr("__qualname__")));
}

// C order (the last index fastest) with no gaps; dimensions of extent 1 may have any stride.
bool c_contiguous(const AnyArray& a) {
  if (!a.stride_ptr()) return true;  // DLPack leaves strides out for compact arrays
  if (a.size() == 0) return true;    // an empty array has no gaps (numpy gives it any strides)
  int64_t expect = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expect) return false;
    expect *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

nb::object arrays_module() {
  return nb::module_::import_("gpucomm.arrays");
}

nb::tuple as_tuple(std::initializer_list<nb::handle> items) {
  nb::list l;
  for (nb::handle h : items) l.append(h);
  return nb::tuple(l);
}

}  // namespace

ArrayRef array_ref(nb::handle obj, const char* call, const char* arg) {
  ArrayRef r;
  // No conversion: a copy made to satisfy a constraint would receive a destination's data.
  if (!nb::try_cast<AnyArray>(obj, r.array, false)) {
    throw nb::type_error((std::string("gpucomm: ") + call + ": " + arg +
                          " must be an array (numpy, torch, cupy, or an object with __dlpack__), got " +
                          type_label_of(obj))
                             .c_str());
  }
  if (!c_contiguous(r.array)) {
    gpucomm::raise(gpucomm::Errc::invalid_argument, call,
                   std::string(arg) +
                       " is not contiguous; pass a contiguous array (numpy.ascontiguousarray, tensor.contiguous())");
  }
  r.data = r.array.data();
  r.nbytes = r.array.nbytes();
  r.count = r.array.size();
  r.dtype = r.array.dtype();
  return r;
}

void require_symmetric(gpucomm::Runtime& rt, const ArrayRef& a, const char* call, const char* arg) {
  if (!rt.heap().contains(a.data, a.nbytes)) {
    gpucomm::raise(
        gpucomm::Errc::invalid_argument, call,
        std::string(arg) + " is not a symmetric array (allocate it with Runtime.empty/zeros, or pass a view of one)");
  }
}

std::string dtype_name(nb::dlpack::dtype dt) {
  using C = nb::dlpack::dtype_code;
  std::string kind;
  switch (static_cast<C>(dt.code)) {
    case C::Int:
      kind = "int";
      break;
    case C::UInt:
      kind = "uint";
      break;
    case C::Float:
      kind = "float";
      break;
    case C::Bfloat:
      kind = "bfloat";
      break;
    case C::Complex:
      kind = "complex";
      break;
    case C::Bool:
      return "bool";
    default:
      kind = "dtype" + std::to_string(dt.code) + "_";
  }
  return kind + std::to_string(dt.bits);
}

nb::object alias(void* data, const ArrayRef& like, int device_type, int device_id, nb::handle owner,
                 nb::handle framework_of) {
  const size_t ndim = like.array.ndim();
  std::vector<size_t> shape(ndim);
  std::vector<int64_t> strides(ndim);
  int64_t stride = 1;
  for (size_t i = ndim; i-- > 0;) {
    shape[i] = like.array.shape(i);
    strides[i] = stride;
    stride *= static_cast<int64_t>(shape[i]);
  }
  nb::ndarray<nb::array_api> out(data, ndim, shape.data(), owner, strides.data(), like.dtype, device_type, device_id);
  nb::object raw = out.cast(nb::rv_policy::reference);
  return arrays_module().attr("like")(raw, framework_of);
}

uintptr_t stream_for(nb::handle stream, std::initializer_list<nb::handle> arrays, uintptr_t fallback) {
  return nb::cast<uintptr_t>(arrays_module().attr("stream_for")(as_tuple(arrays), stream, fallback));
}

void wait_for_producers(std::initializer_list<nb::handle> arrays) {
  arrays_module().attr("wait_for_producers")(as_tuple(arrays));
}

}  // namespace gpucomm::py
