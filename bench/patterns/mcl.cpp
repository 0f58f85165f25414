// The MCL thesis's comparisons redone on one GPU where they apply (its Tables 5.3-5.5, device
// to host, host to device and copies between GPU memories, come from the bandwidth section):
// - Table 5.6 (broadcast strategies): one pinned host buffer to four device buffers, each
//   strategy against a hand-written loop of cudaMemcpyAsync (halo strategies need several GPUs);
// - Table 5.7 (a stencil code's ghost exchange): the periodic 3-D halo of a device field (ghost
//   width 1, edges and corners) as a plan against a hand-written loop of six cudaMemcpy3DAsync.
#include <array>

#include "bench.hpp"
#include "gpucomm/patterns/patterns.hpp"

namespace bench {

namespace gp = gpucomm::patterns;

namespace {

void broadcast_table(Context& c) {
  const size_t n = c.quick ? size_t{8} << 20 : size_t{64} << 20;
  const int trials = c.quick ? 5 : 11;
  void* h = pinned_alloc(n);
  std::vector<void*> d;
  std::vector<gp::Region> dsts;
  for (int i = 0; i < 4; ++i) {
    d.push_back(device_alloc(n));
    dsts.push_back(gp::whole(gp::device(d.back(), n)));
  }
  const gp::Pattern p = gp::broadcast(gp::whole(gp::host(h, n)), dsts);
  auto record = [&](const std::string& name, const std::function<void()>& f) {
    Result r;
    r.section = "mcl";
    r.name = name;
    r.config = "broadcast host to 4 device buffers";
    r.bytes = 4 * n;
    r.transfers = 4;
    r.unit = "GB/s";
    r.samples = to_gbps(device_us(c, f, 3, trials), 4.0 * static_cast<double>(n));
    c.add(std::move(r));
  };
  c.progress("MCL table 5.6: broadcast strategies");
  record("loop", [&] {
    for (void* x : d) cuda(cudaMemcpyAsync(x, h, n, cudaMemcpyHostToDevice, c.stream), "cudaMemcpyAsync");
  });
  const auto st = reinterpret_cast<gpucomm::Stream>(c.stream);
  for (gp::Strategy s : {gp::Strategy::automatic, gp::Strategy::all_at_once, gp::Strategy::tree, gp::Strategy::ring}) {
    gp::CompileOptions o;
    o.strategy = s;
    gp::Plan plan = p.compile(c.rt, o);
    record(std::string("plan_") + gp::strategy_name(s) +
               (s == gp::Strategy::automatic ? std::string("=") + gp::strategy_name(plan.strategy()) : ""),
           [&] { plan.launch(st); });
  }
  c.sync();
  for (void* x : d) (void)cudaFree(x);
  (void)cudaFreeHost(h);
}

void halo_table(Context& c) {
  const size_t n = c.quick ? 96 : 192, e = sizeof(double), pitch = n * e, plane = n * pitch, bytes = n * plane;
  const int trials = c.quick ? 7 : 15;
  c.progress("MCL table 5.7: periodic 3-D halo of " + std::to_string(n) + "^3 doubles");
  void* mem = device_alloc(bytes);
  auto* u = static_cast<double*>(mem);
  // The plan: two lines.
  gp::Plan halo = gp::halo(c.rt, gp::Field::of(u, {n, n, n}), {.ghost = 1, .periodic = true}).compile(c.rt);
  // The hand-written exchange: axis by axis (x over the interior of y and z, y over all x and
  // the interior of z, z over everything), each side with one cudaMemcpy3DAsync.
  auto face = [&](int axis, size_t from, size_t to, cudaStream_t s) {
    std::array<size_t, 3> lo{1, 1, 1}, cnt{n - 2, n - 2, n - 2};
    for (size_t b = 0; b < static_cast<size_t>(axis); ++b) {
      lo[b] = 0;
      cnt[b] = n;
    }
    std::array<size_t, 3> src = lo, dst = lo;
    src[static_cast<size_t>(axis)] = from;
    dst[static_cast<size_t>(axis)] = to;
    cnt[static_cast<size_t>(axis)] = 1;
    char* base = static_cast<char*>(mem);
    cudaMemcpy3DParms q{};
    q.srcPtr = cudaPitchedPtr{base + src[2] * plane + src[1] * pitch + src[0] * e, pitch, cnt[0] * e, n};
    q.dstPtr = cudaPitchedPtr{base + dst[2] * plane + dst[1] * pitch + dst[0] * e, pitch, cnt[0] * e, n};
    q.extent = cudaExtent{cnt[0] * e, cnt[1], cnt[2]};
    q.kind = cudaMemcpyDeviceToDevice;
    cuda(cudaMemcpy3DAsync(&q, s), "cudaMemcpy3DAsync");
  };
  auto record = [&](const std::string& name, const std::function<void()>& f) {
    Result r;
    r.section = "mcl";
    r.name = name;
    r.config = "periodic 3-D halo " + std::to_string(n) + "^3";
    r.bytes = 2 * ((n - 2) * (n - 2) + n * (n - 2) + n * n) * e;
    r.transfers = 6;
    r.unit = "us";
    r.samples = device_us(c, f, 10, trials);
    c.add(std::move(r));
  };
  record("loop", [&] {
    for (int a = 0; a < 3; ++a) {
      face(a, n - 2, 0, c.stream);
      face(a, 1, n - 1, c.stream);
    }
  });
  const auto st = reinterpret_cast<gpucomm::Stream>(c.stream);
  record("plan", [&] { halo.launch(st); });
  gp::CompileOptions go;
  go.graph = true;
  gp::Plan halo_graph = gp::halo(c.rt, gp::Field::of(u, {n, n, n}), {.ghost = 1, .periodic = true}).compile(c.rt, go);
  record("plan_graph", [&] { halo_graph.launch(st); });
  c.sync();
  (void)cudaFree(mem);
}

}  // namespace

void run_mcl(Context& c) {
  broadcast_table(c);
  halo_table(c);
}

}  // namespace bench
