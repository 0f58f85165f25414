// gpucomm.messaging.Endpoints: endpoints, the messaging fast lane, for host-memory PEs from Python
// (gpucomm/messaging/endpoints.hpp, docs/MESSAGING.md "Endpoints"). Arrays come in through the
// array adapter; a posted receive keeps its array alive until it completes. Blocking calls release
// the GIL. GPU PEs use endpoints from kernels (C++); their Python calls raise, saying so.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "blocking.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/gpucomm.hpp"
#include "gpucomm/messaging/endpoints.hpp"
#include "py_arrays.hpp"
#include "py_runtime.hpp"

namespace nb = nanobind;
using namespace nb::literals;
namespace msg = gpucomm::msg;
namespace ep = gpucomm::msg::ep;
using gpucomm::py::array_ref;
using gpucomm::py::ArrayRef;

namespace {

// Endpoints with the Python Runtime they were made on (kept alive). close() is collective.
struct PyEndpoints {
  nb::object rt;
  std::unique_ptr<msg::Endpoints> e;

  bool runtime_open() const { return !nb::cast<bool>(rt.attr("closed")); }
  msg::Endpoints& get(const char* call) const {
    if (!e || !runtime_open())
      gpucomm::raise_arg(std::string("Endpoints.") + call, "self", "the Endpoints or their Runtime were closed");
    return *e;
  }
  void close() {
    if (!e) return;
    if (runtime_open()) {
      gpucomm::python::Unlocked unlocked;
      e.reset();
    } else {
      // The Runtime is gone: nothing is left to tear down collectively.
      [[maybe_unused]] msg::Endpoints* left_behind = e.release();
    }
  }
  ~PyEndpoints() {
    try {
      close();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
  }
};

// The owner of one endpoint, with its Endpoints (kept alive) and the arrays of its posted receives.
struct PyOwner {
  nb::object eps;
  std::unique_ptr<msg::Endpoints::Owner> o;
  std::map<uint16_t, nb::object> keep;

  PyOwner(nb::object e, std::unique_ptr<msg::Endpoints::Owner> owner) : eps(std::move(e)), o(std::move(owner)) {}
  PyOwner(PyOwner&&) = default;  // returned by value to Python
  PyOwner& operator=(PyOwner&&) = delete;
  PyOwner(const PyOwner&) = delete;
  PyOwner& operator=(const PyOwner&) = delete;

  msg::Endpoints::Owner& get(const char* call) const {
    if (!o || !nb::cast<PyEndpoints&>(eps).e || !nb::cast<PyEndpoints&>(eps).runtime_open())
      gpucomm::raise_arg(std::string("Owner.") + call, "self", "the Owner, its Endpoints or their Runtime were closed");
    return *o;
  }
  void close() {
    if (!o) return;
    const auto& pe = nb::cast<PyEndpoints&>(eps);
    if (pe.e && pe.runtime_open()) {
      o->close();
      o.reset();
    } else {
      // Its Endpoints are gone: there is no endpoint left to give back.
      [[maybe_unused]] msg::Endpoints::Owner* left_behind = o.release();
    }
    keep.clear();
  }
  ~PyOwner() {
    try {
      close();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
  }
};

ep::Status finished(PyOwner& self, uint16_t id, const ep::Status& s) {
  self.keep.erase(id);
  return s;
}

}  // namespace

void bind_endpoints(nb::module_& m) {
  nb::class_<ep::Status>(m, "EndpointStatus", "What a completed endpoint receive or probe reports.")
      .def_ro("source", &ep::Status::source)
      .def_ro("tag", &ep::Status::tag)
      .def_ro("bytes", &ep::Status::bytes, "The length sent (more than the buffer when truncated).")
      .def_prop_ro(
          "error",
          [](const ep::Status& s) {
            return s.error == ep::kErrTruncated ? "truncated" : s.error == ep::kErrCancelled ? "cancelled" : "none";
          })
      .def("__repr__", [](const ep::Status& s) {
        return "EndpointStatus(source=" + std::to_string(s.source) + ", tag=" + std::to_string(s.tag) +
               ", bytes=" + std::to_string(s.bytes) + ", error=" + std::to_string(s.error) + ")";
      });

  nb::class_<PyOwner>(m, "EndpointOwner",
                      "The owner of one endpoint (Endpoints.own): receives, probes and cancels, from one thread at a "
                      "time. Use as a context manager; close() gives the endpoint back.")
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__", [](PyOwner& self, nb::handle, nb::handle, nb::handle) { self.close(); }, nb::arg().none(),
          nb::arg().none(), nb::arg().none())
      .def("close", &PyOwner::close, "Gives the endpoint back (every receive must have completed).")
      .def_prop_ro("endpoint", [](const PyOwner& self) { return self.get("endpoint").endpoint(); })
      .def(
          "irecv",
          [](PyOwner& self, nb::handle buf, int source, int tag) {
            const ArrayRef a = array_ref(buf, "Owner.irecv", "buf");
            const uint16_t id = self.get("irecv").irecv(a.data, a.nbytes, source, tag);
            self.keep[id] = nb::borrow(buf);
            return id;
          },
          "buf"_a, "source"_a = ep::kAnySource, "tag"_a = ep::kAnyTag,
          "Posts a receive into `buf` (writable, host memory); returns its id.")
      .def(
          "test",
          [](PyOwner& self, uint16_t id) -> std::optional<ep::Status> {
            ep::Status s{};
            if (!self.get("test").test(id, &s)) return std::nullopt;
            return finished(self, id, s);
          },
          "id"_a, "The status once receive `id` completed, else None.")
      .def(
          "wait",
          [](PyOwner& self, uint16_t id) {
            msg::Endpoints::Owner& o = self.get("wait");
            ep::Status s{};
            {
              gpucomm::python::Unlocked unlocked;
              s = o.wait(id);
            }
            return finished(self, id, s);
          },
          "id"_a, "Waits for receive `id`; its status.")
      .def(
          "waitall",
          [](PyOwner& self, const std::vector<uint16_t>& ids) {
            msg::Endpoints::Owner& o = self.get("waitall");
            std::vector<ep::Status> out(ids.size());
            {
              gpucomm::python::Unlocked unlocked;
              o.waitall(ids.data(), ids.size(), out.data());
            }
            for (size_t i = 0; i < ids.size(); ++i) finished(self, ids[i], out[i]);
            return out;
          },
          "ids"_a, "Waits for every receive of `ids` (each named once); their statuses, in the order of `ids`.")
      .def(
          "recv",
          [](PyOwner& self, nb::handle buf, int source, int tag) {
            const ArrayRef a = array_ref(buf, "Owner.recv", "buf");
            msg::Endpoints::Owner& o = self.get("recv");
            gpucomm::python::Unlocked unlocked;
            return o.recv(a.data, a.nbytes, source, tag);
          },
          "buf"_a, "source"_a = ep::kAnySource, "tag"_a = ep::kAnyTag, "Receives into `buf`; the status.")
      .def(
          "cancel", [](PyOwner& self, uint16_t id) { self.get("cancel").cancel(id); }, "id"_a,
          "A receive no message matched yet completes with error 'cancelled'.")
      .def(
          "iprobe",
          [](PyOwner& self, int source, int tag) -> std::optional<ep::Status> {
            ep::Status s{};
            if (!self.get("iprobe").iprobe(source, tag, &s)) return std::nullopt;
            return s;
          },
          "source"_a = ep::kAnySource, "tag"_a = ep::kAnyTag, "The envelope of a message that arrived, else None.")
      .def(
          "probe",
          [](PyOwner& self, int source, int tag) {
            msg::Endpoints::Owner& o = self.get("probe");
            gpucomm::python::Unlocked unlocked;
            return o.probe(source, tag);
          },
          "source"_a = ep::kAnySource, "tag"_a = ep::kAnyTag, "Waits for a message; its envelope (it stays).")
      .def(
          "progress", [](PyOwner& self) { return self.get("progress").progress(); },
          "Drains the rings once; the records taken.");

