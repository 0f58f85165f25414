// gpucomm.Runtime's stream-ordered one-sided calls (GPU PEs), as in the C++ host API: put, get,
// put_signal, signal, wait_until and barrier enqueued as kernels on a CUDA stream, never waiting
// on the host. The stream is `stream` when given, else torch's (cupy's) current stream when an
// argument is a torch tensor (cupy array), else the runtime's stream (gpucomm/arrays.py): the
// call is ordered after the work queued on that stream before it and before the work queued
// after it. Local arrays must be GPU memory (the copies are SM kernels). Failures of the enqueued
// kernels show at the next synchronization; check_device() then raises the device's record.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>

#include "gpucomm/core/error.hpp"
#include "gpucomm/gpucomm.hpp"
#include "py_arrays.hpp"
#include "py_runtime.hpp"
#include "py_words.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using gpucomm::Runtime;
using gpucomm::py::array_ref;
using gpucomm::py::ArrayRef;

namespace {

// The runtime's own stream, or 0 on host-memory PEs (whose stream-ordered calls then raise the
// runtime's "GPU PEs only" error).
uintptr_t own_stream(Runtime& rt) {
  return rt.pe_kind() == gpucomm::PeKind::gpu ? reinterpret_cast<uintptr_t>(rt.stream()) : 0;
}

gpucomm::Stream as_stream(uintptr_t s) {
  return reinterpret_cast<gpucomm::Stream>(s);
}

// A local array of a stream-ordered call must be memory the GPU's copy kernels can read and write.
ArrayRef device_array(Runtime& rt, nb::handle obj, const char* call, const char* arg, bool symmetric) {
  ArrayRef a = array_ref(obj, call, arg);
  if (symmetric) gpucomm::py::require_symmetric(rt, a, call, arg);
  const int dev = a.array.device_type();
  const bool gpu_visible =
      dev == nb::device::cuda::value || dev == nb::device::cuda_host::value || dev == nb::device::cuda_managed::value;
  if (rt.pe_kind() == gpucomm::PeKind::gpu && !gpu_visible) {
    gpucomm::py::raise_error(PyExc_ValueError,
                             std::string("gpucomm: ") + call + ": " + arg +
                                 " is host memory; stream-ordered calls copy with GPU kernels and need GPU memory (a "
                                 "torch CUDA tensor, a cupy array, a symmetric array)");
  }
  return a;
}

}  // namespace

