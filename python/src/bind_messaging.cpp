// gpucomm.messaging: the messaging host API for Python (Messenger, Comm and their values), as in C++
// (gpucomm/messaging/messenger.hpp, docs/MESSAGING.md). Arrays come in through the array adapter
// (py_arrays.hpp: numpy, torch, cupy, any DLPack array, taken as they are); a non-blocking call's
// request keeps its array alive until it completes. Blocking calls release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "blocking.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/gpucomm.hpp"
#include "gpucomm/messaging/messenger.hpp"
#include "py_arrays.hpp"
#include "py_runtime.hpp"

namespace nb = nanobind;
using namespace nb::literals;
namespace msg = gpucomm::msg;
using gpucomm::py::array_ref;
using gpucomm::py::ArrayRef;

namespace {

// A Messenger with the Python Runtime it was made on (kept alive). close() is collective; a
// Messenger still open when its Runtime was closed is dropped without its collective teardown.
struct PyMessenger {
  nb::object rt;
  std::unique_ptr<msg::Messenger> m;
  // The communicators made here: close() releases them first (a Comm frees its context id in
  // the Messenger); a Python Comm used afterwards raises.
  std::vector<std::weak_ptr<msg::Comm>> comms;
  // What must go before the Messenger (partitioned engines, bind_partitioned.cpp); each is told
  // whether the Runtime is still open.
  std::vector<std::function<void(bool)>> before_close;

