// Himeno on GPU PEs (include/gpucomm/apps/himeno.hpp): one iteration kernel per iteration, the
// same in every model (apps/himeno_device.cuh); it leaves the PE's gosa in device memory. The
// models differ in how p's ghost planes are filled and how gosa is all-reduced.
//   patterns  the pattern layer's halo plan of p (i not periodic, PEs stacked along i), launched on
//             the runtime's stream before the iteration kernel, and the library's stream-ordered
//             allreduce (sum) of gosa after it: nothing waits on the host;
//   cpu       CPU-controlled: the iteration kernel ends, the new boundary planes (the ones the next
//             iteration reads) and the PE's gosa are copied into pinned memory, the host
//             synchronizes, all-gathers them through the bootstrap store, sums the gosas in rank
//             order and copies its neighbours' planes into the ghost planes; then the next launch.
//             The ghost planes start as the neighbours' initial planes, so the first iteration needs
//             no exchange before it.
// Only p is symmetric (the halo plan moves its planes); the coefficient arrays are cudaMalloc'd.
// Times: CUDA events between consecutive iterations on the runtime's stream. After the run, rank
// 0's metrics: MFLOPS (34 flops per point) and the streamed bytes' bandwidth.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "gpucomm/apps/himeno.hpp"
#include "gpucomm/apps/himeno_device.cuh"
#include "gpucomm/apps/persistent_device.cuh"
#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/collectives/collectives.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/patterns/patterns.hpp"

namespace gpucomm::apps {
namespace {

using apps::device::kHimenoBlockX;
using apps::device::kHimenoBlockY;
using apps::device::kHimenoMinBlocksPerSm;
using apps::device::kHimenoThreads;

// What the iteration kernel needs beside the two p buffers.
struct Sums {
  double* partials;    // [blocks]: each block's sum of ss ss
  unsigned* finished;  // the count of finished blocks (the last one resets it)
  double* gosa;        // [1]: this PE's gosa of the iteration (+ corrupt)
  double corrupt;
};

__global__ void __launch_bounds__(kHimenoThreads, kHimenoMinBlocksPerSm)
    k_himeno(const float* __restrict__ p, float* __restrict__ out, const float* __restrict__ coef, uint64_t n, Sums s) {
  __shared__ double scratch[kHimenoThreads / 32];
  __shared__ bool last;
  const double mine = apps::device::himeno_columns(p, out, coef, n);
  const double block = apps::device::himeno_block_sum(mine, scratch);
  const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
  const unsigned t = threadIdx.x + threadIdx.y * blockDim.x;
  if (t == 0) {
    s.partials[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)] = block;
    const unsigned done = mem::fetch_add<mem::kDevice>(s.finished, 1U, mem::acq_rel);
    last = done + 1 == blocks;
  }
  __syncthreads();
  if (!last) return;
  // The last block: every thread sums a strided share of the blocks' sums in order (read past L1,
  // which may hold an earlier iteration's), then the block's sum in its fixed order.
  mem::fence<mem::kDevice>(mem::acq_rel);
  double part = 0;
  for (unsigned b = t; b < blocks; b += kHimenoThreads) part = __dadd_rn(part, __ldcg(s.partials + b));
  const double total = apps::device::himeno_block_sum(part, scratch);
  if (t == 0) {
    *s.gosa = total + s.corrupt;
    mem::store<mem::kDevice>(s.finished, 0U, mem::relaxed);
  }
}

}  // namespace

