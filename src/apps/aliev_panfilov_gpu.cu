// Aliev-Panfilov on GPU PEs (include/gpucomm/apps/aliev_panfilov.hpp): one step kernel per step,
// the same in every model (apps/aliev_panfilov_device.cuh); the models differ in how E_prev's
// ghost planes are filled before it.
//   patterns  the pattern layer's halo plan of E_prev (z periodic, PEs stacked along z), launched
//             on the runtime's stream before the step kernel: nothing waits on the host;
//   cpu       CPU-controlled: the boundary planes are copied into pinned memory, the host
//             synchronizes, all-gathers them through the bootstrap store, and copies its
//             neighbours' planes into the ghost planes before launching the step kernel.
// Times: CUDA events between consecutive steps on the runtime's stream. After the run, rank 0's
// metrics: the device-to-device copy bandwidth measured here (read + write bytes of a 512 MB
// cudaMemcpyAsync, median of 10) and the roofline (32 compulsory bytes per interior point and step
// over that bandwidth) as a fraction of the median step.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gpucomm/apps/aliev_panfilov.hpp"
#include "gpucomm/apps/aliev_panfilov_device.cuh"
#include "gpucomm/apps/persistent_device.cuh"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/patterns/patterns.hpp"

namespace gpucomm::apps {
namespace {

using apps::device::kApBlockX;
using apps::device::kApBlockY;
using apps::device::kApMinBlocksPerSm;

__global__ void __launch_bounds__(kApBlockX* kApBlockY, kApMinBlocksPerSm)
    k_ap_step(const double* __restrict__ prev, double* __restrict__ e_out, double* __restrict__ r, uint64_t n) {
  apps::device::ap_step_columns(prev, e_out, r, n);
}

// Read + write bytes per second of a device-to-device copy of `bytes`, median of 10 after 3.
double copy_bandwidth(size_t bytes, cudaStream_t stream) {
  void *a = nullptr, *b = nullptr;
  GPUCOMM_CUDA_CHECK(cudaMalloc(&a, bytes));
  GPUCOMM_CUDA_CHECK(cudaMalloc(&b, bytes));
  GPUCOMM_CUDA_CHECK(cudaMemsetAsync(a, 1, bytes, stream));
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  GPUCOMM_CUDA_CHECK(cudaEventCreate(&e0));
  GPUCOMM_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int i = 0; i < 13; ++i) {
    GPUCOMM_CUDA_CHECK(cudaEventRecord(e0, stream));
    GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
    GPUCOMM_CUDA_CHECK(cudaEventRecord(e1, stream));
    GPUCOMM_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    GPUCOMM_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (i >= 3) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  std::sort(ms.begin(), ms.end());
  const double med = (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2.0;
  return 2.0 * static_cast<double>(bytes) / (med * 1e-3);
}

}  // namespace

RunResult aliev_panfilov_gpu(Runtime& rt, Model model, const RunConfig& cfg) {
  if (model != Model::patterns && model != Model::cpu) {
    raise_unavailable("aliev_panfilov", model, true);
  }
  const uint64_t n = cfg.size, w = n + 2, plane = w * w, points = w * w * w;
  const size_t field_bytes = points * sizeof(double), plane_bytes = plane * sizeof(double);
  cudaStream_t stream = rt.stream();
  auto* e = static_cast<double*>(rt.calloc(2 * points, sizeof(double)));  // symmetric [2][points]
  double* r = nullptr;
  GPUCOMM_CUDA_CHECK(cudaMalloc(&r, field_bytes));
  {
    std::vector<double> e0, r0;
    ap_initial_part(rt.rank(), n, e0, r0);
    GPUCOMM_CUDA_CHECK(cudaMemcpy(e, e0.data(), field_bytes, cudaMemcpyHostToDevice));
    GPUCOMM_CUDA_CHECK(cudaMemcpy(e + points, e0.data(), field_bytes, cudaMemcpyHostToDevice));
    GPUCOMM_CUDA_CHECK(cudaMemcpy(r, r0.data(), field_bytes, cudaMemcpyHostToDevice));
  }
  auto prev = [&](uint64_t step) { return e + ((step - 1) & 1) * points; };  // read in step `step`

  namespace gp = patterns;
  std::vector<gp::Plan> plans;
  if (model == Model::patterns) {
    gp::HaloOptions o;
    o.ghost = size_t{1};
    o.periodic = gp::PerAxis<bool>(false, false, true);
    o.grid = {1, 1, rt.size()};
    o.corners = false;
    for (int b = 0; b < 2; ++b) plans.push_back(gp::halo(rt, gp::Field::of(e + b * points, {w, w, w}), o).compile(rt));
  }
  double* pinned = nullptr;  // cpu: planes 1 and n of E_prev
  if (model == Model::cpu) GPUCOMM_CUDA_CHECK(cudaMallocHost(&pinned, 2 * plane_bytes));
  const int me = rt.rank(), pes = rt.size();
  const auto below = static_cast<size_t>((me + pes - 1) % pes), above = static_cast<size_t>((me + 1) % pes);

  const int steps = cfg.warmup + cfg.iters;
  std::vector<cudaEvent_t> ev(static_cast<size_t>(steps) + 1);
  for (auto& x : ev) GPUCOMM_CUDA_CHECK(cudaEventCreate(&x));
  const dim3 grid = apps::device::ap_grid(n), block(kApBlockX, kApBlockY);
  rt.barrier_all();
  GPUCOMM_CUDA_CHECK(cudaEventRecord(ev[0], stream));
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    double* p = prev(step);
    if (model == Model::patterns) {
      plans[(step - 1) & 1].launch(stream);
    } else {
      GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(pinned, p + plane, plane_bytes, cudaMemcpyDeviceToHost, stream));
      GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(pinned + plane, p + n * plane, plane_bytes, cudaMemcpyDeviceToHost, stream));
      GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
      const auto all = rt.bootstrap().allgather(std::string(reinterpret_cast<const char*>(pinned), 2 * plane_bytes));
      for (const auto& v : all) {
        if (v.size() != 2 * plane_bytes)
          raise(Errc::protocol, "aliev_panfilov cpu", "a PE sent " + std::to_string(v.size()) + " bytes of planes");
      }
      std::memcpy(pinned, all[below].data() + plane_bytes, plane_bytes);
      std::memcpy(pinned + plane, all[above].data(), plane_bytes);
      GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(p, pinned, plane_bytes, cudaMemcpyHostToDevice, stream));
      GPUCOMM_CUDA_CHECK(
          cudaMemcpyAsync(p + (n + 1) * plane, pinned + plane, plane_bytes, cudaMemcpyHostToDevice, stream));
    }
    k_ap_step<<<grid, block, 0, stream>>>(p, prev(step + 1), r, n);
    GPUCOMM_CUDA_CHECK_LAUNCH("aliev_panfilov step kernel");
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev[static_cast<size_t>(it) + 1], stream));
  }
  GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  rt.check_device();

  RunResult res;
  res.model = model;
  res.size = n;
  res.iter_us = apps::device::event_step_us(ev, cfg.warmup, steps);
  for (auto& x : ev) cudaEventDestroy(x);
  {
    std::vector<double> e_host(points), r_host(points);
    GPUCOMM_CUDA_CHECK(
        cudaMemcpy(e_host.data(), prev(static_cast<uint64_t>(steps) + 1), field_bytes, cudaMemcpyDeviceToHost));
    GPUCOMM_CUDA_CHECK(cudaMemcpy(r_host.data(), r, field_bytes, cudaMemcpyDeviceToHost));
    const ApReference& ref = ap_reference(pes, n, steps);
    res.wrong_cells = ap_wrong_cells(ref, me, e_host.data(), r_host.data(), cfg.corrupt_rank);
    res.value = ap_e_sum(e_host.data(), n);
  }
  if (!res.iter_us.empty()) {
    std::vector<double> t = res.iter_us;
    std::sort(t.begin(), t.end());
    const double median_us = t.size() % 2 ? t[t.size() / 2] : (t[t.size() / 2 - 1] + t[t.size() / 2]) / 2;
    const double bw = copy_bandwidth(size_t{512} << 20, stream);  // bytes/s, read + write
    const double compulsory = 32.0 * static_cast<double>(n * n * n);
    const double roofline_us = compulsory / bw * 1e6;
    res.metrics = {{"copy_gbs", bw * 1e-9},
                   {"compulsory_bytes_per_step", compulsory},
                   {"roofline_us", roofline_us},
                   {"roofline_fraction", roofline_us / median_us}};
  }
  plans.clear();
  rt.barrier_all();
  if (pinned) cudaFreeHost(pinned);
  cudaFree(r);
  rt.free(e);
  return res;
}

}  // namespace gpucomm::apps
