// gpucomm.patterns for Python: Pattern, Plan, the prebuilt patterns. Arrays are anything
// nanobind takes as an ndarray (NumPy, DLPack: torch, cupy, gpucomm's symmetric arrays), strided
// views included: buffer_of() and regions_of() are the one place that reads arrays, so that they
// can move to the shared array adapter.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "blocking.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/gpucomm.hpp"
#include "gpucomm/patterns/patterns.hpp"
#include "py_runtime.hpp"

namespace nb = nanobind;
namespace gp = gpucomm::patterns;

namespace {

using Array = nb::ndarray<>;

// Where an array's bytes live: a buffer from its first element to one past its last.
gp::Buffer buffer_of(gpucomm::Runtime& rt, const Array& a, size_t span, std::optional<int> pe, const char* what) {
  if (a.size() == 0) gpucomm::raise_arg(what, "array", "is empty");
  gp::Buffer b = gp::local(rt, a.data(), span);
  if (b.place == gp::Place::symmetric && pe) b.pe = *pe;
  if (b.place != gp::Place::symmetric && pe && *pe != rt.rank())
    gpucomm::raise_arg(what, "pe", "only symmetric arrays name another PE's copy");
  if (b.place == gp::Place::host && a.device_type() == nb::device::cuda::value) b.place = gp::Place::device;
  return b;
}

// Two arrays of one shape as a pair of boxes: each dimension (innermost first) with its byte
// strides on both sides; contiguous rows become the width, and dimensions that are back to back
// on both sides merge, leaving at most rows and planes.
std::pair<gp::Region, gp::Region> regions_of(gpucomm::Runtime& rt, const Array& dst, const Array& src,
                                             std::optional<int> dst_pe, std::optional<int> src_pe) {
  if (dst.ndim() != src.ndim() || dst.itemsize() != src.itemsize())
    gpucomm::raise_arg("gpucomm.patterns", "dst/src", "differ in dimensions or element size");
  for (size_t d = 0; d < dst.ndim(); ++d)
    if (dst.shape(d) != src.shape(d)) gpucomm::raise_arg("gpucomm.patterns", "dst/src", "differ in shape");
  const size_t item = dst.itemsize();
  struct Level {
    size_t count, ds, ss;  // strides in bytes
  };
  std::vector<Level> levels;
  for (size_t d = dst.ndim(); d-- > 0;) {
    if (dst.shape(d) == 1) continue;
    if (dst.stride(d) <= 0 || src.stride(d) <= 0)
      gpucomm::raise_arg("gpucomm.patterns", "dst/src", "negative or zero strides are not supported");
    levels.push_back({static_cast<size_t>(dst.shape(d)), static_cast<size_t>(dst.stride(d)) * item,
                      static_cast<size_t>(src.stride(d)) * item});
  }
  size_t width = item, k = 0;
  if (!levels.empty() && levels[0].ds == item && levels[0].ss == item) width = levels[k++].count * item;
  std::vector<Level> outer;  // rows, then planes
  for (; k < levels.size(); ++k) {
    const Level& l = levels[k];
    if (outer.empty() && l.ds == width && l.ss == width) {
      width *= l.count;
    } else if (!outer.empty() && l.ds == outer.back().count * outer.back().ds &&
               l.ss == outer.back().count * outer.back().ss) {
      outer.back().count *= l.count;
    } else {
      outer.push_back(l);
    }
  }
  if (outer.size() > 2)
    gpucomm::raise_arg("gpucomm.patterns", "dst/src", "more than 3 strided levels (width, rows, planes)");
  gp::Box db{0, width, 1, 1, 0, 0}, sb = db;
  if (!outer.empty()) {
    db.rows = sb.rows = outer[0].count;
    db.pitch = outer[0].ds;
    sb.pitch = outer[0].ss;
  }
  if (outer.size() > 1) {
    db.planes = sb.planes = outer[1].count;
    db.plane_pitch = outer[1].ds;
    sb.plane_pitch = outer[1].ss;
  }
  return {gp::Region{buffer_of(rt, dst, db.span(), dst_pe, "dst"), db},
          gp::Region{buffer_of(rt, src, sb.span(), src_pe, "src"), sb}};
}

// One array as a buffer (the prebuilt patterns take whole arrays).
gp::Buffer whole_of(gpucomm::Runtime& rt, const Array& a, const char* what) {
  if (!a.is_valid() || a.size() == 0) gpucomm::raise_arg(what, "array", "is empty");
  const auto r = regions_of(rt, a, a, std::nullopt, std::nullopt);
  if (!r.first.box.contiguous()) gpucomm::raise_arg(what, "array", "must be contiguous");
  return r.first.buffer;
}

gp::Engine engine_of(const std::string& s) {
  for (gp::Engine e :
       {gp::Engine::automatic, gp::Engine::copy_engine, gp::Engine::sm_copy, gp::Engine::fused, gp::Engine::host_copy})
    if (s == gp::engine_name(e)) return e;
  gpucomm::raise_arg("gpucomm.patterns", "engine",
                     "unknown engine '" + s + "' (automatic, copy_engine, sm_copy, fused, host_copy)");
}

gp::Pageable pageable_of(const std::string& s) {
  if (s == "register") return gp::Pageable::register_memory;
  if (s == "stage") return gp::Pageable::stage;
  if (s == "refuse") return gp::Pageable::refuse;
  gpucomm::raise_arg("gpucomm.patterns", "pageable", "must be register, stage or refuse, not '" + s + "'");
}

// A stream: None (the default stream), an int handle, or an object with cuda_stream (torch) or
// ptr (cupy).
gpucomm::Stream stream_of(nb::handle s) {
  if (s.is_none()) return nullptr;
  nb::handle v = s;
  if (nb::hasattr(s, "cuda_stream")) {
    v = s.attr("cuda_stream");
  } else if (nb::hasattr(s, "ptr")) {
    v = s.attr("ptr");
  }
  return reinterpret_cast<gpucomm::Stream>(nb::cast<uintptr_t>(v));
}

struct PyPattern {
  nb::object runtime;
  gp::Pattern pattern;
};

struct PyPlan {
  nb::object runtime;  // keeps the Runtime object alive as long as the plan
  gp::Plan plan;
  bool runtime_open() const { return !nb::cast<bool>(runtime.attr("closed")); }
  // The plan; raises when it or its Runtime was closed (call with the GIL held).
  gp::Plan& get() {
    if (!plan.valid()) gpucomm::raise_arg("Plan", "self", "the plan is closed");
    if (!runtime_open()) gpucomm::raise_arg("Plan", "self", "its Runtime was closed");
    return plan;
  }
  // Releases the plan (collective when it signals other PEs). With its Runtime closed there is
  // nothing left to release it into: the plan is left behind, never torn down against a runtime
  // that is gone.
  void release() {
    if (!plan.valid()) return;
    if (runtime_open()) {
      nb::gil_scoped_release nogil;  // a destructor runs: no interrupt check (it must not throw)
      plan = gp::Plan();
    } else {
      (void)new gp::Plan(std::move(plan));  // NOLINT(cppcoreguidelines-owning-memory)
    }
  }
  PyPlan(nb::object rt, gp::Plan p) : runtime(std::move(rt)), plan(std::move(p)) {}
  PyPlan(PyPlan&&) = default;
  PyPlan& operator=(PyPlan&&) = delete;
  PyPlan(const PyPlan&) = delete;
  PyPlan& operator=(const PyPlan&) = delete;
  ~PyPlan() {
    try {
      release();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
    }
  }
};

PyPlan compile(PyPattern& p, nb::handle runtime, const std::string& strategy, const std::string& engine, bool graph,
               bool autotune, bool local, bool entry_sync, bool exit_sync, const std::string& pageable,
               uint32_t chunks) {
  if (!runtime.is_none() && !runtime.is(p.runtime))
    gpucomm::raise_arg("Pattern.compile", "runtime", "not the Runtime the pattern was made for");
  gp::CompileOptions o;
  o.strategy = gp::parse_strategy(strategy);
  o.engine = engine_of(engine);
  o.graph = graph;
  o.autotune = autotune;
  o.local = local;
  o.entry_sync = entry_sync;
  o.exit_sync = exit_sync;
  o.pageable = pageable_of(pageable);
  o.chunks = chunks;
  gpucomm::Runtime& rt = py_runtime(p.runtime);
  gp::Plan plan;
  {
    gpucomm::python::Unlocked nogil;  // collective: the wait for the other PEs does not hold the interpreter
    plan = gp::compile(rt, p.pattern, o);
  }
  return PyPlan{p.runtime, std::move(plan)};
}

template <class T>
std::array<T, 3> per_axis(nb::handle v, size_t ndim, T fallback) {
  // Python gives values in array-axis order (z, y, x for a 3-D array); C++ wants x, y, z.
  std::array<T, 3> out{fallback, fallback, fallback};
  if (nb::isinstance<nb::sequence>(v) && !nb::isinstance<nb::str>(v)) {
    auto seq = nb::cast<std::vector<T>>(v);
    if (seq.size() != ndim)
      gpucomm::raise_arg("gpucomm.patterns", "per-axis value", "needs one entry per array dimension");
    for (size_t i = 0; i < ndim; ++i) out[i] = seq[ndim - 1 - i];
  } else {
    const T all = nb::cast<T>(v);
    out = {all, all, all};
  }
  return out;
}

gp::Pattern halo(gpucomm::Runtime& rt, const Array& f, nb::handle ghost, nb::handle periodic, nb::handle grid,
                 bool corners) {
  const size_t nd = f.ndim();
  if (nd < 1 || nd > 3) gpucomm::raise_arg("halo", "field", "must have 1, 2 or 3 dimensions");
  const size_t item = f.itemsize();
  if (f.stride(nd - 1) != 1) gpucomm::raise_arg("halo", "field", "the last axis must be contiguous");
  gp::Field fl;
  fl.data = f.data();
  fl.elem = item;
  fl.ndim = static_cast<int>(nd);
  for (size_t i = 0; i < nd; ++i) fl.dims[i] = f.shape(nd - 1 - i);
  if (nd > 1) fl.pitch = static_cast<size_t>(f.stride(nd - 2)) * item;
  if (nd > 2) fl.plane_pitch = static_cast<size_t>(f.stride(nd - 3)) * item;
  gp::HaloOptions o;
  const auto g = per_axis<size_t>(ghost, nd, 1);
  const auto p = per_axis<bool>(periodic, nd, false);
  o.ghost = gp::PerAxis<size_t>(g[0], g[1], g[2]);
  o.periodic = gp::PerAxis<bool>(p[0], p[1], p[2]);
  if (!grid.is_none()) o.grid = per_axis<int>(grid, nd, 1);
  o.corners = corners;
  return gp::halo(rt, fl, o);
}

}  // namespace

