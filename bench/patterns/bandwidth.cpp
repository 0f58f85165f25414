// Bandwidth of one transfer: a plan (eager and graph) against cudaMemcpyAsync on the same
// stream, host to device (pinned), device to host (pinned) and device to device, by size.
#include "bench.hpp"
#include "gpucomm/patterns/patterns.hpp"

namespace bench {

namespace gp = gpucomm::patterns;

void run_bandwidth(Context& c) {
  const std::vector<size_t> sizes =
      c.quick ? std::vector<size_t>{size_t{1} << 20, size_t{16} << 20, size_t{64} << 20}
              : std::vector<size_t>{size_t{64} << 10, size_t{256} << 10, size_t{1} << 20,  size_t{4} << 20,
                                    size_t{16} << 20, size_t{64} << 20,  size_t{256} << 20};
  const int trials = c.quick ? 5 : 11;
  const size_t top = sizes.back();
  void* d0 = device_alloc(top);
  void* d1 = device_alloc(top);
  void* h0 = pinned_alloc(top);
  struct Dir {
    const char* name;
    void* dst;
    void* src;
    bool dst_dev, src_dev;
  };
  const Dir dirs[] = {{"h2d", d0, h0, true, false}, {"d2h", h0, d0, false, true}, {"d2d", d1, d0, true, true}};
  for (const Dir& d : dirs) {
    for (size_t n : sizes) {
      c.progress(std::string("bandwidth: ") + d.name + ", " + std::to_string(n >> 10) + " KB");
      auto buf = [&](void* p, bool dev) { return dev ? gp::device(p, n) : gp::host(p, n); };
      gp::Pattern p("bandwidth");
      p.add(buf(d.dst, d.dst_dev), buf(d.src, d.src_dev));
      gp::Plan eager = p.compile(c.rt);
      gp::CompileOptions go;
      go.graph = true;
      gp::Plan graph = p.compile(c.rt, go);
      // Enough launches per trial for about 2 ms of copying at 25 GB/s and more.
      const int reps = static_cast<int>(std::max<size_t>(2, std::min<size_t>(200, (size_t{50} << 20) / n)));
      const auto st = reinterpret_cast<gpucomm::Stream>(c.stream);
      auto record = [&](const std::string& name, const std::function<void()>& f) {
        Result r;
        r.section = "bandwidth";
        r.name = name;
        r.config = d.name;
        r.bytes = n;
        r.unit = "GB/s";
        r.samples = to_gbps(device_us(c, f, reps, trials), static_cast<double>(n));
        c.add(std::move(r));
      };
      record("loop", [&] { cuda(cudaMemcpyAsync(d.dst, d.src, n, cudaMemcpyDefault, c.stream), "cudaMemcpyAsync"); });
      record("plan_eager", [&] { eager.launch(st); });
      record("plan_graph", [&] { graph.launch(st); });
    }
  }
  c.sync();
  (void)cudaFree(d0);
  (void)cudaFree(d1);
  (void)cudaFreeHost(h0);
}

}  // namespace bench
