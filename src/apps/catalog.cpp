// The application suite's catalog: which application has which model on which kind of PE.
#include "gpucomm/apps/catalog.hpp"

#include <charconv>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/json.hpp"

namespace gpucomm::apps {
namespace {

constexpr uint64_t kK = 1024, kM = kK * kK;

ModelEntry entry(Model m, Support host, Support gpu, std::string what, std::string host_note = {},
                 std::string gpu_note = {}) {
  return ModelEntry{m, host, gpu, std::move(what), std::move(host_note), std::move(gpu_note)};
}

const char* const kNoGpuIssuer = "host-memory PEs have no GPU to issue from";

AppInfo global_sum() {
  AppInfo a;
  a.name = "global_sum";
  a.summary = "local reduce of N doubles per PE, then an allreduce of one value per PE";
  a.size_unit = "elements per PE";
  a.min_size = 1;
  a.max_size = 16 * kM;
  a.default_sizes = {128, 256 * kK};
  a.sweep = {128, kK, 8 * kK, 64 * kK, 256 * kK, kM, 4 * kM};
  a.done = true;
  using S = Support;
  a.models = {
      entry(Model::loadstore, S::done, S::done,
            "plain stores of the local sum into every PE's mailbox (peer views of the symmetric heap), "
            "then a release store of that PE's flag; each PE sums the mailbox in rank order"),
      entry(Model::putget, S::done, S::done,
            "put-with-signal of the local sum into every PE's mailbox; each PE waits for the signals "
            "and sums the mailbox in rank order"),
      entry(Model::proxy, S::not_possible, S::planned, "GPU-issued puts through the CPU proxy", kNoGpuIssuer),
      entry(Model::agent, S::not_possible, S::planned, "GPU-issued puts through the GPU service agent", kNoGpuIssuer),
      entry(Model::sendrecv, S::done, S::planned,
            "two-sided: isend of the local sum to every other PE, irecv from each, sum in rank order"),
      entry(Model::am, S::planned, S::planned, "active messages carrying the local sum"),
      entry(Model::collective, S::done, S::done,
            "the library's allreduce of one double (host PEs: on the calling thread; GPU PEs: "
            "coll::device::allreduce inside the reduce kernel)"),
      entry(Model::cpu, S::done, S::done, "CPU-controlled: the compute ends, the host communicates, then goes on",
            "the local sum is staged into a private buffer and all-gathered through the bootstrap store "
            "(TCP, a CPU messaging path without shared memory); an MPI baseline is planned",
            "the reduce kernel ends, the host enqueues the library's stream-ordered allreduce and a copy "
            "into pinned memory, one stream synchronization per step; NCCL and MPI baselines are planned"),
      entry(Model::cpu_graph, S::not_possible, S::planned, "CPU-controlled with one CUDA graph launch per step",
            kNoGpuIssuer),
      entry(Model::patterns, S::not_possible, S::not_possible, "the pattern layer's plans",
            "Global Sum moves one value per PE: the pattern layer's plans are for stencils",
            "Global Sum moves one value per PE: the pattern layer's plans are for stencils"),
  };
  return a;
}

AppInfo jacobi2d() {
  AppInfo a;
  a.name = "jacobi2d";
  a.summary =
      "5-point Jacobi on a 2-D grid split by rows; halo rows to the neighbours and an allreduce of the "
      "residual every iteration";
  a.size_unit = "points per side of each PE's N x N part";
  a.min_size = 4;
  a.max_size = 2 * kK;
  a.default_sizes = {256, kK};
  a.sweep = {64, 128, 256, 512, kK, 2 * kK};
  a.done = true;
  using S = Support;
  const char* const residual =
      "the halo exchange is point to point; the residual's allreduce is the library's collective in every model "
      "but cpu";
  a.models = {
      entry(Model::loadstore, S::done, S::done,
            "plain stores of the edge rows into the neighbours' halo rows (peer views of the symmetric heap), "
            "then a release store of their flags",
            "", "from the persistent kernel: block 0 stores the rows, thread 0 releases the flags at system scope"),
      entry(Model::putget, S::done, S::done, "put-with-signal of the edge rows into the neighbours' halo rows", "",
            "device::put_signal by block 0 of the persistent kernel"),
      entry(Model::proxy, S::not_possible, S::planned, "GPU-issued puts through the CPU proxy", kNoGpuIssuer),
      entry(Model::agent, S::not_possible, S::planned, "GPU-issued puts through the GPU service agent", kNoGpuIssuer),
      entry(Model::sendrecv, S::done, S::planned,
            "two-sided: irecv of both halo rows, isend of both edge rows to the neighbours, waitall"),
      entry(Model::am, S::planned, S::planned, "active messages carrying the edge rows"),
      entry(Model::collective, S::not_possible, S::not_possible,
            "the halo exchange is point to point, not a collective", residual, residual),
      entry(Model::cpu, S::done, S::done, "CPU-controlled: the compute ends, the host communicates, then goes on",
            "the edge rows and the residual are staged into private buffers and all-gathered through the "
            "bootstrap store (TCP, a CPU messaging path without shared memory); an MPI baseline is planned",
            "the update kernel ends; the host enqueues the library's stream-ordered put-with-signal of the edge "
            "rows and waits for the halo rows, relaunches the update kernel, then enqueues the stream-ordered "
            "allreduce of the residual and a copy into pinned memory; one stream synchronization per iteration"),
      entry(Model::cpu_graph, S::not_possible, S::planned, "CPU-controlled with one CUDA graph launch per step",
            kNoGpuIssuer),
      entry(Model::patterns, S::planned, S::planned, "the pattern layer's halo-exchange plan"),
  };
  return a;
}

AppInfo random_access() {
  AppInfo a;
  a.name = "random_access";
  a.summary =
      "HPC Challenge RandomAccess: XOR updates of random words of a distributed table, gathered per owner "
      "(buckets of up to 1024 updates on host PEs); every word checked";
  a.size_unit = "table words per PE (a power of two)";
  a.min_size = 256;
  a.max_size = 8 * kM;  // 64 MiB of table: half the default symmetric heap (GPUCOMM_HEAP_SIZE, 128M)
  a.power_of_two = true;
  a.default_sizes = {64 * kK, kM};
  a.sweep = {kK, 4 * kK, 16 * kK, 64 * kK, 256 * kK, kM, 4 * kM};
  a.done = true;
  using S = Support;
  a.models = {
      entry(Model::loadstore, S::done, S::done,
            "no buckets: each update is an atomic XOR straight into the owner's table word (peer views of the "
            "symmetric heap), then a barrier",
            "std::atomic_ref<uint64_t>::fetch_xor through Runtime::ptr",
            "device::atomic_fetch_xor (system scope) from every thread of a kernel per step, then the library's "
            "stream-ordered barrier"),
      entry(Model::putget, S::done, S::done, "buckets put with a signal into the owner's inbox; the owner applies them",
            "buckets of up to 1024 updates, an inbox ring of 4 per sender, acknowledged by a signal back",
            "a kernel makes the step's updates into one list per owner; its last block puts each list with "
            "device::put_signal and waits for the others'; an apply kernel follows"),
      entry(Model::proxy, S::not_possible, S::planned, "GPU-issued puts through the CPU proxy", kNoGpuIssuer),
      entry(Model::agent, S::not_possible, S::planned, "GPU-issued puts through the GPU service agent", kNoGpuIssuer),
      entry(Model::sendrecv, S::done, S::planned,
            "two-sided: one message per bucket (isend, one irecv posted per sender), the step's last bucket to "
            "each PE marked"),
      entry(Model::am, S::done, S::planned,
            "active messages: one per bucket, the owner's handler applies it (the thesis's active-message variant)"),
      entry(Model::collective, S::not_possible, S::not_possible,
            "the updates go to random owners, point to point; no collective fits",
            "updates go point to point to random owners", "updates go point to point to random owners"),
      entry(Model::cpu, S::done, S::done, "CPU-controlled: the compute ends, the host communicates, then goes on",
            "rounds of the bootstrap store's allgather (TCP, a CPU messaging path without shared memory), each "
            "with every PE's buckets; an MPI baseline is planned",
            "a kernel makes the step's updates into one list per owner and ends; the host reads the counts, "
            "enqueues the library's stream-ordered put-with-signal of each list (one per owner and step), the "
            "waits for the others' and the apply kernel; two stream synchronizations per step"),
      entry(Model::cpu_graph, S::not_possible, S::planned, "CPU-controlled with one CUDA graph launch per step",
            kNoGpuIssuer),
      entry(Model::patterns, S::not_possible, S::not_possible, "the pattern layer's plans",
            "random owners: the pattern layer's plans are for fixed neighbours",
            "random owners: the pattern layer's plans are for fixed neighbours"),
  };
  return a;
}

AppInfo mmv() {
  AppInfo a;
  a.name = "mmv";
  a.summary =
      "multi-matrix-vector: a stream of batches of 32-float vectors times one 32 x 32 matrix kept in shared "
      "memory; the producer waits for each batch's products before the next";
  a.size_unit = "KB per batch (128-byte vectors)";
  a.min_size = 1;
  a.max_size = 16 * kK;
  a.default_sizes = {60, 960};
  a.sweep = {60, 120, 240, 480, 960, 1920};
  a.done = true;
  using S = Support;
  const char* const no_kernel = "host-memory PEs have no GPU kernel to keep or relaunch";
  const char* const own_gpu = "the producer is the PE's own host thread: no PE-to-PE communication";
  a.models = {
      entry(Model::loadstore, S::not_possible, S::done,
            "one persistent kernel, the matrix in shared memory once; the producer writes the batch into pinned host "
            "memory and releases its number there; block 0 polls that word and relays it in device memory, every "
            "block reads its vectors from the pinned batch and stores the products into pinned host memory, then "
            "releases its done word",
            no_kernel),
      entry(Model::putget, S::not_possible, S::done,
            "the same persistent kernel; the producer puts the batch and then its number into device memory (two "
            "copies in stream order, as an RDMA write with its notification); products and done words as in "
            "loadstore",
            no_kernel),
      entry(Model::proxy, S::not_possible, S::not_possible, "", no_kernel, own_gpu),
      entry(Model::agent, S::not_possible, S::not_possible, "", no_kernel, own_gpu),
      entry(Model::sendrecv, S::not_possible, S::not_possible, "", no_kernel, own_gpu),
      entry(Model::am, S::not_possible, S::not_possible, "", no_kernel, own_gpu),
      entry(Model::collective, S::not_possible, S::not_possible, "", no_kernel, own_gpu),
      entry(Model::cpu, S::not_possible, S::done,
            "CPU-controlled: per batch a copy in, a launch (each block loads the matrix again), a copy out and one "
            "stream synchronization",
            no_kernel),
      entry(Model::cpu_graph, S::not_possible, S::done,
            "CPU-controlled: the same copy, kernel and copy as one CUDA graph, one graph launch and one "
            "synchronization per batch",
            no_kernel),
      entry(Model::patterns, S::not_possible, S::not_possible, "", no_kernel,
            "no stencil: the pattern layer's plans do not apply"),
  };
  return a;
}

AppInfo aliev_panfilov() {
  AppInfo a;
  a.name = "aliev_panfilov";
  a.summary =
      "Aliev-Panfilov cardiac model, fp64: 3-D diffusion (7-point) and reaction on an N^3 cube per PE, PEs stacked "
      "along a periodic z; one ghost plane to each z neighbour every step";
  a.size_unit = "points per side of each PE's N x N x N cube";
  a.min_size = 4;
  a.max_size = 512;
  a.default_sizes = {48, 160};
  a.sweep = {32, 64, 128, 256, 384};
  a.done = true;
  using S = Support;
  const char* const halo_only = "the ghost planes move through the pattern layer (patterns) or the host (cpu)";
  a.models = {
      entry(Model::loadstore, S::planned, S::planned,
            "plain stores of the boundary planes into the neighbours' ghost planes"),
      entry(Model::putget, S::planned, S::planned, "put-with-signal of the boundary planes"),
      entry(Model::proxy, S::not_possible, S::planned, "GPU-issued puts through the CPU proxy", kNoGpuIssuer),
      entry(Model::agent, S::not_possible, S::planned, "GPU-issued puts through the GPU service agent", kNoGpuIssuer),
      entry(Model::sendrecv, S::planned, S::planned, "two-sided exchange of the boundary planes"),
      entry(Model::am, S::planned, S::planned, "active messages carrying the boundary planes"),
      entry(Model::collective, S::not_possible, S::not_possible, "the exchange is point to point", halo_only,
            halo_only),
      entry(Model::cpu, S::done, S::done, "CPU-controlled: the compute ends, the host moves the planes, then goes on",
            "the boundary planes are staged into a private buffer and all-gathered through the bootstrap store (TCP)",
            "the step kernel ends; the planes are copied into pinned memory, the host synchronizes, all-gathers them "
            "through the bootstrap store and copies its neighbours' planes into the ghost planes, then launches the "
            "next step; one synchronization per step"),
      entry(Model::cpu_graph, S::not_possible, S::planned, "CPU-controlled with one CUDA graph launch per step",
            kNoGpuIssuer),
      entry(Model::patterns, S::done, S::done,
            "the pattern layer's halo plan of E (z periodic, PEs stacked along z), compiled once per E buffer and "
            "launched every step",
            "the plan runs as CPU copies", "the plan is launched on the runtime's stream before the step kernel"),
  };
  return a;
}

AppInfo himeno() {
  AppInfo a;
  a.name = "himeno";
  a.summary =
      "Himeno benchmark (R. Himeno, RIKEN), fp32: Jacobi iterations of the pressure Poisson equation, 19-point "
      "stencil on an N^3 cube per PE, PEs stacked along a non-periodic i; one ghost plane to each neighbour and an "
      "allreduce of the residual gosa every iteration";
  a.size_unit = "points per side of each PE's N x N x N cube";
  a.min_size = 4;
  a.max_size = 512;
  a.default_sizes = {32, 128};
  a.sweep = {32, 64, 128, 192, 256};
  a.done = true;
  using S = Support;
  const char* const halo_only =
      "the ghost planes move point to point, through the pattern layer (patterns) or the host (cpu); gosa's "
      "allreduce is the library's collective in patterns";
  a.models = {
      entry(Model::loadstore, S::planned, S::planned,
            "plain stores of the boundary planes into the neighbours' ghost planes"),
      entry(Model::putget, S::planned, S::planned, "put-with-signal of the boundary planes"),
      entry(Model::proxy, S::not_possible, S::planned, "GPU-issued puts through the CPU proxy", kNoGpuIssuer),
      entry(Model::agent, S::not_possible, S::planned, "GPU-issued puts through the GPU service agent", kNoGpuIssuer),
      entry(Model::sendrecv, S::planned, S::planned, "two-sided exchange of the boundary planes"),
      entry(Model::am, S::planned, S::planned, "active messages carrying the boundary planes"),
      entry(Model::collective, S::not_possible, S::not_possible, "the halo exchange is point to point", halo_only,
            halo_only),
      entry(Model::cpu, S::done, S::done,
            "CPU-controlled: the compute ends, the host moves the planes and sums gosa, then goes on",
            "the new boundary planes and the PE's gosa are staged into a private buffer and all-gathered through the "
            "bootstrap store (TCP); gosa summed in rank order",
            "the iteration kernel ends; the new boundary planes and the PE's gosa are copied into pinned memory, the "
            "host synchronizes, all-gathers them through the bootstrap store, sums gosa and copies its neighbours' "
            "planes into the ghost planes, then launches the next iteration; one synchronization per iteration"),
      entry(Model::cpu_graph, S::not_possible, S::planned, "CPU-controlled with one CUDA graph launch per step",
            kNoGpuIssuer),
      entry(Model::patterns, S::done, S::done,
            "the pattern layer's halo plan of p (i not periodic, PEs stacked along i), compiled once per p buffer and "
            "launched every iteration; gosa all-reduced by the library's collective",
            "the plan runs as CPU copies; the allreduce on the calling thread",
            "the plan is launched on the runtime's stream before the iteration kernel, the stream-ordered allreduce "
            "after it; no host synchronization"),
  };
  return a;
}

AppInfo nbody() {
  AppInfo a;
  a.name = "nbody";
  a.summary =
      "all-pairs 3-D gravity (fp64) on bodies split across the PEs; the blocks of positions and masses travel "
      "around a ring of PEs every step";
  a.size_unit = "bodies in total (a multiple of the number of PEs)";
  a.min_size = 64;
  a.max_size = 256 * kK;
  a.default_sizes = {4 * kK, 15 * kK};
  a.sweep = {kK, 4 * kK, 15 * kK, 32 * kK, 128 * kK};
  a.warmup = 1;
  a.iters = 5;
  a.quick_warmup = 1;
  a.quick_iters = 2;
  a.done = true;
  using S = Support;
  const char* const ring = "a different algorithm (every block to every PE at once) from the ring of the other models";
  a.models = {
      entry(Model::loadstore, S::done, S::done,
            "plain stores of the held block into the next PE's ring slot (peer views of the symmetric heap), "
            "then a release store of its flag",
            "",
            "from the persistent kernel (the whole run in one launch): block 0 stores the block, thread 0 "
            "releases the flag at system scope"),
      entry(Model::putget, S::done, S::done, "put-with-signal of the held block into the next PE's ring slot", "",
            "device::put_signal by block 0 of the persistent kernel"),
      entry(Model::proxy, S::not_possible, S::planned, "GPU-issued puts through the CPU proxy", kNoGpuIssuer),
      entry(Model::agent, S::not_possible, S::planned, "GPU-issued puts through the GPU service agent", kNoGpuIssuer),
      entry(Model::sendrecv, S::done, S::planned,
            "two-sided: irecv of the next block from the previous PE, isend of the held block to the next, "
            "waitall after the stage's compute"),
      entry(Model::am, S::planned, S::planned, "active messages carrying the blocks"),
      entry(Model::collective, S::planned, S::planned,
            "the library's allgather of every PE's block once per step instead of the ring", ring, ring),
      entry(Model::cpu, S::done, S::done, "CPU-controlled: the compute ends, the host communicates, then goes on",
            "one all-gather of every PE's block per step through the bootstrap store (TCP, a CPU messaging path "
            "without shared memory) replaces the ring's passes; an MPI baseline is planned",
            "one kernel per ring stage; the host enqueues the library's stream-ordered put-with-signal of the held "
            "block before it and the wait for the next block after it, then the integration kernel; one stream "
            "synchronization per step"),
      entry(Model::cpu_graph, S::not_possible, S::planned, "CPU-controlled with one CUDA graph launch per step",
            kNoGpuIssuer),
      entry(Model::patterns, S::not_possible, S::not_possible, "the pattern layer's plans",
            "the ring moves whole blocks to one neighbour: the pattern layer's plans are for stencils",
            "the ring moves whole blocks to one neighbour: the pattern layer's plans are for stencils"),
  };
  return a;
}

}  // namespace

const char* model_name(Model m) {
  switch (m) {
    case Model::loadstore:
      return "loadstore";
    case Model::putget:
      return "putget";
    case Model::proxy:
      return "proxy";
    case Model::agent:
      return "agent";
    case Model::sendrecv:
      return "sendrecv";
    case Model::am:
      return "am";
    case Model::collective:
      return "collective";
    case Model::cpu:
      return "cpu";
    case Model::cpu_graph:
      return "cpu_graph";
    case Model::patterns:
      return "patterns";
  }
  return "?";
}

void raise_unavailable(const char* app, Model m, bool gpu) {
  raise(Errc::unsupported, app,
        std::string("model '") + model_name(m) + "' is not available on " + (gpu ? "GPU PEs" : "host-memory PEs") +
            " (gpucomm apps list)");
}

std::optional<Model> parse_model(std::string_view name) {
  for (Model m : kAllModels)
    if (name == model_name(m)) return m;
  return std::nullopt;
}

const char* support_name(Support s) {
  switch (s) {
    case Support::done:
      return "done";
    case Support::not_possible:
      return "not-possible";
    case Support::planned:
      return "planned";
  }
  return "?";
}

const std::vector<AppInfo>& catalog() {
  static const std::vector<AppInfo> apps = {
      global_sum(), random_access(), jacobi2d(), nbody(), himeno(), mmv(), aliev_panfilov(),
  };
  return apps;
}

const AppInfo* find_app(std::string_view name) {
  for (const auto& a : catalog())
    if (a.name == name) return &a;
  return nullptr;
}

std::string size_text(uint64_t n) {
  if (n >= kM && n % kM == 0) return std::to_string(n / kM) + "M";
  if (n >= kK && n % kK == 0) return std::to_string(n / kK) + "K";
  return std::to_string(n);
}

uint64_t parse_size(const AppInfo& app, std::string_view text, const std::string& arg) {
  const std::string valid = "valid sizes of " + app.name + ": " + (app.power_of_two ? "powers of two" : "integers") +
                            " from " + size_text(app.min_size) + " to " + size_text(app.max_size) + " " +
                            app.size_unit + ", with an optional K (x1024) or M (x1048576) suffix, e.g. 128 or 256K";
  uint64_t mult = 1;
  std::string_view digits = text;
  if (!digits.empty() && (digits.back() == 'K' || digits.back() == 'k')) mult = kK;
  if (!digits.empty() && (digits.back() == 'M' || digits.back() == 'm')) mult = kM;
  if (mult != 1) digits.remove_suffix(1);
  uint64_t v = 0;
  const std::string number(digits);
  const char* end = number.c_str() + number.size();
  auto [stop, ec] = std::from_chars(number.c_str(), end, v);
  if (digits.empty() || ec != std::errc() || stop != end || v > app.max_size / mult)
    raise_arg("gpucomm-apps", arg, "'" + std::string(text) + "' is not a size; " + valid);
  v *= mult;
  if (v < app.min_size || v > app.max_size)
    raise_arg("gpucomm-apps", arg, "'" + std::string(text) + "' is out of range; " + valid);
  if (app.power_of_two && (v & (v - 1)) != 0)
    raise_arg("gpucomm-apps", arg, "'" + std::string(text) + "' is not a power of two; " + valid);
  return v;
}

std::string catalog_json() {
  JsonWriter w;
  w.begin_object().begin_array("apps");
  for (const auto& a : catalog()) {
    w.begin_object().field("name", a.name).field("summary", a.summary).field("done", a.done);
    w.field("size_unit", a.size_unit).field("min_size", a.min_size).field("max_size", a.max_size);
    w.field("warmup", a.warmup).field("iters", a.iters);
    w.field("quick_warmup", a.quick_warmup).field("quick_iters", a.quick_iters);
    w.field("power_of_two", a.power_of_two);
    w.begin_array("default_sizes");
    for (auto s : a.default_sizes) w.value(s);
    w.end_array().begin_array("sweep");
    for (auto s : a.sweep) w.value(s);
    w.end_array().begin_array("models");
    for (const auto& m : a.models) {
      w.begin_object().field("model", model_name(m.model)).field("host", support_name(m.host));
      w.field("gpu", support_name(m.gpu)).field("what", m.what);
      w.field("host_note", m.host_note).field("gpu_note", m.gpu_note).end_object();
    }
    w.end_array().end_object();
  }
  w.end_array().end_object();
  return w.str() + "\n";
}

}  // namespace gpucomm::apps