void bind_patterns(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("patterns", "Declarative transfers compiled into plans (docs/PATTERNS.md).");
  m.def(
      "strategies",
      [] {
        std::vector<std::string> out{"automatic"};
        for (gp::Strategy s : gp::all_strategies()) out.emplace_back(gp::strategy_name(s));
        return out;
      },
      "The strategy names compile() accepts.");

  nb::class_<PyPlan>(m, "Plan",
                     "A compiled pattern (Pattern.compile). Closing or collecting it is collective when it "
                     "signals other PEs.")
      .def(
          "launch", [](PyPlan& p, nb::handle stream) { p.get().launch(stream_of(stream)); },
          nb::arg("stream") = nb::none(),
          "GPU PEs: enqueue on `stream` (None: the default stream; an int handle, torch or cupy stream). Host-memory "
          "PEs: run now.")
      .def(
          "synchronize",
          [](PyPlan& p) {
            gp::Plan& plan = p.get();  // with the interpreter held: it asks the Runtime object
            gpucomm::python::Unlocked nogil;
            plan.synchronize();
          },
          "Wait until the launches completed.")
      .def(
          "rebind",
          [](PyPlan& p, nb::handle old_buf, nb::handle new_buf) {
            gp::Plan& plan = p.get();
            gpucomm::Runtime& rt = py_runtime(p.runtime);
            // An address (int) names memory whose size only the symmetric heap knows: other
            // memory is passed as an array, whose size is checked against the plan's reach.
            auto addr = [&](nb::handle h, const char* arg, size_t* bytes) -> void* {
              if (nb::isinstance<nb::int_>(h)) {
                long long v = 0;
                if (!nb::try_cast(h, v)) v = 0;  // beyond 64 bits: no address
                void* ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(v));
                if (v <= 0 || (bytes != nullptr && !rt.heap().contains(ptr, 0))) {
                  gpucomm::raise_arg("Plan.rebind", arg,
                                     "the address " + std::string(nb::str(h).c_str()) +
                                         " is not inside the symmetric heap: pass other memory as an array");
                }
                return ptr;
              }
              Array a;
              if (!nb::try_cast(h, a)) {
                gpucomm::raise_arg("Plan.rebind", arg,
                                   "expected an array (NumPy, DLPack) or a symmetric-heap address (int), got " +
                                       std::string(nb::type_name(h.type()).c_str()));
              }
              if (bytes != nullptr) *bytes = a.nbytes();
              return a.data();
            };
            size_t new_bytes = gp::Plan::kUnknownBytes;
            void* old_ptr = addr(old_buf, "old", nullptr);
            void* new_ptr = addr(new_buf, "new", &new_bytes);
            plan.rebind(old_ptr, new_ptr, new_bytes);
          },
          nb::arg("old"), nb::arg("new"),
          "Every buffer of the plan that starts at `old` (array or address) starts at `new` (an array at least as "
          "large as what the plan reaches, or an address inside the symmetric heap).")
      .def_prop_ro("strategy", [](PyPlan& p) { return std::string(gp::strategy_name(p.get().strategy())); })
      .def_prop_ro("phases", [](PyPlan& p) { return p.get().schedule().phases; })
      .def_prop_ro("uses_graph", [](PyPlan& p) { return p.get().uses_graph(); })
      .def_prop_ro("autotuned", [](PyPlan& p) { return p.get().autotuned(); })
      .def("describe", [](PyPlan& p) { return p.get().describe(); })
      .def(
          "close", [](PyPlan& p) { p.release(); }, "Release the plan now (collective when it signals other PEs).")
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__", [](PyPlan& p, nb::handle, nb::handle, nb::handle) { p.release(); }, nb::arg().none(),
          nb::arg().none(), nb::arg().none());

  nb::class_<PyPattern>(m, "Pattern", "Transfers that may run at the same time, with dependencies.")
      .def(
          "__init__",
          [](PyPattern* self, const nb::object& rt, const std::string& name) {
            py_runtime(rt);  // checks that it is a Runtime
            new (self) PyPattern{rt, gp::Pattern(name)};
          },
          nb::arg("runtime"), nb::arg("name") = "pattern")
      .def(
          "add",
          [](PyPattern& p, const Array& dst, const Array& src, std::optional<int> dst_pe, std::optional<int> src_pe,
             int owner, const std::string& engine, const std::string& label, int direction, int axis) {
            gpucomm::Runtime& rt = py_runtime(p.runtime);
            gp::TransferOptions o;
            o.owner = owner;
            o.engine = engine_of(engine);
            o.label = label;
            o.direction = static_cast<int8_t>(direction);
            o.axis = static_cast<int8_t>(axis);
            const auto [d, sr] = regions_of(rt, dst, src, dst_pe, src_pe);
            return p.pattern.add(d, sr, o);
          },
          nb::arg("dst"), nb::arg("src"), nb::kw_only(), nb::arg("dst_pe") = nb::none(), nb::arg("src_pe") = nb::none(),
          nb::arg("owner") = -1, nb::arg("engine") = "automatic", nb::arg("label") = "", nb::arg("direction") = 0,
          nb::arg("axis") = 0,
          "Copy src into dst (equal shapes of bytes; strided views allowed). dst_pe/src_pe: another PE's copy of a "
          "symmetric array. Returns the transfer's id.")
      .def(
          "depends", [](PyPattern& p, uint32_t later, uint32_t earlier) { p.pattern.depends(later, earlier); },
          nb::arg("later"), nb::arg("earlier"), "`later` starts after `earlier` completed.")
      .def("editable", [](PyPattern& p) { return PyPattern{p.runtime, p.pattern.editable()}; })
      .def_prop_ro("size", [](PyPattern& p) { return p.pattern.size(); })
      .def("__len__", [](PyPattern& p) { return p.pattern.size(); })
      .def_prop_ro("sealed", [](PyPattern& p) { return p.pattern.sealed(); })
      .def_prop_ro("kind", [](PyPattern& p) { return std::string(gp::kind_name(p.pattern.kind())); })
      .def_prop_ro("name", [](PyPattern& p) { return p.pattern.name(); })
      .def("compile", &compile, nb::arg("runtime") = nb::none(), nb::kw_only(), nb::arg("strategy") = "automatic",
           nb::arg("engine") = "automatic", nb::arg("graph") = false, nb::arg("autotune") = false,
           nb::arg("local") = false, nb::arg("entry_sync") = true, nb::arg("exit_sync") = true,
           nb::arg("pageable") = "register", nb::arg("chunks") = 0,
           "Compile for this PE (collective over the job unless local=True).");

  auto rt_of = [](nb::handle h) -> gpucomm::Runtime& { return py_runtime(h); };
  m.def(
      "broadcast",
      [rt_of](const nb::object& rt, const Array& src, const Array& dst, int root) {
        gpucomm::Runtime& r = rt_of(rt);
        gp::Buffer s = whole_of(r, src, "src");
        if (s.place == gp::Place::symmetric) s.pe = root;
        return PyPattern{rt, gp::broadcast(r, s, whole_of(r, dst, "dst").ptr, root)};
      },
      nb::arg("runtime"), nb::arg("src"), nb::arg("dst"), nb::arg("root") = 0,
      "Root's src into every PE's copy of the symmetric array dst (every PE calls it).");
  m.def(
      "scatter",
      [rt_of](const nb::object& rt, const Array& src, const Array& dst, int root) {
        gpucomm::Runtime& r = rt_of(rt);
        gp::Buffer s = whole_of(r, src, "src");
        if (s.place == gp::Place::symmetric) s.pe = root;
        const gp::Buffer d = whole_of(r, dst, "dst");
        return PyPattern{rt, gp::scatter(r, s, d.ptr, d.bytes, root)};
      },
      nb::arg("runtime"), nb::arg("src"), nb::arg("dst"), nb::arg("root") = 0,
      "Block i of root's src into PE i's copy of the symmetric array dst.");
  m.def(
      "gather",
      [rt_of](const nb::object& rt, const Array& src, const Array& dst, int root) {
        gpucomm::Runtime& r = rt_of(rt);
        const gp::Buffer s = whole_of(r, src, "src");
        gp::Buffer d = whole_of(r, dst, "dst");
        if (d.place == gp::Place::symmetric) d.pe = root;
        return PyPattern{rt, gp::gather(r, s.ptr, s.bytes, d, root)};
      },
      nb::arg("runtime"), nb::arg("src"), nb::arg("dst"), nb::arg("root") = 0,
      "PE i's copy of the symmetric array src into block i of root's dst.");
  m.def(
      "all_gather",
      [rt_of](const nb::object& rt, std::optional<Array> src, const Array& dst) {
        gpucomm::Runtime& r = rt_of(rt);
        const gp::Buffer d = whole_of(r, dst, "dst");
        const size_t block = d.bytes / static_cast<size_t>(r.size());
        void* s = src ? whole_of(r, *src, "src").ptr : nullptr;
        return PyPattern{rt, gp::all_gather(r, s, d.ptr, block)};
      },
      nb::arg("runtime"), nb::arg("src").none(), nb::arg("dst"),
      "PE i's src (None: block i of its dst) into block i of every PE's dst (symmetric arrays).");
  m.def(
      "halo",
      [rt_of](const nb::object& rt, const Array& field, nb::handle ghost, nb::handle periodic, nb::handle grid,
              bool corners) { return PyPattern{rt, halo(rt_of(rt), field, ghost, periodic, grid, corners)}; },
      nb::arg("runtime"), nb::arg("field"), nb::arg("ghost") = 1, nb::arg("periodic") = false,
      nb::arg("grid") = nb::none(), nb::arg("corners") = true,
      "The halo exchange of a 1-3-D field (ghost cells included in its shape); ghost, periodic and grid per axis in "
      "array order, or one value for all.");
}
