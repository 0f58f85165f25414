// gpucomm.Runtime's blocking one-sided calls, as in the C++ host API (gpucomm/runtime/runtime.hpp):
// put/get, p/g, put_signal, signal, signal_fetch, wait_until, signal_wait_until, test, fence, the
// atomics and peer views; and the Cmp and SignalOp enums.
//
// Arrays come through the adapter (py_arrays.hpp). A word argument (a signal, the ivar of a wait,
// the target of an atomic) is one element of a symmetric array: a one-element array or a view
// such as a[k:k+1]. Values take the word's type; one that does not fit raises OverflowError.
// Blocking calls release the GIL while they wait and first wait for the work torch (cupy) queued
// on the arrays (gpucomm/arrays.py). Ordering is the C++ API's: whoever sees a signal sees the
// data put before it (ARCHITECTURE.md, "Memory-ordering rules").
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "blocking.hpp"
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
using gpucomm::py::require_symmetric;
using gpucomm::py::wait_for_producers;

namespace {

// A symmetric array argument of `call`.
ArrayRef symmetric(Runtime& rt, nb::handle obj, const char* call, const char* arg) {
  ArrayRef a = array_ref(obj, call, arg);
  require_symmetric(rt, a, call, arg);
  return a;
}

// An atomic on PE pe's copy of the word dst with one operand (fetch_add, swap, set, ...; fetch
// ignores it): op(rt, word, operand, pe) with the GIL released; returns op's result.
template <class Op>
nb::object atomic_with_value(nb::handle self, nb::handle dst, nb::handle value, int pe, const char* call, Op op) {
  Runtime& rt = py_runtime(self);
  ArrayRef w = symmetric(rt, dst, call, "dst");
  wait_for_producers({dst});
  return gpucomm::py::with_word(w, call, "dst", [&](auto* word) -> nb::object {
    using T = std::remove_pointer_t<decltype(word)>;
    T v = gpucomm::py::value_arg<T>(value, call, "value");
    T old;
    {
      gpucomm::python::Unlocked nogil;
      old = op(rt, word, v, pe);
    }
    return nb::cast(old);
  });
}

// A wait or test on this PE's word ivar: op(rt, word, cmp, value) with the GIL released.
template <class Op>
nb::object on_local_word(nb::handle self, nb::handle ivar, nb::handle cmp, nb::handle value, const char* call, Op op) {
  Runtime& rt = py_runtime(self);
  ArrayRef w = symmetric(rt, ivar, call, "ivar");
  auto c = gpucomm::py::cmp_arg(cmp, call);
  wait_for_producers({ivar});
  return gpucomm::py::with_word(w, call, "ivar", [&](auto* word) -> nb::object {
    using T = std::remove_pointer_t<decltype(word)>;
    T v = gpucomm::py::value_arg<T>(value, call, "value");
    decltype(op(rt, word, c, v)) result;
    {
      gpucomm::python::Unlocked nogil;
      result = op(rt, word, c, v);
    }
    return nb::cast(result);
  });
}

void bind_enums(nb::module_& m) {
  nb::enum_<gpucomm::Cmp>(m, "Cmp", "Comparison of wait_until/test (strings work too: 'ge' or '>=').")
      .value("eq", gpucomm::Cmp::eq)
      .value("ne", gpucomm::Cmp::ne)
      .value("gt", gpucomm::Cmp::gt)
      .value("ge", gpucomm::Cmp::ge)
      .value("lt", gpucomm::Cmp::lt)
      .value("le", gpucomm::Cmp::le);
  nb::enum_<gpucomm::SignalOp>(m, "SignalOp", "What a signal does to its word (strings work too: 'set', 'add').")
      .value("set", gpucomm::SignalOp::set)
      .value("add", gpucomm::SignalOp::add);
}

void bind_put_get(gpucomm::py::Methods& rt_class) {
  rt_class
      .def(
          "put",
          [](nb::handle self, nb::handle dst, nb::handle src, int pe) {
            Runtime& rt = py_runtime(self);
            ArrayRef d = symmetric(rt, dst, "put", "dst");
            ArrayRef s = array_ref(src, "put", "src");
            if (d.nbytes != s.nbytes) gpucomm::raise_arg("put", "dst/src", "differ in size");
            wait_for_producers({dst, src});
            gpucomm::python::Unlocked nogil;
            rt.put(d.data, s.data, s.nbytes, pe);
          },
          "dst"_a, "src"_a, "pe"_a,
          "Copies src (host or device memory) into PE pe's copy of the symmetric array dst; returns when done.")
      .def(
          "get",
          [](nb::handle self, nb::handle dst, nb::handle src, int pe) {
            Runtime& rt = py_runtime(self);
            ArrayRef d = array_ref(dst, "get", "dst");
            ArrayRef s = symmetric(rt, src, "get", "src");
            if (d.nbytes != s.nbytes) gpucomm::raise_arg("get", "dst/src", "differ in size");
            wait_for_producers({dst, src});
            gpucomm::python::Unlocked nogil;
            rt.get(d.data, s.data, s.nbytes, pe);
          },
          "dst"_a, "src"_a, "pe"_a,
          "Copies PE pe's copy of the symmetric array src into dst (host or device memory); returns when done.");
}

void bind_signals(gpucomm::py::Methods& rt_class) {
  rt_class
      .def(
          "put_signal",
          [](nb::handle self, nb::handle dst, nb::handle src, nb::handle sig, nb::handle value, nb::handle op, int pe) {
            Runtime& rt = py_runtime(self);
            ArrayRef d = symmetric(rt, dst, "put_signal", "dst");
            ArrayRef s = array_ref(src, "put_signal", "src");
            ArrayRef w = symmetric(rt, sig, "put_signal", "sig");
            if (d.nbytes != s.nbytes) gpucomm::raise_arg("put_signal", "dst/src", "differ in size");
            uint64_t* word = gpucomm::py::signal_word(w, "put_signal");
            auto v = gpucomm::py::value_arg<uint64_t>(value, "put_signal", "value");
            auto o = gpucomm::py::signal_op_arg(op, "put_signal");
            wait_for_producers({dst, src, sig});
            gpucomm::python::Unlocked nogil;
            rt.put_signal(d.data, s.data, s.nbytes, word, v, o, pe);
          },
          "dst"_a, "src"_a, "sig"_a, "value"_a, "op"_a, "pe"_a,
          "Copies src into PE pe's dst, then signals PE pe's sig (a one-element uint64 symmetric array) with "
          "op ('set' or 'add') and value: whoever sees the signal sees the data.")
      .def(
          "signal",
          [](nb::handle self, nb::handle sig, nb::handle value, nb::handle op, int pe) {
            Runtime& rt = py_runtime(self);
            uint64_t* word = gpucomm::py::signal_word(symmetric(rt, sig, "signal", "sig"), "signal");
            auto v = gpucomm::py::value_arg<uint64_t>(value, "signal", "value");
            auto o = gpucomm::py::signal_op_arg(op, "signal");
            wait_for_producers({sig});
            gpucomm::python::Unlocked nogil;
            rt.signal(word, v, o, pe);
          },
          "sig"_a, "value"_a, "op"_a, "pe"_a,
          "Sets (op='set') or adds to (op='add') PE pe's copy of the signal word sig; ordered after this PE's "
          "earlier puts to pe.")
      .def(
          "signal_fetch",
          [](nb::handle self, nb::handle sig) {
            Runtime& rt = py_runtime(self);
            uint64_t* word = gpucomm::py::signal_word(symmetric(rt, sig, "signal_fetch", "sig"), "signal_fetch");
            wait_for_producers({sig});
            gpucomm::python::Unlocked nogil;
            return rt.signal_fetch(word);
          },
          "sig"_a, "The value of this PE's signal word sig (acquire).")
      .def(
          "signal_wait_until",
          [](nb::handle self, nb::handle sig, nb::handle cmp, nb::handle value) {
            Runtime& rt = py_runtime(self);
            uint64_t* word =
                gpucomm::py::signal_word(symmetric(rt, sig, "signal_wait_until", "sig"), "signal_wait_until");
            auto c = gpucomm::py::cmp_arg(cmp, "signal_wait_until");
            auto v = gpucomm::py::value_arg<uint64_t>(value, "signal_wait_until", "value");
            wait_for_producers({sig});
            gpucomm::python::Unlocked nogil;
            return rt.signal_wait_until(word, c, v);
          },
          "sig"_a, "cmp"_a, "value"_a,
          "Waits until this PE's signal word satisfies `cmp value`; returns the value seen. Times out after "
          "GPUCOMM_TIMEOUT naming who waited for what.");
}

void bind_waits(gpucomm::py::Methods& rt_class) {
  rt_class
      .def(
          "wait_until",
          [](nb::handle self, nb::handle ivar, nb::handle cmp, nb::handle value) {
            return on_local_word(self, ivar, cmp, value, "wait_until",
                                 [](Runtime& rt, auto* w, gpucomm::Cmp c, auto v) { return rt.wait_until(w, c, v); });
          },
          "ivar"_a, "cmp"_a, "value"_a,
          "Waits until this PE's word ivar (int32/uint32/int64/uint64, one element) satisfies `cmp value`; "
          "returns the value seen.")
      .def(
          "test",
          [](nb::handle self, nb::handle ivar, nb::handle cmp, nb::handle value) {
            return on_local_word(self, ivar, cmp, value, "test",
                                 [](Runtime& rt, auto* w, gpucomm::Cmp c, auto v) { return rt.test(w, c, v); });
          },
          "ivar"_a, "cmp"_a, "value"_a, "Whether this PE's word ivar satisfies `cmp value` now (no waiting).")
      .def(
          "fence",
          [](nb::handle self) {
            Runtime& rt = py_runtime(self);
            gpucomm::python::Unlocked nogil;
            rt.fence();
          },
          "Orders this PE's earlier puts and signals to each PE before its later ones.");
}

void bind_scalars(gpucomm::py::Methods& rt_class) {
  rt_class
      .def(
          "p",
          [](nb::handle self, nb::handle dst, nb::handle value, int pe) {
            Runtime& rt = py_runtime(self);
            ArrayRef w = symmetric(rt, dst, "p", "dst");
            wait_for_producers({dst});
            gpucomm::py::with_scalar(w, "p", "dst", [&](auto* word) -> nb::object {
              using T = std::remove_pointer_t<decltype(word)>;
              T v = gpucomm::py::scalar_arg<T>(value, "p", "value");
              {
                gpucomm::python::Unlocked nogil;
                rt.p(word, v, pe);
              }
              return nb::none();
            });
          },
          "dst"_a, "value"_a, "pe"_a,
          "Stores value into PE pe's copy of dst (one element of an integer or float32/float64 array).")
      .def(
          "g",
          [](nb::handle self, nb::handle src, int pe) {
            Runtime& rt = py_runtime(self);
            ArrayRef w = symmetric(rt, src, "g", "src");
            wait_for_producers({src});
            return gpucomm::py::with_scalar(w, "g", "src", [&](auto* word) -> nb::object {
              using T = std::remove_pointer_t<decltype(word)>;
              T v;
              {
                gpucomm::python::Unlocked nogil;
                v = rt.g(word, pe);
              }
              return nb::cast(v);
            });
          },
          "src"_a, "pe"_a, "The value of PE pe's copy of src (one element).");
}

void bind_atomics(gpucomm::py::Methods& rt_class) {
  const char* value_doc = "On PE pe's copy of dst (one int32/uint32/int64/uint64 element); returns the old value.";
  rt_class
      .def(
          "atomic_fetch",
          [](nb::handle self, nb::handle dst, int pe) {
            return atomic_with_value(self, dst, nb::int_(0), pe, "atomic_fetch",
                                     [](Runtime& rt, auto* w, auto, int p) { return rt.atomic_fetch(w, p); });
          },
          "dst"_a, "pe"_a, "Atomically reads PE pe's copy of dst.")
      .def(
          "atomic_set",
          [](nb::handle self, nb::handle dst, nb::handle value, int pe) {
            atomic_with_value(self, dst, value, pe, "atomic_set", [](Runtime& rt, auto* w, auto v, int p) {
              rt.atomic_set(w, v, p);
              return v;
            });
          },
          "dst"_a, "value"_a, "pe"_a, "Atomically stores value into PE pe's copy of dst.")
      .def(
          "atomic_fetch_add",
          [](nb::handle self, nb::handle dst, nb::handle value, int pe) {
            return atomic_with_value(self, dst, value, pe, "atomic_fetch_add",
                                     [](Runtime& rt, auto* w, auto v, int p) { return rt.atomic_fetch_add(w, v, p); });
          },
          "dst"_a, "value"_a, "pe"_a, value_doc)
      .def(
          "atomic_add",
          [](nb::handle self, nb::handle dst, nb::handle value, int pe) {
            atomic_with_value(self, dst, value, pe, "atomic_add",
                              [](Runtime& rt, auto* w, auto v, int p) { return rt.atomic_fetch_add(w, v, p); });
          },
          "dst"_a, "value"_a, "pe"_a, "Atomically adds value to PE pe's copy of dst.")
      .def(
          "atomic_fetch_inc",
          [](nb::handle self, nb::handle dst, int pe) {
            return atomic_with_value(self, dst, nb::int_(1), pe, "atomic_fetch_inc",
                                     [](Runtime& rt, auto* w, auto v, int p) { return rt.atomic_fetch_add(w, v, p); });
          },
          "dst"_a, "pe"_a, "Atomically adds 1 to PE pe's copy of dst; returns the old value.")
      .def(
          "atomic_inc",
          [](nb::handle self, nb::handle dst, int pe) {
            atomic_with_value(self, dst, nb::int_(1), pe, "atomic_inc",
                              [](Runtime& rt, auto* w, auto v, int p) { return rt.atomic_fetch_add(w, v, p); });
          },
          "dst"_a, "pe"_a, "Atomically adds 1 to PE pe's copy of dst.")
      .def(
          "atomic_swap",
          [](nb::handle self, nb::handle dst, nb::handle value, int pe) {
            return atomic_with_value(self, dst, value, pe, "atomic_swap",
                                     [](Runtime& rt, auto* w, auto v, int p) { return rt.atomic_swap(w, v, p); });
          },
          "dst"_a, "value"_a, "pe"_a, value_doc)
      .def(
          "atomic_compare_swap",
          [](nb::handle self, nb::handle dst, nb::handle expected, nb::handle desired, int pe) {
            Runtime& rt = py_runtime(self);
            ArrayRef w = symmetric(rt, dst, "atomic_compare_swap", "dst");
            wait_for_producers({dst});
            return gpucomm::py::with_word(w, "atomic_compare_swap", "dst", [&](auto* word) -> nb::object {
              using T = std::remove_pointer_t<decltype(word)>;
              T e = gpucomm::py::value_arg<T>(expected, "atomic_compare_swap", "expected");
              T d = gpucomm::py::value_arg<T>(desired, "atomic_compare_swap", "desired");
              T old;
              {
                gpucomm::python::Unlocked nogil;
                old = rt.atomic_compare_swap(word, e, d, pe);
              }
              return nb::cast(old);
            });
          },
          "dst"_a, "expected"_a, "desired"_a, "pe"_a,
          "Atomically replaces PE pe's copy of dst by desired if it equals expected; returns the old value (the "
          "swap happened when it equals expected).")
      .def(
          "atomic_fetch_and",
          [](nb::handle self, nb::handle dst, nb::handle value, int pe) {
            return atomic_with_value(self, dst, value, pe, "atomic_fetch_and",
                                     [](Runtime& rt, auto* w, auto v, int p) { return rt.atomic_fetch_and(w, v, p); });
          },
          "dst"_a, "value"_a, "pe"_a, value_doc)
      .def(
          "atomic_fetch_or",
          [](nb::handle self, nb::handle dst, nb::handle value, int pe) {
            return atomic_with_value(self, dst, value, pe, "atomic_fetch_or",
                                     [](Runtime& rt, auto* w, auto v, int p) { return rt.atomic_fetch_or(w, v, p); });
          },
          "dst"_a, "value"_a, "pe"_a, value_doc)
      .def(
          "atomic_fetch_xor",
          [](nb::handle self, nb::handle dst, nb::handle value, int pe) {
            return atomic_with_value(self, dst, value, pe, "atomic_fetch_xor",
                                     [](Runtime& rt, auto* w, auto v, int p) { return rt.atomic_fetch_xor(w, v, p); });
          },
          "dst"_a, "value"_a, "pe"_a, value_doc);
}

void bind_peer_views(gpucomm::py::Methods& rt_class) {
  rt_class.def(
      "peer_view",
      [](nb::handle self, nb::handle array, int pe) {
        Runtime& rt = py_runtime(self);
        ArrayRef a = symmetric(rt, array, "peer_view", "array");
        void* peer = rt.ptr(a.data, pe);
        if (!peer) {
          gpucomm::raise_arg("peer_view", "pe",
                             std::to_string(pe) + " is not directly reachable from rank " + std::to_string(rt.rank()) +
                                 " (another node, or no peer access): use get/put");
        }
        const bool gpu = rt.pe_kind() == gpucomm::PeKind::gpu;
        // Like the arrays of empty()/zeros(), the view holds a lease on the heap (and its peer
        // mappings), so that it stays valid after the Runtime is closed.
        auto* lease = new std::shared_ptr<const void>(rt.heap_lease());
        nb::capsule owner(lease, [](void* l) noexcept { delete static_cast<std::shared_ptr<const void>*>(l); });
        return gpucomm::py::alias(peer, a, gpu ? nb::device::cuda::value : nb::device::cpu::value,
                                  gpu ? rt.device_id() : 0, owner, array);
      },
      "array"_a, "pe"_a,
      "An array aliasing PE pe's copy of the symmetric array (or view) `array`, for direct loads and stores, in "
      "array's framework; raises InvalidArgumentError (a ValueError) when pe is not directly reachable. Plain loads "
      "and stores carry no "
      "ordering: pair them with signals, barriers or fence.");
}

}  // namespace

void bind_rma(nb::module_& m) {
  bind_enums(m);
  gpucomm::py::Methods rt_class(m.attr("Runtime"));
  bind_put_get(rt_class);
  bind_signals(rt_class);
  bind_waits(rt_class);
  bind_scalars(rt_class);
  bind_atomics(rt_class);
  bind_peer_views(rt_class);
}