  // The Messenger; raises when it or its Runtime was closed (call with the GIL held).
  msg::Messenger& get(const char* call) const {
    if (!m || !runtime_open()) {
      gpucomm::raise_arg(std::string("Messenger.") + call, "self", "the Messenger or its Runtime was closed");
    }
    return *m;
  }
  bool runtime_open() const { return !nb::cast<bool>(rt.attr("closed")); }
  void close() {
    if (!m) return;
    const bool open = runtime_open();
    for (auto& f : before_close) f(open);
    before_close.clear();
    for (auto& w : comms) {
      if (auto c = w.lock()) {
        // With its Runtime gone a communicator's state cannot be freed: it is left behind.
        if (!open) (void)new msg::Comm(*c);  // NOLINT(cppcoreguidelines-owning-memory)
        *c = msg::Comm();
      }
    }
    comms.clear();
    if (open) {
      nb::gil_scoped_release unlocked;  // a destructor: no interrupt check (it must not throw)
      m.reset();
    } else {
      // Its Runtime is gone: nothing is left to tear down collectively, so the Messenger is left behind.
      [[maybe_unused]] msg::Messenger* left_behind = m.release();
    }
  }
  ~PyMessenger() {
    try {
      close();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
  }
};

// A communicator with its Messenger (kept alive).
struct PyComm {
  std::shared_ptr<msg::Comm> comm;
  nb::object owner;
  // The communicator; raises when its Messenger or Runtime was closed (call with the GIL held).
  msg::Comm& c() const;
};

msg::Comm& PyComm::c() const {
  if (!comm->valid() || !nb::cast<PyMessenger&>(owner).runtime_open())
    gpucomm::raise_arg("Comm", "self", "its Messenger or its Runtime was closed");
  return *comm;
}

PyComm adopt(nb::handle messenger, msg::Comm c) {
  PyComm out{std::make_shared<msg::Comm>(std::move(c)), nb::borrow(messenger)};
  nb::cast<PyMessenger&>(messenger).comms.push_back(out.comm);
  return out;
}

// A request and the array it reads or writes (released when the request completes).
struct PyRequest {
  msg::Request r{};
  nb::object keep;
  bool null() const { return r.null(); }
};

struct PyMessage {
  msg::Message m{};
};

// A non-blocking call on the array `buf`: the request keeps the array alive until it completes.
template <class F>
PyRequest start(nb::handle buf, const char* call, F&& begin) {
  const ArrayRef a = array_ref(buf, call, "buf");
  gpucomm::py::wait_for_producers({buf});
  PyRequest r;
  r.r = begin(a);
  r.keep = nb::borrow(buf);
  return r;
}

msg::CommOptions comm_options(const std::string& mode, bool allow_overtaking, bool errors_return) {
  msg::CommOptions o;
  if (mode == "mpi") {
    o.mode = msg::Mode::mpi;
  } else if (mode == "no_any_source") {
    o.mode = msg::Mode::no_any_source;
  } else if (mode == "no_unexpected") {
    o.mode = msg::Mode::no_unexpected;
  } else if (mode == "unordered") {
    o.mode = msg::Mode::unordered;
  } else {
    gpucomm::raise_arg("Messenger", "mode",
                       "'" + mode + "' is not a matching mode (mpi, no_any_source, no_unexpected, unordered)");
  }
  o.allow_overtaking = allow_overtaking;
  o.errors_return = errors_return;
  return o;
}

nb::dict counters_dict(const msg::Counters& k) {
  nb::dict d;
  d["sent"] = k.sent;
  d["received"] = k.received;
  d["unexpected"] = k.unexpected;
  d["credit_stalls"] = k.credit_stalls;
  d["rendezvous"] = k.rendezvous;
  d["degraded"] = k.degraded;
  d["matches"] = k.matches;
  d["match_ns"] = k.match_ns;
  d["assert_violations"] = k.assert_violations;
  d["active"] = k.active;
  return d;
}

// An active message as Python handlers see it: the fields, and the payload copied into bytes
// (the parked entry is freed when the handler returns).
struct PyAmMessage {
  msg::AmMessage m;
  nb::bytes payload;
};

msg::Comm::AmHandler am_handler(nb::handle fn) {
  if (fn.is_none()) return {};
  nb::object f = nb::borrow(fn);
  return [f](const msg::AmMessage& a) {
    nb::gil_scoped_acquire gil;
    f(PyAmMessage{a, nb::bytes(static_cast<const char*>(a.payload), static_cast<size_t>(a.bytes))});
  };
}

// Comm.am_send and Comm.am_request: the payload array to handler `id` of rank `dest`, `poll`
// handling what arrives here while the call waits for a credit (the GIL released meanwhile).
template <void (msg::Comm::*Send)(int, uint32_t, const void*, size_t, const msg::Comm::AmHandler&)>
void am_out(PyComm& c, const char* op, int dest, uint32_t id, nb::handle payload, nb::handle poll) {
  const ArrayRef a = array_ref(payload, op, "payload");
  msg::Comm& comm = c.c();
  const msg::Comm::AmHandler h = am_handler(poll);
  gpucomm::python::Unlocked unlocked;
  (comm.*Send)(dest, id, a.data, a.nbytes, h);
}

std::string status_repr(const msg::Status& s) {
  return "Status(source=" + std::to_string(s.source) + ", tag=" + std::to_string(s.tag) +
         ", bytes=" + std::to_string(s.bytes) + ", error='" + msg::error_name(s.error) + "')";
}

// Completes r (the GIL released while waiting); the request and its array are released.
msg::Status wait_request(msg::Messenger& m, PyRequest& r) {
  msg::Status st{};
  {
    gpucomm::python::Unlocked unlocked;
    st = m.wait(r.r);
  }
  r.keep = nb::object();
  return st;
}

void bind_values(nb::module_& m) {
  m.attr("ANY_SOURCE") = msg::kAnySource;
  m.attr("ANY_TAG") = msg::kAnyTag;
  m.attr("PROC_NULL") = msg::kProcNull;
  m.attr("TAG_UB") = msg::kTagUpperBound;
  nb::class_<msg::Status>(m, "Status", "What a completed receive, send or probe reports.")
      .def_ro("source", &msg::Status::source, "Communicator rank of the sender (PROC_NULL for PROC_NULL).")
      .def_ro("tag", &msg::Status::tag)
      .def_ro("bytes", &msg::Status::bytes, "Bytes received (a probe: the message's size).")
      .def_prop_ro(
          "error", [](const msg::Status& s) { return std::string(msg::error_name(s.error)); },
          "'none', 'truncated', 'peer_failure' or 'cancelled'.")
      .def("__repr__", &status_repr);
  nb::class_<PyRequest>(m, "Request", "A send or receive in flight; Messenger.wait/test complete it.")
      .def_prop_ro("null", &PyRequest::null, "True once completed (or never started).");
  (void)nb::class_<PyMessage>(m, "Message", "A message taken off the unexpected queue by mprobe/improbe (for mrecv).");
  (void)nb::class_<msg::Event>(m, "Event", "A completion counter (Messenger.make_event).");
}

void bind_comm(nb::module_& m) {
  nb::class_<PyAmMessage>(m, "AmMessage", "An active message as a handler gets it (its payload copied into bytes).")
      .def_prop_ro(
          "source", [](const PyAmMessage& a) { return a.m.source; }, "The sender's rank.")
      .def_prop_ro(
          "id", [](const PyAmMessage& a) { return a.m.id; }, "The handler id.")
      .def_prop_ro(
          "ctx", [](const PyAmMessage& a) { return a.m.ctx; }, "The communicator's context id.")
      .def_prop_ro(
          "wants_reply", [](const PyAmMessage& a) { return (a.m.flags & msg::kAmWantsReply) != 0; },
          "Sent with am_request: the handler must answer once with Comm.am_reply.")
      .def_prop_ro("payload", [](const PyAmMessage& a) { return a.payload; }, "The payload (bytes).");
  nb::class_<PyComm>(m, "Comm", "A communicator: a team, a context id and a matching mode (Messenger.world/create).")
      .def_prop_ro("rank", [](const PyComm& c) { return c.c().rank(); })
      .def_prop_ro("size", [](const PyComm& c) { return c.c().size(); })
      .def_prop_ro("context_id", [](const PyComm& c) { return c.c().context_id(); })
      .def_prop_ro("mode", [](const PyComm& c) { return std::string(msg::mode_name(c.c().mode())); })
      .def(
          "send",
          [](PyComm& c, nb::handle buf, int dest, int tag) {
            const ArrayRef a = array_ref(buf, "Comm.send", "buf");
            gpucomm::py::wait_for_producers({buf});
            msg::Comm& comm = c.c();
            gpucomm::python::Unlocked unlocked;
            comm.send(a.data, a.nbytes, dest, tag);
          },
          "buf"_a, "dest"_a, "tag"_a, "Blocking send of the whole array (returns when it may be reused).")
      .def(
          "recv",
          [](PyComm& c, nb::handle buf, int source, int tag) {
            const ArrayRef a = array_ref(buf, "Comm.recv", "buf");
            gpucomm::py::wait_for_producers({buf});
            msg::Comm& comm = c.c();
            gpucomm::python::Unlocked unlocked;
            return comm.recv(a.data, a.nbytes, source, tag);
          },
          "buf"_a, "source"_a = msg::kAnySource, "tag"_a = msg::kAnyTag,
          "Blocking receive into the array; returns the Status.")
      .def(
          "isend",
          [](PyComm& c, nb::handle buf, int dest, int tag, std::optional<msg::Event> ev) {
            return start(buf, "Comm.isend", [&](const ArrayRef& a) {
              return c.c().isend(a.data, a.nbytes, dest, tag, ev ? &*ev : nullptr);
            });
          },
          "buf"_a, "dest"_a, "tag"_a, "event"_a = nb::none(),
          "Starts a send; the array must stay unchanged until it completes.")
      .def(
          "irecv",
          [](PyComm& c, nb::handle buf, int source, int tag, std::optional<msg::Event> ev) {
            return start(buf, "Comm.irecv", [&](const ArrayRef& a) {
              return c.c().irecv(a.data, a.nbytes, source, tag, ev ? &*ev : nullptr);
            });
          },
          "buf"_a, "source"_a = msg::kAnySource, "tag"_a = msg::kAnyTag, "event"_a = nb::none(), "Starts a receive.")
      .def(
          "iprobe",
          [](PyComm& c, int source, int tag) -> std::optional<msg::Status> {
            msg::Status st{};
            if (c.c().iprobe(source, tag, &st)) return st;
            return std::nullopt;
          },
          "source"_a = msg::kAnySource, "tag"_a = msg::kAnyTag,
          "The Status of a message a receive would take now (not received), or None.")
      .def(
          "probe",
          [](PyComm& c, int source, int tag) {
            msg::Comm& comm = c.c();
            gpucomm::python::Unlocked unlocked;
            return comm.probe(source, tag);
          },
          "source"_a = msg::kAnySource, "tag"_a = msg::kAnyTag, "Waits for a matching message (not received).")
      .def(
          "improbe",
          [](PyComm& c, int source, int tag) -> std::optional<std::pair<PyMessage, msg::Status>> {
            PyMessage pm;
            msg::Status st{};
            if (c.c().improbe(source, tag, &pm.m, &st)) return std::make_pair(pm, st);
            return std::nullopt;
          },
          "source"_a = msg::kAnySource, "tag"_a = msg::kAnyTag,
          "(Message, Status) of a matching message, taken off the queue for mrecv; or None.")
      .def(
          "mprobe",
          [](PyComm& c, int source, int tag) {
            PyMessage pm;
            msg::Status st{};
            {
              msg::Comm& comm = c.c();
              gpucomm::python::Unlocked unlocked;
              pm.m = comm.mprobe(source, tag, &st);
            }
            return std::make_pair(pm, st);
          },
          "source"_a = msg::kAnySource, "tag"_a = msg::kAnyTag, "Waits for a matching message: (Message, Status).")
      .def(
          "mrecv",
          [](PyComm& c, nb::handle buf, PyMessage& pm) {
            const ArrayRef a = array_ref(buf, "Comm.mrecv", "buf");
            msg::Comm& comm = c.c();
            gpucomm::python::Unlocked unlocked;
            return comm.mrecv(a.data, a.nbytes, pm.m);
          },
          "buf"_a, "message"_a, "Receives the message mprobe/improbe took.")
      .def(
          "imrecv",
          [](PyComm& c, nb::handle buf, PyMessage& pm, std::optional<msg::Event> ev) {
            return start(buf, "Comm.imrecv",
                         [&](const ArrayRef& a) { return c.c().imrecv(a.data, a.nbytes, pm.m, ev ? &*ev : nullptr); });
          },
          "buf"_a, "message"_a, "event"_a = nb::none(), "Starts receiving the message mprobe/improbe took.")
      .def(
          "sendrecv",
          [](PyComm& c, nb::handle send_buf, int dest, int send_tag, nb::handle recv_buf, int source, int recv_tag) {
            const ArrayRef out = array_ref(send_buf, "Comm.sendrecv", "send_buf");
            const ArrayRef in = array_ref(recv_buf, "Comm.sendrecv", "recv_buf");
            gpucomm::py::wait_for_producers({send_buf, recv_buf});
            msg::Comm& comm = c.c();
            gpucomm::python::Unlocked unlocked;
            return comm.sendrecv(out.data, out.nbytes, dest, send_tag, in.data, in.nbytes, source, recv_tag);
          },
          "send_buf"_a, "dest"_a, "send_tag"_a, "recv_buf"_a, "source"_a = msg::kAnySource, "recv_tag"_a = msg::kAnyTag,
          "Sends send_buf and receives into recv_buf at once (no deadlock between two ranks that both call it); "
          "returns the receive's Status.")
      .def(
          "dup",
          [](PyComm& c) {
            msg::Comm& comm = c.c();
            msg::Comm made;
            {
              gpucomm::python::Unlocked unlocked;
              made = comm.dup();
            }
            return adopt(c.owner, std::move(made));
          },
          "A new communicator with the same team and options (collective over the team).")
      .def(
          "split",
          [](PyComm& c, int color, int key) -> std::optional<PyComm> {
            msg::Comm& comm = c.c();
            msg::Comm made;
            {
              gpucomm::python::Unlocked unlocked;
              made = comm.split(color, key);
            }
            if (!made.valid()) return std::nullopt;
            return adopt(c.owner, std::move(made));
          },
          "color"_a, "key"_a = 0,
          "Collective over the team: ranks with the same color form a communicator (ordered by key, then rank); a "
          "negative color returns None.")
      .def(
          "send_on_stream",
          [](PyComm& c, nb::handle buf, int dest, int tag, nb::handle stream) {
            const ArrayRef a = array_ref(buf, "Comm.send_on_stream", "buf");
            const uintptr_t s = gpucomm::py::stream_for(stream, {buf}, 0);
            c.c().send_on_stream(a.data, a.nbytes, dest, tag, reinterpret_cast<gpucomm::Stream>(s));
          },
          "buf"_a, "dest"_a, "tag"_a, "stream"_a = nb::none(),
          "Stream-ordered send (GPU PEs; inside a group it starts at group_end).")
      .def(
          "recv_on_stream",
          [](PyComm& c, nb::handle buf, int source, int tag, nb::handle stream) {
            const ArrayRef a = array_ref(buf, "Comm.recv_on_stream", "buf");
            const uintptr_t s = gpucomm::py::stream_for(stream, {buf}, 0);
            c.c().recv_on_stream(a.data, a.nbytes, source, tag, reinterpret_cast<gpucomm::Stream>(s));
          },
          "buf"_a, "source"_a, "tag"_a, "stream"_a = nb::none(), "Stream-ordered receive (GPU PEs).")
      .def(
          "am_send",
          [](PyComm& c, int dest, uint32_t id, nb::handle payload, nb::handle poll) {
            am_out<&msg::Comm::am_send>(c, "Comm.am_send", dest, id, payload, poll);
          },
          "dest"_a, "id"_a, "payload"_a, "poll"_a = nb::none(),
          "Sends an active message to handler `id` of rank `dest` (host-memory PEs); `poll` handles what "
          "arrives here while it waits for a credit.")
      .def(
          "am_request",
          [](PyComm& c, int dest, uint32_t id, nb::handle payload, nb::handle poll) {
            am_out<&msg::Comm::am_request>(c, "Comm.am_request", dest, id, payload, poll);
          },
          "dest"_a, "id"_a, "payload"_a, "poll"_a = nb::none(),
          "Like am_send; the receiver's handler must answer once with am_reply.")
      .def(
          "am_reply",
          [](PyComm& c, const PyAmMessage& msg, uint32_t id, nb::handle payload) {
            const ArrayRef a = array_ref(payload, "Comm.am_reply", "payload");
            c.c().am_reply(msg.m, id, a.data, a.nbytes);
          },
          "msg"_a, "id"_a, "payload"_a, "From a handler: the answer to `msg` (sent with am_request).")
      .def(
          "counters", [](const PyComm& c) { return counters_dict(c.c().counters()); },
          "This communicator's counters (a dict).");
}

void bind_messenger(nb::module_& m) {
  nb::class_<PyMessenger>(m, "Messenger",
                          "Two-sided messaging on a Runtime (collective: every PE creates one, and closes it). Use as "
                          "a context manager.")
      .def(
          "__init__",
          [](PyMessenger* self, nb::object rt) {
            gpucomm::Runtime& r = py_runtime(rt);
            std::unique_ptr<msg::Messenger> made;
            {
              gpucomm::python::Unlocked unlocked;
              made = std::make_unique<msg::Messenger>(r);
            }
            new (self) PyMessenger{std::move(rt), std::move(made), {}, {}};
          },
          "runtime"_a)
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__",
          [](PyMessenger& self, nb::handle type, nb::handle value, nb::handle) {
            gpucomm::py::exit_block(self.rt, type, value, [&] { self.close(); });
          },
          nb::arg().none(), nb::arg().none(), nb::arg().none())
      .def("close", &PyMessenger::close, "Collective: every PE closes its Messenger after its traffic completed.")
      .def(
          "world",
          [](nb::handle self, const std::string& mode, bool allow_overtaking, bool errors_return) {
            msg::Messenger& mm = nb::cast<PyMessenger&>(self).get("world");
            const msg::CommOptions o = comm_options(mode, allow_overtaking, errors_return);
            msg::Comm c;
            {
              gpucomm::python::Unlocked unlocked;
              c = mm.world(o);
            }
            return adopt(self, std::move(c));
          },
          "mode"_a = "mpi", "allow_overtaking"_a = false, "errors_return"_a = false,
          "A communicator over the world (collective).")
      .def(
          "create",
          [](nb::handle self, const gpucomm::Team& team, const std::string& mode, bool allow_overtaking,
             bool errors_return) {
            msg::Messenger& mm = nb::cast<PyMessenger&>(self).get("create");
            const msg::CommOptions o = comm_options(mode, allow_overtaking, errors_return);
            msg::Comm c;
            {
              gpucomm::python::Unlocked unlocked;
              c = mm.create(team, o);
            }
            return adopt(self, std::move(c));
          },
          "team"_a, "mode"_a = "mpi", "allow_overtaking"_a = false, "errors_return"_a = false,
          "A communicator over a team (collective over the team).")
      .def(
          "test",
          [](PyMessenger& self, PyRequest& r) -> std::optional<msg::Status> {
            msg::Status st{};
            if (!self.get("test").test(r.r, &st)) return std::nullopt;
            r.keep = nb::object();
            return st;
          },
          "request"_a, "The Status when the request completed (it becomes null), else None.")
      .def(
          "wait", [](PyMessenger& self, PyRequest& r) { return wait_request(self.get("wait"), r); }, "request"_a,
          "Waits for the request; returns its Status.")
      .def(
          "waitall",
          [](PyMessenger& self, const std::vector<PyRequest*>& rs) {
            std::vector<msg::Status> out;
            out.reserve(rs.size());
            for (PyRequest* r : rs) out.push_back(wait_request(self.get("waitall"), *r));
            return out;
          },
          "requests"_a, "Waits for every request; their Statuses in order.")
      .def(
          "waitany",
          [](PyMessenger& self, const std::vector<PyRequest*>& rs) -> std::pair<int, std::optional<msg::Status>> {
            msg::Messenger& mm = self.get("waitany");
            std::vector<msg::Request> raw;
            raw.reserve(rs.size());
            for (PyRequest* r : rs) raw.push_back(r->r);
            msg::Status st{};
            int i = -1;
            {
              gpucomm::python::Unlocked unlocked;
              i = mm.waitany(raw, &st);
            }
            if (i < 0) return {-1, std::nullopt};
            rs[static_cast<size_t>(i)]->r = raw[static_cast<size_t>(i)];
            rs[static_cast<size_t>(i)]->keep = nb::object();
            return {i, st};
          },
          "requests"_a, "(index, Status) of a completed request, or (-1, None) when every request is null.")
      .def(
          "testall",
          [](PyMessenger& self, const std::vector<PyRequest*>& rs) -> std::optional<std::vector<msg::Status>> {
            msg::Messenger& mm = self.get("testall");
            std::vector<msg::Request> raw;
            raw.reserve(rs.size());
            for (PyRequest* r : rs) raw.push_back(r->r);
            std::vector<msg::Status> st(rs.size());
            const bool all = mm.testall(raw, st);
            for (size_t i = 0; i < rs.size(); ++i) {
              rs[i]->r = raw[i];
              if (raw[i].null()) rs[i]->keep = nb::object();
            }
            if (!all) return std::nullopt;
            return st;
          },
          "requests"_a,
          "Their Statuses in order when every request completed, else None (those that completed are null).")
      .def(
          "testany",
          [](PyMessenger& self, const std::vector<PyRequest*>& rs) -> std::optional<std::pair<int, msg::Status>> {
            msg::Messenger& mm = self.get("testany");
            std::vector<msg::Request> raw;
            raw.reserve(rs.size());
            for (PyRequest* r : rs) raw.push_back(r->r);
            msg::Status st{};
            int i = -1;
            if (!mm.testany(raw, &i, &st)) return std::nullopt;
            if (i >= 0) {
              rs[static_cast<size_t>(i)]->r = raw[static_cast<size_t>(i)];
              rs[static_cast<size_t>(i)]->keep = nb::object();
            }
            return std::make_pair(i, st);
          },
          "requests"_a,
          "(index, Status) of a request that completed, (-1, Status()) when every request is null, None when none "
          "completed yet.")
      .def(
          "waitsome",
          [](PyMessenger& self, const std::vector<PyRequest*>& rs) {
            msg::Messenger& mm = self.get("waitsome");
            std::vector<msg::Request> raw;
            raw.reserve(rs.size());
            for (PyRequest* r : rs) raw.push_back(r->r);
            std::vector<int> idx(rs.size());
            std::vector<msg::Status> st(rs.size());
            int n = 0;
            {
              gpucomm::python::Unlocked unlocked;
              n = mm.waitsome(raw, idx, st);
            }
            std::vector<std::pair<int, msg::Status>> out;
            for (int k = 0; k < n; ++k) {
              const auto i = static_cast<size_t>(idx[static_cast<size_t>(k)]);
              rs[i]->r = raw[i];
              rs[i]->keep = nb::object();
              out.emplace_back(static_cast<int>(i), st[static_cast<size_t>(k)]);
            }
            return out;
          },
          "requests"_a,
          "Waits until at least one request completed; [(index, Status)] of those that did ([] when every request "
          "is null).")
      .def(
          "cancel", [](PyMessenger& self, const PyRequest& r) { self.get("cancel").cancel(r.r); }, "request"_a,
          "Cancels a receive that has not matched (wait then reports error 'cancelled').")
      .def(
          "progress", [](PyMessenger& self) { self.get("progress").progress(); }, "One progress round.")
      .def(
          "register_am",
          [](PyMessenger& self, const std::vector<uint32_t>& ids) { self.get("register_am").register_am(ids); },
          "ids"_a, "Declares the active-message handler ids this program handles (collective; the same on every PE).")
      .def(
          "am_poll",
          [](PyMessenger& self, nb::handle handler, int max) {
            msg::Messenger& m = self.get("am_poll");
            const msg::Comm::AmHandler h = am_handler(handler);
            gpucomm::python::Unlocked unlocked;
            return m.am_poll(h, max);
          },
          "handler"_a, "max"_a = 8,
          "One progress round, then handler(msg) for each active message that arrived (host-memory PEs); returns how "
          "many.")
      .def(
          "group_start", [](PyMessenger& self) { self.get("group_start").group_start(); },
          "Starts collecting stream-ordered calls.")
      .def(
          "group_end",
          [](PyMessenger& self, nb::handle stream) {
            msg::Messenger& mm = self.get("group_end");
            const uintptr_t s = gpucomm::py::stream_for(stream, {}, 0);
            mm.group_end(reinterpret_cast<gpucomm::Stream>(s));
          },
          "stream"_a = nb::none(), "Runs the collected calls together (one kernel on GPU PEs).")
      .def(
          "make_event", [](PyMessenger& self) { return self.get("make_event").make_event(); },
          "A completion counter for isend/irecv.")
      .def(
          "event_value", [](PyMessenger& self, const msg::Event& e) { return self.get("event_value").event_value(e); },
          "event"_a)
      .def(
          "event_wait",
          [](PyMessenger& self, const msg::Event& e, uint64_t value) {
            msg::Messenger& mm = self.get("event_wait");
            gpucomm::python::Unlocked unlocked;
            mm.event_wait(e, value);
          },
          "event"_a, "value"_a, "Waits until the event counted value completions.")
      .def(
          "check_device", [](PyMessenger& self) { self.get("check_device").check_device(); },
          "Raises the failure a kernel recorded in a messaging call (GPU PEs).")
      .def_prop_ro("heap_bytes", [](PyMessenger& self) { return self.get("heap_bytes").heap_bytes(); })
      .def_prop_ro("local_bytes", [](PyMessenger& self) { return self.get("local_bytes").local_bytes(); });
}

}  // namespace

