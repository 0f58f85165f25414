// gpucomm._core.Collectives: the collectives on any DLPack array (numpy, torch, cupy). Device
// arrays go straight to the stream-ordered host API (on the stream given, a cudaStream_t as an
// integer; 0: the runtime's); host arrays on GPU PEs are staged through device memory and the
// call waits. python/gpucomm/collectives.py adds allocation of outputs and torch's/cupy's current
// stream.
#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/gpucomm.hpp"
#include "py_runtime.hpp"

namespace nb = nanobind;

namespace {

using namespace gpucomm;
using namespace gpucomm::coll;
using Array = nb::ndarray<nb::c_contig>;

DataType dtype_of(const Array& a, const char* what) {
  using C = nb::dlpack::dtype_code;
  const auto dt = a.dtype();
  const auto code = static_cast<C>(dt.code);
  if (dt.lanes == 1) {
    if (code == C::Float && dt.bits == 16) return DataType::f16;
    if (code == C::Float && dt.bits == 32) return DataType::f32;
    if (code == C::Float && dt.bits == 64) return DataType::f64;
    if (code == C::Bfloat && dt.bits == 16) return DataType::bf16;
    if (code == C::Float8_E4M3FN && dt.bits == 8) return DataType::f8e4m3;
    if (code == C::Float8_E5M2 && dt.bits == 8) return DataType::f8e5m2;
    if (code == C::Int && dt.bits == 32) return DataType::i32;
    if (code == C::Int && dt.bits == 64) return DataType::i64;
    if (code == C::UInt && dt.bits == 32) return DataType::u32;
    if (code == C::UInt && dt.bits == 64) return DataType::u64;
  }
  throw nb::type_error((std::string("gpucomm: ") + what +
                        ": unsupported dtype (float8_e4m3fn, float8_e5m2, float16, bfloat16, float32, float64, int32, "
                        "int64, uint32 or uint64)")
                           .c_str());
}

template <class E, bool (*Parse)(const char*, E*)>
E parse(const std::string& text, const char* what) {
  E v{};
  if (!Parse(text.c_str(), &v)) gpucomm::raise_arg("gpucomm.collectives", what, "unknown value '" + text + "'");
  return v;
}

// A host array on a GPU PE goes through a device copy; anything else is used in place.
struct Staged {
  void* ptr = nullptr;
  void* host = nullptr;
  size_t bytes = 0;
  bool staged = false;
  Staged(const Array& a, bool gpu, bool copy_in) : ptr(a.data()), bytes(a.nbytes()) {
    if (!gpu || a.device_type() == nb::device::cuda::value || bytes == 0) return;
    host = a.data();
    staged = true;
    check_cuda(cudaMalloc(&ptr, bytes), "cudaMalloc", "staging a host array");
    if (copy_in) check_cuda(cudaMemcpy(ptr, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy", "staging in");
  }
  void copy_out() const {
    if (staged) check_cuda(cudaMemcpy(host, ptr, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy", "staging out");
  }
  ~Staged() {
    if (staged) (void)cudaFree(ptr);
  }
  Staged(const Staged&) = delete;
  Staged& operator=(const Staged&) = delete;
};

class PyCollectives {
 public:
  explicit PyCollectives(nb::handle runtime) : runtime_(nb::borrow(runtime)) {
    rt_ = &py_runtime(runtime);
    coll_ = std::make_unique<Collectives>(*rt_);
  }
  ~PyCollectives() {
    try {
      close();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; close() reports errors
    }
  }
  // Collective: frees the workspaces. Without it, they live until the Runtime closes.
  void close() {
    if (!coll_) return;
    if (nb::cast<bool>(runtime_.attr("closed"))) {
      // The heap is gone with the runtime: nothing to free, and the destructor would touch it.
      [[maybe_unused]] Collectives* gone = coll_.release();
    } else {
      coll_.reset();
    }
  }
  Collectives& c() {
    if (!coll_) gpucomm::raise_arg("Collectives", "self", "the Collectives object is closed");
    return *coll_;
  }
  bool gpu() const { return rt_->pe_kind() == PeKind::gpu; }
  nb::handle runtime() const { return runtime_; }
  // "world", "node" or a gpucomm.Team this PE belongs to (Runtime.split).
  Team team(nb::handle t) {
    if (nb::isinstance<nb::str>(t)) {
      const std::string name = nb::cast<std::string>(t);
      if (name == "world") return rt_->world();
      if (name == "node") return rt_->node();
      gpucomm::raise_arg("Collectives", "team", "must be 'world', 'node' or a gpucomm.Team, not '" + name + "'");
    }
    Team* team = nullptr;
    if (!nb::try_cast<Team*>(t, team, false) || team == nullptr) {
      throw nb::type_error((std::string("gpucomm: Collectives: team must be 'world', 'node' or a gpucomm.Team, got ") +
                            nb::type_name(t.type()).c_str())
                               .c_str());
    }
    if (!team->valid()) gpucomm::raise_arg("Collectives", "team", "this Team is not valid (this PE is not a member)");
    return *team;
  }
  CollOptions options(const std::string& algorithm, int max_ctas) {
    CollOptions o;
    o.algorithm = parse<Algorithm, parse_algorithm>(algorithm, "algorithm");
    o.max_ctas = max_ctas;
    return o;
  }
  // Runs `f(send_ptr, recv_ptr, stream)` with staging where needed; waits when anything was staged.
  template <class F>
  void call(const Array& send, const Array& recv, uintptr_t stream, F&& f) {
    const bool g = gpu();
    Staged s(send, g, true);
    const bool same = send.data() == recv.data();
    Staged r(recv, g && !same, !same);
    void* rp = same ? s.ptr : r.ptr;
    const bool staged = s.staged || r.staged;
    auto st = reinterpret_cast<Stream>(stream);
    {
      nb::gil_scoped_release unlocked;  // host-memory PEs wait for the others inside
      f(s.ptr, rp, staged ? nullptr : st);
      if (g && staged) {
        check_cuda(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(rt_->stream())), "cudaStreamSynchronize",
                   "staged collective");
        c().check_device();
      }
    }
    if (same) {
      s.copy_out();
    } else {
      r.copy_out();
    }
  }

 private:
  nb::object runtime_;
  Runtime* rt_ = nullptr;
  std::unique_ptr<Collectives> coll_;
};

// An array argument as it is. No conversion: a C-ordered copy made to satisfy the constraint would
// receive the result and be thrown away, so a non-contiguous array is refused instead.
Array array_arg(nb::handle obj, const char* op, const char* arg) {
  Array a;
  if (nb::try_cast<Array>(obj, a, false)) return a;
  nb::ndarray<> any;
  if (nb::try_cast<nb::ndarray<>>(obj, any, false)) {
    gpucomm::raise_arg(std::string("Collectives.") + op, arg,
                       "is not C-contiguous (a Fortran-ordered or strided view); pass a contiguous array "
                       "(numpy.ascontiguousarray, tensor.contiguous())");
  }
  throw nb::type_error((std::string("gpucomm: Collectives.") + op + ": " + arg +
                        " must be an array (numpy, torch, cupy, or an object with __dlpack__), got " +
                        nb::type_name(obj.type()).c_str())
                           .c_str());
}

size_t count_of(const Array& a) {
  return a.size();
}
void same_type(DataType a, DataType b, const char* op) {
  if (a != b) throw nb::type_error((std::string("gpucomm: ") + op + ": send and recv differ in dtype").c_str());
}
void need_count(size_t have, size_t want, const char* op, const char* what) {
  if (have != want) {
    gpucomm::raise_arg(std::string("Collectives.") + op, what,
                       "has " + std::to_string(have) + " elements, expected " + std::to_string(want));
  }
}

}  // namespace

void bind_collectives(nb::module_& m) {
  auto kw = [](const char* n) { return nb::arg(n); };
  nb::class_<PyCollectives>(m, "Collectives",
                            "Collectives of a Runtime (collective over the world). Arrays: numpy, torch, cupy or any "
                            "DLPack array, C-contiguous; see gpucomm.collectives for the friendly wrappers.")
      .def(nb::init<nb::handle>(), nb::arg("runtime"))
      .def("close", &PyCollectives::close, "Collective: frees the team workspaces.")
      .def("__enter__", [](nb::handle self) { return self; })
      .def(
          "__exit__",
          [](PyCollectives& self, nb::handle type, nb::handle value, nb::handle) {
            gpucomm::py::exit_block(self.runtime(), type, value, [&] { self.close(); });
          },
          nb::arg().none(), nb::arg().none(), nb::arg().none())
      .def(
          "barrier",
          [](PyCollectives& s, nb::handle team, uintptr_t stream) {
            const Team t = s.team(team);  // with the GIL: it reads a Python object
            nb::gil_scoped_release unlocked;
            s.c().barrier(t, reinterpret_cast<Stream>(stream));
          },
          kw("team") = "world", kw("stream") = 0)
      .def(
          "allreduce",
          [](PyCollectives& s, nb::handle send_obj, nb::handle recv_obj, const std::string& op, nb::handle team,
             uintptr_t stream, const std::string& algorithm, int max_ctas) {
            const Array send = array_arg(send_obj, "allreduce", "send");
            const Array recv = array_arg(recv_obj, "allreduce", "recv");
            const DataType dt = dtype_of(send, "allreduce");
            same_type(dt, dtype_of(recv, "allreduce"), "allreduce");
            need_count(count_of(recv), count_of(send), "allreduce", "recv");
            const RedOp red = parse<RedOp, parse_redop>(op, "reduction");
            const CollOptions o = s.options(algorithm, max_ctas);
            const Team t = s.team(team);
            s.call(send, recv, stream,
                   [&](void* sp, void* rp, Stream st) { s.c().allreduce(sp, rp, count_of(send), dt, red, t, st, o); });
          },
          kw("send"), kw("recv"), kw("op") = "sum", kw("team") = "world", kw("stream") = 0, kw("algorithm") = "auto",
          kw("max_ctas") = 0)
      .def(
          "reduce",
          [](PyCollectives& s, nb::handle send_obj, nb::handle recv_obj, const std::string& op, int root,
             nb::handle team, uintptr_t stream, const std::string& algorithm, int max_ctas) {
            const Array send = array_arg(send_obj, "reduce", "send");
            const Array recv = array_arg(recv_obj, "reduce", "recv");
            const DataType dt = dtype_of(send, "reduce");
            same_type(dt, dtype_of(recv, "reduce"), "reduce");
            need_count(count_of(recv), count_of(send), "reduce", "recv");
            const RedOp red = parse<RedOp, parse_redop>(op, "reduction");
            const CollOptions o = s.options(algorithm, max_ctas);
            const Team t = s.team(team);
            s.call(send, recv, stream, [&](void* sp, void* rp, Stream st) {
              s.c().reduce(sp, rp, count_of(send), dt, red, root, t, st, o);
            });
          },
          kw("send"), kw("recv"), kw("op") = "sum", kw("root") = 0, kw("team") = "world", kw("stream") = 0,
          kw("algorithm") = "auto", kw("max_ctas") = 0)
      .def(
          "broadcast",
          [](PyCollectives& s, nb::handle send_obj, nb::handle recv_obj, int root, nb::handle team, uintptr_t stream,
             const std::string& algorithm, int max_ctas) {
            const Array send = array_arg(send_obj, "broadcast", "send");
            const Array recv = array_arg(recv_obj, "broadcast", "recv");
            const DataType dt = dtype_of(recv, "broadcast");
            same_type(dt, dtype_of(send, "broadcast"), "broadcast");
            need_count(count_of(send), count_of(recv), "broadcast", "send");
            const CollOptions o = s.options(algorithm, max_ctas);
            const Team t = s.team(team);
            s.call(send, recv, stream,
                   [&](void* sp, void* rp, Stream st) { s.c().broadcast(sp, rp, count_of(recv), dt, root, t, st, o); });
          },
          kw("send"), kw("recv"), kw("root") = 0, kw("team") = "world", kw("stream") = 0, kw("algorithm") = "auto",
          kw("max_ctas") = 0)
      .def(
          "allgather",
          [](PyCollectives& s, nb::handle send_obj, nb::handle recv_obj, nb::handle team, uintptr_t stream,
             const std::string& algorithm, int max_ctas) {
            const Array send = array_arg(send_obj, "allgather", "send");
            const Array recv = array_arg(recv_obj, "allgather", "recv");
            const DataType dt = dtype_of(send, "allgather");
            same_type(dt, dtype_of(recv, "allgather"), "allgather");
            const Team t = s.team(team);
            need_count(count_of(recv), count_of(send) * static_cast<size_t>(t.size()), "allgather", "recv");
            const CollOptions o = s.options(algorithm, max_ctas);
            s.call(send, recv, stream,
                   [&](void* sp, void* rp, Stream st) { s.c().allgather(sp, rp, count_of(send), dt, t, st, o); });
          },
          kw("send"), kw("recv"), kw("team") = "world", kw("stream") = 0, kw("algorithm") = "auto", kw("max_ctas") = 0)
      .def(
          "reduce_scatter",
          [](PyCollectives& s, nb::handle send_obj, nb::handle recv_obj, const std::string& op, nb::handle team,
             uintptr_t stream, const std::string& algorithm, int max_ctas) {
            const Array send = array_arg(send_obj, "reduce_scatter", "send");
            const Array recv = array_arg(recv_obj, "reduce_scatter", "recv");
            const DataType dt = dtype_of(send, "reduce_scatter");
            same_type(dt, dtype_of(recv, "reduce_scatter"), "reduce_scatter");
            const Team t = s.team(team);
            need_count(count_of(send), count_of(recv) * static_cast<size_t>(t.size()), "reduce_scatter", "send");
            const RedOp red = parse<RedOp, parse_redop>(op, "reduction");
            const CollOptions o = s.options(algorithm, max_ctas);
            s.call(send, recv, stream, [&](void* sp, void* rp, Stream st) {
              s.c().reduce_scatter(sp, rp, count_of(recv), dt, red, t, st, o);
            });
          },
          kw("send"), kw("recv"), kw("op") = "sum", kw("team") = "world", kw("stream") = 0, kw("algorithm") = "auto",
          kw("max_ctas") = 0)
      .def(
          "alltoall",
          [](PyCollectives& s, nb::handle send_obj, nb::handle recv_obj, nb::handle team, uintptr_t stream,
             int max_ctas) {
            const Array send = array_arg(send_obj, "alltoall", "send");
            const Array recv = array_arg(recv_obj, "alltoall", "recv");
            const DataType dt = dtype_of(send, "alltoall");
            same_type(dt, dtype_of(recv, "alltoall"), "alltoall");
            const Team t = s.team(team);
            need_count(count_of(recv), count_of(send), "alltoall", "recv");
            const size_t n = static_cast<size_t>(t.size());
            if (count_of(send) % n != 0)
              gpucomm::raise_arg("Collectives.alltoall", "send", "its size is not a multiple of the team size");
            const CollOptions o = s.options("auto", max_ctas);
            s.call(send, recv, stream,
                   [&](void* sp, void* rp, Stream st) { s.c().alltoall(sp, rp, count_of(send) / n, dt, t, st, o); });
          },
          kw("send"), kw("recv"), kw("team") = "world", kw("stream") = 0, kw("max_ctas") = 0)
      .def(
          "alltoallv",
          [](PyCollectives& s, nb::handle send_obj, const std::vector<uint64_t>& send_counts,
             const std::vector<uint64_t>& send_displs, nb::handle recv_obj, const std::vector<uint64_t>& recv_counts,
             const std::vector<uint64_t>& recv_displs, nb::handle team, uintptr_t stream) {
            const Array send = array_arg(send_obj, "alltoallv", "send");
            const Array recv = array_arg(recv_obj, "alltoallv", "recv");
            const DataType dt = dtype_of(send, "alltoallv");
            same_type(dt, dtype_of(recv, "alltoallv"), "alltoallv");
            const Team t = s.team(team);
            const size_t n = static_cast<size_t>(t.size());
            for (const auto* v : {&send_counts, &send_displs, &recv_counts, &recv_displs})
              need_count(v->size(), n, "alltoallv", "a count or displacement list");
            for (size_t i = 0; i < n; ++i) {
              // Compared without the sum, which could wrap past 2^64.
              const bool send_out = send_counts[i] > count_of(send) || send_displs[i] > count_of(send) - send_counts[i];
              const bool recv_out = recv_counts[i] > count_of(recv) || recv_displs[i] > count_of(recv) - recv_counts[i];
              if (send_out || recv_out) {
                gpucomm::raise_arg("Collectives.alltoallv", send_out ? "send_displs" : "recv_displs",
                                   "entry " + std::to_string(i) + ": the block [" +
                                       std::to_string(send_out ? send_displs[i] : recv_displs[i]) + ", +" +
                                       std::to_string(send_out ? send_counts[i] : recv_counts[i]) +
                                       ") lies outside the " + (send_out ? "send" : "recv") + " array of " +
                                       std::to_string(count_of(send_out ? send : recv)) + " elements");
              }
            }
            s.call(send, recv, stream, [&](void* sp, void* rp, Stream st) {
              s.c().alltoallv(sp, send_counts.data(), send_displs.data(), rp, recv_counts.data(), recv_displs.data(),
                              dt, t, st);
            });
          },
          kw("send"), kw("send_counts"), kw("send_displs"), kw("recv"), kw("recv_counts"), kw("recv_displs"),
          kw("team") = "world", kw("stream") = 0)
      .def(
          "plan",
          [](PyCollectives& s, const std::string& op, const std::string& dtype, uint64_t bytes, nb::handle team,
             int max_ctas) {
            const Choice c =
                s.c().plan(parse<CollOp, parse_op>(op, "operation"), parse<DataType, parse_type>(dtype, "dtype"), bytes,
                           s.team(team), s.options("auto", max_ctas));
            nb::dict d;
            d["algorithm"] = algorithm_name(c.algorithm);
            d["channels"] = c.channels;
            d["why"] = c.why;
            return d;
          },
          kw("op"), kw("dtype"), kw("bytes"), kw("team") = "world", kw("max_ctas") = 0,
          "What a call would run: algorithm, channels and why.")
      .def(
          "check_device", [](PyCollectives& s) { s.c().check_device(); },
          "GPU PEs: raises the failure a collective's kernel recorded.");
}