  nb::class_<PyEndpoints>(m, "Endpoints",
                          "Endpoints, the fast lane for tagged messages up to max_bytes (collective: every PE "
                          "creates them with the same options, and closes them). Host-memory PEs: send from any "
                          "thread, receive through own(ep).")
      .def(
          "__init__",
          [](PyEndpoints* self, nb::object rt, int endpoints, int slots, int max_bytes) {
            gpucomm::Runtime& r = py_runtime(rt);
            std::unique_ptr<msg::Endpoints> made;
            {
              gpucomm::python::Unlocked unlocked;
              made = std::make_unique<msg::Endpoints>(r, msg::EndpointsOptions{endpoints, slots, max_bytes});
            }
            new (self) PyEndpoints{std::move(rt), std::move(made)};
          },
          "runtime"_a, "endpoints"_a = 4, "slots"_a = 32, "max_bytes"_a = 64)
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__",
          [](PyEndpoints& self, nb::handle type, nb::handle value, nb::handle) {
            gpucomm::py::exit_block(self.rt, type, value, [&] { self.close(); });
          },
          nb::arg().none(), nb::arg().none(), nb::arg().none())
      .def("close", &PyEndpoints::close, "Collective: every PE closes its Endpoints after its traffic completed.")
      .def_prop_ro("endpoints", [](const PyEndpoints& self) { return self.get("endpoints").layout().endpoints; })
      .def_prop_ro("slots", [](const PyEndpoints& self) { return self.get("slots").layout().slots; })
      .def_prop_ro("max_bytes", [](const PyEndpoints& self) { return self.get("max_bytes").layout().max_bytes; })
      .def(
          "send",
          [](PyEndpoints& self, nb::handle buf, int pe, int endpoint, int tag) {
            const ArrayRef a = array_ref(buf, "Endpoints.send", "buf");
            msg::Endpoints& e = self.get("send");
            gpucomm::python::Unlocked unlocked;
            e.send(pe, endpoint, tag, a.data, a.nbytes);
          },
          "buf"_a, "pe"_a, "endpoint"_a, "tag"_a,
          "Sends `buf` (at most max_bytes) to endpoint `endpoint` of PE `pe`; returns when it is written.")
      .def(
          "own",
          [](nb::handle self, int endpoint) {
            msg::Endpoints& e = nb::cast<PyEndpoints&>(self).get("own");
            return PyOwner(nb::borrow(self), e.own(endpoint));
          },
          "endpoint"_a, "Takes ownership of `endpoint` of this PE for the calling thread.");
}