void bind_stream_ops(nb::module_& m) {
  gpucomm::py::Methods(m.attr("Runtime"))
      .prop(
          "stream", [](nb::handle self) { return reinterpret_cast<uintptr_t>(py_runtime(self).stream()); },
          "The CUDA stream (handle) the blocking calls of GPU PEs run on; raises on host-memory PEs.")
      .def(
          "check_device", [](nb::handle self) { py_runtime(self).check_device(); },
          "Raises the failure a kernel of this PE recorded (a device wait that timed out, an argument fault), "
          "naming rank, operation, address, expected and seen values; does nothing when none was recorded.")
      .def(
          "put_on_stream",
          [](nb::handle self, nb::handle dst, nb::handle src, int pe, nb::handle stream) {
            Runtime& rt = py_runtime(self);
            ArrayRef d = device_array(rt, dst, "put_on_stream", "dst", true);
            ArrayRef s = device_array(rt, src, "put_on_stream", "src", false);
            if (d.nbytes != s.nbytes) gpucomm::raise_arg("put_on_stream", "dst/src", "differ in size");
            auto st = gpucomm::py::stream_for(stream, {dst, src}, own_stream(rt));
            rt.put_on_stream(d.data, s.data, s.nbytes, pe, as_stream(st));
          },
          "dst"_a, "src"_a, "pe"_a, "stream"_a = nb::none(),
          "Enqueues the copy of src into PE pe's dst on the stream (see the class notes on streams).")
      .def(
          "get_on_stream",
          [](nb::handle self, nb::handle dst, nb::handle src, int pe, nb::handle stream) {
            Runtime& rt = py_runtime(self);
            ArrayRef d = device_array(rt, dst, "get_on_stream", "dst", false);
            ArrayRef s = device_array(rt, src, "get_on_stream", "src", true);
            if (d.nbytes != s.nbytes) gpucomm::raise_arg("get_on_stream", "dst/src", "differ in size");
            auto st = gpucomm::py::stream_for(stream, {dst, src}, own_stream(rt));
            rt.get_on_stream(d.data, s.data, s.nbytes, pe, as_stream(st));
          },
          "dst"_a, "src"_a, "pe"_a, "stream"_a = nb::none(), "Enqueues the copy of PE pe's src into dst on the stream.")
      .def(
          "put_signal_on_stream",
          [](nb::handle self, nb::handle dst, nb::handle src, nb::handle sig, nb::handle value, nb::handle op, int pe,
             nb::handle stream) {
            Runtime& rt = py_runtime(self);
            ArrayRef d = device_array(rt, dst, "put_signal_on_stream", "dst", true);
            ArrayRef s = device_array(rt, src, "put_signal_on_stream", "src", false);
            ArrayRef w = device_array(rt, sig, "put_signal_on_stream", "sig", true);
            if (d.nbytes != s.nbytes) gpucomm::raise_arg("put_signal_on_stream", "dst/src", "differ in size");
            uint64_t* word = gpucomm::py::signal_word(w, "put_signal_on_stream");
            auto v = gpucomm::py::value_arg<uint64_t>(value, "put_signal_on_stream", "value");
            auto o = gpucomm::py::signal_op_arg(op, "put_signal_on_stream");
            auto st = gpucomm::py::stream_for(stream, {dst, src, sig}, own_stream(rt));
            rt.put_signal_on_stream(d.data, s.data, s.nbytes, word, v, o, pe, as_stream(st));
          },
          "dst"_a, "src"_a, "sig"_a, "value"_a, "op"_a, "pe"_a, "stream"_a = nb::none(),
          "Enqueues the copy of src into PE pe's dst, then the signal of PE pe's sig, on the stream.")
      .def(
          "signal_on_stream",
          [](nb::handle self, nb::handle sig, nb::handle value, nb::handle op, int pe, nb::handle stream) {
            Runtime& rt = py_runtime(self);
            ArrayRef w = device_array(rt, sig, "signal_on_stream", "sig", true);
            uint64_t* word = gpucomm::py::signal_word(w, "signal_on_stream");
            auto v = gpucomm::py::value_arg<uint64_t>(value, "signal_on_stream", "value");
            auto o = gpucomm::py::signal_op_arg(op, "signal_on_stream");
            auto st = gpucomm::py::stream_for(stream, {sig}, own_stream(rt));
            rt.signal_on_stream(word, v, o, pe, as_stream(st));
          },
          "sig"_a, "value"_a, "op"_a, "pe"_a, "stream"_a = nb::none(),
          "Enqueues the signal of PE pe's sig on the stream, after the stream's earlier work.")
      .def(
          "wait_until_on_stream",
          [](nb::handle self, nb::handle sig, nb::handle cmp, nb::handle value, nb::handle stream) {
            Runtime& rt = py_runtime(self);
            ArrayRef w = device_array(rt, sig, "wait_until_on_stream", "sig", true);
            uint64_t* word = gpucomm::py::signal_word(w, "wait_until_on_stream");
            auto c = gpucomm::py::cmp_arg(cmp, "wait_until_on_stream");
            auto v = gpucomm::py::value_arg<uint64_t>(value, "wait_until_on_stream", "value");
            auto st = gpucomm::py::stream_for(stream, {sig}, own_stream(rt));
            rt.wait_until_on_stream(word, c, v, as_stream(st));
          },
          "sig"_a, "cmp"_a, "value"_a, "stream"_a = nb::none(),
          "Enqueues a wait until this PE's signal word satisfies `cmp value`: the stream's later work starts "
          "after it.")
      .def(
          "barrier_on_stream",
          [](nb::handle self, nb::handle stream) {
            Runtime& rt = py_runtime(self);
            auto st = gpucomm::py::stream_for(stream, {}, own_stream(rt));
            rt.barrier_on_stream(as_stream(st));
          },
          "stream"_a = nb::none(),
          "Enqueues a barrier over all PEs on `stream` (the runtime's stream when None: it has no array to take "
          "a framework's stream from, so pass stream=torch.cuda.current_stream() to order it with torch's work).");
}
