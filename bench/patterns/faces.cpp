// The non-contiguous faces of a row-major 3-D array of doubles (the x-faces: one element per
// row): the plan's fused pack-and-put kernel against cudaMemcpy2DAsync (rows = ny * nz) and
// cudaMemcpy3DAsync, device time of one face copied into another array on the same GPU.
#include "bench.hpp"
#include "gpucomm/patterns/patterns.hpp"

namespace bench {

namespace gp = gpucomm::patterns;

void run_faces(Context& c) {
  const std::vector<size_t> edges =
      c.quick ? std::vector<size_t>{16, 64, 128, 181} : std::vector<size_t>{16, 32, 64, 96, 128, 181, 256};
  const int trials = c.quick ? 7 : 15;
  for (size_t n : edges) {
    const size_t e = sizeof(double), pitch = n * e, plane = n * pitch, bytes = n * plane, face = n * n * e;
    c.progress("x-face of " + std::to_string(n) + "^3 doubles (" + std::to_string(face >> 10) + " KB)");
    void* a = device_alloc(bytes);
    void* b = device_alloc(bytes);
    char* src = static_cast<char*>(a) + (n - 2) * e;  // the last interior slab, x = n - 2
    char* dst = static_cast<char*>(b);                // the ghost slab, x = 0
    gp::Pattern p("x-face");
    p.add(gp::box(gp::device(b, bytes), 0, e, n, pitch, n, plane),
          gp::box(gp::device(a, bytes), (n - 2) * e, e, n, pitch, n, plane));
    gp::Plan plan = p.compile(c.rt);  // automatic: the fused kernel
    const std::string config = "x-face " + std::to_string(n) + "^3";
    const int reps = 20;
    const auto st = reinterpret_cast<gpucomm::Stream>(c.stream);
    auto record = [&](const std::string& name, const std::function<void()>& f) {
      Result r;
      r.section = "faces";
      r.name = name;
      r.config = config;
      r.bytes = face;
      r.unit = "us";
      r.samples = device_us(c, f, reps, trials);
      c.add(std::move(r));
    };
    record("fused", [&] { plan.launch(st); });
    record("memcpy2d", [&] {
      cuda(cudaMemcpy2DAsync(dst, pitch, src, pitch, e, n * n, cudaMemcpyDeviceToDevice, c.stream),
           "cudaMemcpy2DAsync");
    });
    record("memcpy3d", [&] {
      cudaMemcpy3DParms q{};
      q.srcPtr = cudaPitchedPtr{src, pitch, e, n};
      q.dstPtr = cudaPitchedPtr{dst, pitch, e, n};
      q.extent = cudaExtent{e, n, n};
      q.kind = cudaMemcpyDeviceToDevice;
      cuda(cudaMemcpy3DAsync(&q, c.stream), "cudaMemcpy3DAsync");
    });
    c.sync();
    (void)cudaFree(a);
    (void)cudaFree(b);
  }
}

}  // namespace bench