RunResult himeno_gpu(Runtime& rt, Model model, const RunConfig& cfg) {
  if (model != Model::patterns && model != Model::cpu) raise_unavailable("himeno", model, true);
  GPUCOMM_CUDA_CHECK(cudaSetDevice(rt.device_id()));
  const uint64_t n = cfg.size, w = n + 2, plane = w * w, points = w * w * w;
  const size_t field_bytes = points * sizeof(float), plane_bytes = plane * sizeof(float);
  auto stream = reinterpret_cast<cudaStream_t>(rt.stream());
  const int me = rt.rank(), pes = rt.size();
  const int steps = cfg.warmup + cfg.iters;
  const HimenoReference& ref = himeno_reference(pes, n, steps);

  auto* p = static_cast<float*>(rt.calloc(2 * points, sizeof(float)));  // symmetric [2][points]
  float* coef = nullptr;                                                // kHimenoFields x points
  GPUCOMM_CUDA_CHECK(cudaMalloc(&coef, kHimenoFields * field_bytes));
  {
    const std::vector<float> p0 = himeno_initial_part(me, pes, n);
    GPUCOMM_CUDA_CHECK(cudaMemcpy(p, p0.data(), field_bytes, cudaMemcpyHostToDevice));
    GPUCOMM_CUDA_CHECK(cudaMemcpy(p + points, p0.data(), field_bytes, cudaMemcpyHostToDevice));
    std::vector<float> f(points);
    for (int c = 0; c < kHimenoFields; ++c) {
      std::fill(f.begin(), f.end(), himeno_coef_value(c));
      GPUCOMM_CUDA_CHECK(
          cudaMemcpy(coef + static_cast<uint64_t>(c) * points, f.data(), field_bytes, cudaMemcpyHostToDevice));
    }
  }
  const uint64_t blocks = apps::device::himeno_blocks(n);
  Sums sums{};
  sums.partials = apps::device::device_alloc<double>(blocks);
  sums.finished = apps::device::device_alloc<unsigned>(1);
  sums.gosa = static_cast<double*>(rt.calloc(1, sizeof(double)));  // symmetric: the allreduce's source
  sums.corrupt = me == cfg.corrupt_rank ? 1.0 : 0.0;
  double* gosa = apps::device::device_alloc<double>(static_cast<size_t>(steps));  // patterns: all-reduced
  std::vector<double> host_gosa(static_cast<size_t>(steps));                      // cpu: summed on the host
  auto prev = [&](uint64_t step) { return p + ((step - 1) & 1) * points; };       // read in iteration `step`

  namespace gp = patterns;
  std::vector<gp::Plan> plans;
  if (model == Model::patterns) {
    gp::HaloOptions o;
    o.ghost = size_t{1};
    o.periodic = false;
    o.grid = {1, 1, pes};
    o.corners = false;
    for (int b = 0; b < 2; ++b) plans.push_back(gp::halo(rt, gp::Field::of(p + b * points, {w, w, w}), o).compile(rt));
  }
  std::optional<coll::Collectives> coll;  // patterns: gosa's allreduce
  if (model == Model::patterns) coll.emplace(rt);
  unsigned char* pinned = nullptr;  // cpu: planes 1 and n of the new p, then this PE's gosa
  const size_t staged = 2 * plane_bytes + sizeof(double);
  if (model == Model::cpu) GPUCOMM_CUDA_CHECK(cudaMallocHost(&pinned, staged));

  std::vector<cudaEvent_t> ev(static_cast<size_t>(steps) + 1);
  for (auto& x : ev) GPUCOMM_CUDA_CHECK(cudaEventCreate(&x));
  const dim3 grid = apps::device::himeno_grid(n), block(kHimenoBlockX, kHimenoBlockY);
  rt.barrier_all();  // every PE's p is initialized
  GPUCOMM_CUDA_CHECK(cudaEventRecord(ev[0], stream));
  for (int it = 0; it < steps; ++it) {
    const auto step = static_cast<uint64_t>(it) + 1;
    if (model == Model::patterns) plans[(step - 1) & 1].launch(stream);
    float* next = prev(step + 1);
    k_himeno<<<grid, block, 0, stream>>>(prev(step), next, coef, n, sums);
    GPUCOMM_CUDA_CHECK_LAUNCH("himeno iteration kernel");
    if (coll) {  // patterns
      coll->allreduce(sums.gosa, gosa + it, 1, coll::DataType::f64, coll::RedOp::sum, rt.world(), rt.stream());
    } else {
      GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(pinned, next + plane, plane_bytes, cudaMemcpyDeviceToHost, stream));
      GPUCOMM_CUDA_CHECK(
          cudaMemcpyAsync(pinned + plane_bytes, next + n * plane, plane_bytes, cudaMemcpyDeviceToHost, stream));
      GPUCOMM_CUDA_CHECK(
          cudaMemcpyAsync(pinned + 2 * plane_bytes, sums.gosa, sizeof(double), cudaMemcpyDeviceToHost, stream));
      GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
      const auto all = rt.bootstrap().allgather(std::string(reinterpret_cast<const char*>(pinned), staged));
      double g = 0;
      for (const auto& v : all) {
        if (v.size() != staged)
          raise(Errc::protocol, "himeno cpu", "a PE sent " + std::to_string(v.size()) + " bytes of planes and gosa");
        double x = 0;
        std::memcpy(&x, v.data() + 2 * plane_bytes, sizeof x);
        g += x;
      }
      host_gosa[static_cast<size_t>(it)] = g;
      if (me > 0) {  // ghost 0 from the PE below; PE 0's is the boundary
        std::memcpy(pinned, all[static_cast<size_t>(me) - 1].data() + plane_bytes, plane_bytes);
        GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(next, pinned, plane_bytes, cudaMemcpyHostToDevice, stream));
      }
      if (me + 1 < pes) {  // ghost n + 1 from the PE above; the last PE's is the boundary
        std::memcpy(pinned + plane_bytes, all[static_cast<size_t>(me) + 1].data(), plane_bytes);
        GPUCOMM_CUDA_CHECK(
            cudaMemcpyAsync(next + (n + 1) * plane, pinned + plane_bytes, plane_bytes, cudaMemcpyHostToDevice, stream));
      }
    }
    GPUCOMM_CUDA_CHECK(cudaEventRecord(ev[static_cast<size_t>(it) + 1], stream));
  }
  GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (coll) coll->check_device();
  rt.check_device();

  RunResult res;
  res.model = model;
  res.size = n;
  res.iter_us = apps::device::event_step_us(ev, cfg.warmup, steps);
  for (auto& x : ev) cudaEventDestroy(x);
  if (model == Model::patterns) {
    GPUCOMM_CUDA_CHECK(cudaMemcpy(host_gosa.data(), gosa, host_gosa.size() * sizeof(double), cudaMemcpyDeviceToHost));
  }
  for (size_t s = 0; s < host_gosa.size(); ++s)
    if (!himeno_gosa_ok(host_gosa[s], ref.gosa[s])) ++res.wrong;
  res.value = host_gosa.back();
  {
    std::vector<float> last(points);
    GPUCOMM_CUDA_CHECK(
        cudaMemcpy(last.data(), prev(static_cast<uint64_t>(steps) + 1), field_bytes, cudaMemcpyDeviceToHost));
    res.wrong_cells = himeno_wrong_cells(ref, me, last.data(), cfg.corrupt_rank);
    himeno_dump(cfg, model, me, last.data());
  }
  res.metrics = himeno_metrics(pes, n, res.iter_us);
  plans.clear();
  rt.barrier_all();
  if (pinned) cudaFreeHost(pinned);
  cudaFree(gosa);
  rt.free(sums.gosa);
  cudaFree(sums.finished);
  cudaFree(sums.partials);
  cudaFree(coef);
  rt.free(p);
  return res;
}

}  // namespace gpucomm::apps
