// gpucomm.messaging.Partitioned and PartitionedRequest: partitioned point-to-point (MPI 4.0
// chapter 4) for Python, as in C++ (gpucomm/messaging/partitioned.hpp, docs/MESSAGING.md). A
// request's buffer is a whole array (the array adapter: numpy, torch, cupy, any DLPack array, taken
// as it is) split into `partitions` equal partitions; the request keeps the array alive. Blocking
// calls release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "blocking.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/partitioned.hpp"
#include "py_arrays.hpp"

namespace nb = nanobind;
using namespace nb::literals;
namespace msg = gpucomm::msg;
using gpucomm::py::array_ref;
using gpucomm::py::ArrayRef;

// bind_messaging.cpp
msg::Comm& py_comm(nb::handle comm);
msg::Messenger& py_messenger(nb::handle messenger, const char* call);
bool py_messenger_open(nb::handle messenger);
void py_messenger_before_close(nb::handle messenger, std::function<void(bool)> hook);

namespace {

// The engine, shared with the hook that closes it before its Messenger.
using Holder = std::shared_ptr<std::unique_ptr<msg::Partitioned>>;

void close_holder(const Holder& h, bool runtime_open) {
  if (!*h) return;
  if (runtime_open) {
    nb::gil_scoped_release unlocked;  // collective teardown; a destructor: no interrupt check
    h->reset();
  } else {
    // Its Runtime is gone: nothing is left to tear down collectively.
    [[maybe_unused]] msg::Partitioned* left_behind = h->release();
  }
}

struct PyPartitioned {
  nb::object messenger;
  Holder p;
  msg::Partitioned& get(const char* call) const {
    if (!*p) gpucomm::raise_arg(std::string("Partitioned.") + call, "self", "the Partitioned object was closed");
    (void)py_messenger(messenger, call);  // raises once the Messenger or its Runtime was closed
    return **p;
  }
  void close() {
    if (*p) close_holder(p, py_messenger_open(messenger));
  }
  ~PyPartitioned() {
    try {
      close();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
  }
};

struct PyPartRequest {
  mutable msg::PartitionedRequest r;
  nb::object keep;   // the array
  nb::object owner;  // the Partitioned object
  msg::PartitionedRequest& get(const char* call) const {
    (void)nb::cast<PyPartitioned&>(owner).get(call);
    return r;
  }
};

// The array as `partitions` equal partitions.
size_t partition_bytes(const ArrayRef& a, int partitions, const char* call) {
  if (partitions < 1) gpucomm::raise_arg(call, "partitions", std::to_string(partitions) + " is not at least 1");
  if (a.nbytes == 0 || a.nbytes % static_cast<size_t>(partitions) != 0) {
    gpucomm::raise_arg(call, "partitions",
                       "the array's " + std::to_string(a.nbytes) + " bytes do not split into " +
                           std::to_string(partitions) + " equal non-empty partitions");
  }
  return a.nbytes / static_cast<size_t>(partitions);
}

template <class Init>
PyPartRequest make_request(nb::handle self, nb::handle comm, nb::handle buf, int partitions, const char* call,
                           Init init) {
  msg::Partitioned& p = nb::cast<PyPartitioned&>(self).get(call);
  const ArrayRef a = array_ref(buf, call, "buf");
  const size_t each = partition_bytes(a, partitions, call);
  msg::Comm& c = py_comm(comm);
  PyPartRequest out;
  {
    gpucomm::python::Unlocked unlocked;
    out.r = init(p, c, a.data, each);
  }
  out.keep = nb::borrow(buf);
  out.owner = nb::borrow(self);
  return out;
}

void bind_request(nb::module_& m) {
  nb::class_<PyPartRequest>(m, "PartitionedRequest",
                            "A persistent partitioned send or receive (Partitioned.psend_init / precv_init).")
      .def_prop_ro("kind",
                   [](const PyPartRequest& q) {
                     return std::string(q.get("kind").kind() == msg::PartKind::send ? "send" : "recv");
                   })
      .def_prop_ro("partitions", [](const PyPartRequest& q) { return q.get("partitions").partitions(); })
      .def_prop_ro("partition_bytes", [](const PyPartRequest& q) { return q.get("partition_bytes").partition_bytes(); })
      .def_prop_ro(
          "round", [](const PyPartRequest& q) { return q.get("round").round(); }, "Rounds started so far.")
      .def_prop_ro("active", [](const PyPartRequest& q) { return q.get("active").active(); })
      .def_prop_ro(
          "staged", [](const PyPartRequest& q) { return q.get("staged").staged(); },
          "A receive into an array outside the symmetric heap (through a staging area).")
      .def(
          "start",
          [](PyPartRequest& q) {
            msg::PartitionedRequest& r = q.get("start");
            gpucomm::python::Unlocked unlocked;
            r.start();
          },
          "Starts the next round (the request must be inactive).")
      .def(
          "pready",
          [](PyPartRequest& q, int partition) {
            msg::PartitionedRequest& r = q.get("pready");
            gpucomm::py::wait_for_producers({q.keep});
            gpucomm::python::Unlocked unlocked;
            r.pready(partition);
          },
          "partition"_a, "Sender: the partition is ready (its bytes go to the receiver).")
      .def(
          "pready_range",
          [](PyPartRequest& q, int low, int high) {
            msg::PartitionedRequest& r = q.get("pready_range");
            gpucomm::py::wait_for_producers({q.keep});
            gpucomm::python::Unlocked unlocked;
            r.pready_range(low, high);
          },
          "low"_a, "high"_a, "Sender: partitions low..high (inclusive) are ready.")
      .def(
          "pready_list",
          [](PyPartRequest& q, const std::vector<int>& partitions) {
            msg::PartitionedRequest& r = q.get("pready_list");
            gpucomm::py::wait_for_producers({q.keep});
            gpucomm::python::Unlocked unlocked;
            r.pready_list(partitions);
          },
          "partitions"_a, "Sender: the listed partitions are ready.")
      .def(
          "parrived",
          [](PyPartRequest& q, int partition) {
            msg::PartitionedRequest& r = q.get("parrived");
            gpucomm::python::Unlocked unlocked;
            return r.parrived(partition);
          },
          "partition"_a, "Receiver: whether the partition of the current round arrived.")
      .def(
          "test",
          [](PyPartRequest& q) {
            msg::PartitionedRequest& r = q.get("test");
            gpucomm::python::Unlocked unlocked;
            return r.test();
          },
          "Whether the round completed (the request is then inactive).")
      .def(
          "wait",
          [](PyPartRequest& q) {
            msg::PartitionedRequest& r = q.get("wait");
            gpucomm::python::Unlocked unlocked;
            r.wait();
          },
          "Completes the round (GPUCOMM_TIMEOUT limit).")
      .def(
          "free",
          [](PyPartRequest& q) {
            q.get("free").free();
            q.keep = nb::object();
          },
          "Frees the request (it must be inactive).");
}

void bind_engine(nb::module_& m) {
  nb::class_<PyPartitioned>(m, "Partitioned",
                            "Partitioned point-to-point on a Messenger (collective: every PE creates one and closes it "
                            "before its Messenger). Use as a context manager.")
      .def(
          "__init__",
          [](PyPartitioned* self, nb::object messenger, size_t pool_bytes) {
            msg::Messenger& mm = py_messenger(messenger, "Partitioned");
            msg::PartitionedOptions o;
            o.pool_bytes = pool_bytes;
            auto holder = std::make_shared<std::unique_ptr<msg::Partitioned>>();
            {
              gpucomm::python::Unlocked unlocked;
              *holder = std::make_unique<msg::Partitioned>(mm, o);
            }
            py_messenger_before_close(messenger, [w = std::weak_ptr(holder)](bool open) {
              if (auto h = w.lock()) close_holder(h, open);
            });
            new (self) PyPartitioned{std::move(messenger), std::move(holder)};
          },
          "messenger"_a, "pool_bytes"_a = 0)
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__", [](PyPartitioned& self, nb::handle, nb::handle, nb::handle) { self.close(); }, nb::arg().none(),
          nb::arg().none(), nb::arg().none())
      .def("close", &PyPartitioned::close, "Collective: every PE closes it (before its Messenger).")
      .def(
          "psend_init",
          [](nb::handle self, nb::handle comm, nb::handle buf, int partitions, int dest, int tag) {
            return make_request(self, comm, buf, partitions, "Partitioned.psend_init",
                                [&](msg::Partitioned& p, const msg::Comm& c, void* data, size_t each) {
                                  return p.psend_init(c, data, partitions, each, dest, tag);
                                });
          },
          "comm"_a, "buf"_a, "partitions"_a, "dest"_a, "tag"_a,
          "A persistent partitioned send of the whole array in `partitions` equal partitions.")
      .def(
          "precv_init",
          [](nb::handle self, nb::handle comm, nb::handle buf, int partitions, int source, int tag) {
            return make_request(self, comm, buf, partitions, "Partitioned.precv_init",
                                [&](msg::Partitioned& p, const msg::Comm& c, void* data, size_t each) {
                                  return p.precv_init(c, data, partitions, each, source, tag);
                                });
          },
          "comm"_a, "buf"_a, "partitions"_a, "source"_a, "tag"_a,
          "A persistent partitioned receive into the whole array in `partitions` equal partitions.")
      .def(
          "progress",
          [](PyPartitioned& self) {
            msg::Partitioned& p = self.get("progress");
            gpucomm::python::Unlocked unlocked;
            p.progress();
          },
          "Matches arrived init calls and moves partitions that waited for their receiver.")
      .def(
          "check_device", [](PyPartitioned& self) { self.get("check_device").check_device(); },
          "Raises the failure a kernel recorded in a partitioned call (GPU PEs).")
      .def_prop_ro("pool_bytes", [](PyPartitioned& self) { return self.get("pool_bytes").pool_bytes(); })
      .def_prop_ro("pool_in_use", [](PyPartitioned& self) { return self.get("pool_in_use").pool_in_use(); });
}

}  // namespace

void bind_partitioned(nb::module_& m) {
  bind_request(m);
  bind_engine(m);
}
