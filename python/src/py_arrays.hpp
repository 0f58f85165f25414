#pragma once
// The C++ half of gpucomm's array adapter (the Python half is python/gpucomm/arrays.py): how the
// bindings of every layer take arrays in (DLPack or the buffer protocol: numpy, torch, cupy, ...),
// hand arrays out (DLPack, in the framework of an input when asked), and pick the CUDA stream of
// a stream-ordered call. Arrays are taken as they are: never copied or converted, so that a
// destination is written where the caller sees it; a non-contiguous array is refused.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace gpucomm {
class Runtime;
}

namespace gpucomm::py {
namespace nb = nanobind;

using AnyArray = nb::ndarray<>;

// An array argument: its data, size and element type, and the array object itself.
struct ArrayRef {
  AnyArray array;
  void* data = nullptr;
  size_t nbytes = 0;
  size_t count = 0;  // elements
  nb::dlpack::dtype dtype{};
};

// `obj` as an array; raises TypeError (not an array) or ValueError (not contiguous) naming `call`
// and `arg`.
ArrayRef array_ref(nb::handle obj, const char* call, const char* arg);
// `a` must lie inside this PE's symmetric heap (a symmetric array or a view of one); raises
// ValueError naming the argument otherwise.
void require_symmetric(gpucomm::Runtime& rt, const ArrayRef& a, const char* call, const char* arg);
// "float32", "uint64", ... for messages.
std::string dtype_name(nb::dlpack::dtype dt);

// A new array of `like`'s shape, strides and element type over `data` (device memory of
// `device_type`/`device_id`), keeping `owner` alive; in the framework of `framework_of` (torch,
// numpy, cupy; a plain DLPack array otherwise).
nb::object alias(void* data, const ArrayRef& like, int device_type, int device_id, nb::handle owner,
                 nb::handle framework_of);

// The stream of a stream-ordered call, as gpucomm.arrays.stream_for decides it: `stream` when
// given, else torch's (or cupy's) current stream when an argument is a torch tensor (cupy array),
// else `fallback`.
uintptr_t stream_for(nb::handle stream, std::initializer_list<nb::handle> arrays, uintptr_t fallback);
// Before a blocking call reads or writes them: waits for the work the arrays' frameworks queued
// on their current streams (torch tensors on the GPU), so that the call sees finished data.
void wait_for_producers(std::initializer_list<nb::handle> arrays);

}  // namespace gpucomm::py