// For bind_partitioned.cpp: the communicator of a Python Comm, the Messenger of a Python Messenger
// (both raise once closed), whether that Messenger and its Runtime are open, and a hook that runs
// before that Messenger closes.
msg::Comm& py_comm(nb::handle comm) {
  return nb::cast<PyComm&>(comm).c();
}
msg::Messenger& py_messenger(nb::handle messenger, const char* call) {
  return nb::cast<PyMessenger&>(messenger).get(call);
}
bool py_messenger_open(nb::handle messenger) {
  const auto& pm = nb::cast<PyMessenger&>(messenger);
  return pm.m && pm.runtime_open();
}
void py_messenger_before_close(nb::handle messenger, std::function<void(bool)> hook) {
  nb::cast<PyMessenger&>(messenger).before_close.push_back(std::move(hook));
}

void bind_partitioned(nb::module_& m);  // bind_partitioned.cpp
void bind_endpoints(nb::module_& m);    // bind_endpoints.cpp

void bind_messaging(nb::module_& parent) {
  nb::module_ m = parent.def_submodule(
      "messaging",
      "Two-sided messaging (docs/MESSAGING.md): Messenger, Comm, Request, Status, Message, Event, Partitioned, "
      "PartitionedRequest, Endpoints, EndpointOwner, EndpointStatus.");
  bind_values(m);
  bind_comm(m);
  bind_messenger(m);
  bind_partitioned(m);
  bind_endpoints(m);
}
