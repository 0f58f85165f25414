// Kernels and host side of the GPU matching engines (DeviceBatchSet).
#include <algorithm>
#include <cstring>

#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/matching/engine.hpp"
#include "gpucomm/matching/hash_match_device.cuh"
#include "gpucomm/matching/match_device.cuh"

namespace gpucomm::matching {
namespace {

// One job's place in the pools; the size fields are updated by the kernels.
struct JobDesc {
  uint32_t umq_off, umq_size, umq_cap;
  uint32_t prq_off, prq_size, prq_cap;
  uint32_t msg_off, n_msgs;
  uint32_t recv_off, n_recvs;
  uint32_t match_off, n_matches;
  uint32_t scratch_off, status;
  uint32_t table_off, table_slots;  // hash pool words; 0 slots: shared-memory tables only
};

struct SetView {
  JobDesc* desc;
  uint32_t count;
  Envelope* umq;
  Envelope* prq;
  const Envelope* msgs;
  const Envelope* recvs;
  Match* matches;
  int32_t* scratch;
  uint32_t* table;
};

__device__ MatchJob job_of(const SetView& v, uint32_t i) {
  JobDesc& d = v.desc[i];
  MatchJob j;
  j.umq = v.umq + d.umq_off;
  j.umq_size = &d.umq_size;
  j.umq_cap = d.umq_cap;
  j.prq = v.prq + d.prq_off;
  j.prq_size = &d.prq_size;
  j.prq_cap = d.prq_cap;
  j.msgs = v.msgs + d.msg_off;
  j.n_msgs = d.n_msgs;
  j.recvs = v.recvs + d.recv_off;
  j.n_recvs = d.n_recvs;
  j.matches = v.matches + d.match_off;
  j.n_matches = &d.n_matches;
  j.scratch = v.scratch + d.scratch_off;
  j.status = &d.status;
  j.table.words = d.table_slots ? v.table + d.table_off : nullptr;
  j.table.slots = d.table_slots;
  j.table.bucket_cap = d.table_slots / 2;
  return j;
}

constexpr int kBlockThreads = 512;
constexpr int kWarpKernelThreads = 256;
constexpr int kHashThreads = 256;

template <bool kNoUnexpected>
__global__ void __launch_bounds__(kBlockThreads, 2) block_kernel(SetView v) {
  __shared__ BlockMatchShared s;
  for (uint32_t i = blockIdx.x; i < v.count; i += gridDim.x) {
    const MatchJob job = job_of(v, i);
    match_ordered(coop::Block{}, job, s, kNoUnexpected);
    __syncthreads();
  }
}

// kMode: 0 MPI-compliant, 1 no-unexpected, 2 partitioned.
template <int kMode>
__global__ void __launch_bounds__(kWarpKernelThreads) warp_kernel(SetView v) {
  __shared__ WarpMatchShared s[kWarpKernelThreads / 32];
  const uint32_t warps = gridDim.x * (kWarpKernelThreads / 32);
  for (uint32_t i = blockIdx.x * (kWarpKernelThreads / 32) + coop::warp_id(); i < v.count; i += warps) {
    const MatchJob job = job_of(v, i);
    if (kMode == 2) {
      match_partitioned(coop::Warp{}, job, s[coop::warp_id()]);
    } else {
      match_ordered(coop::Warp{}, job, s[coop::warp_id()], kMode == 1);
    }
  }
}

__global__ void __launch_bounds__(kHashThreads) hash_kernel(SetView v, HashStrategy strategy) {
  __shared__ HashShared s;
  extern __shared__ uint32_t table_smem[];
  for (uint32_t i = blockIdx.x; i < v.count; i += gridDim.x) {
    const MatchJob job = job_of(v, i);
    match_hash(coop::Block{}, job, s, table_smem, strategy);
    __syncthreads();
  }
}

template <class T>
struct DeviceArray {
  T* ptr = nullptr;
  size_t n = 0;
  void alloc(size_t count) {
    n = count;
    if (count) GPUCOMM_CUDA_CHECK(cudaMalloc(&ptr, count * sizeof(T)));
  }
  ~DeviceArray() {
    if (ptr) (void)cudaFree(ptr);
  }
  void upload(const std::vector<T>& h) {
    if (!h.empty()) GPUCOMM_CUDA_CHECK(cudaMemcpy(ptr, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  void copy_from(const DeviceArray& o, cudaStream_t s) {
    if (n) GPUCOMM_CUDA_CHECK(cudaMemcpyAsync(ptr, o.ptr, n * sizeof(T), cudaMemcpyDeviceToDevice, s));
  }
  std::vector<T> download() const {
    std::vector<T> h(n);
    if (n) GPUCOMM_CUDA_CHECK(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

uint32_t checked_u32(size_t x, const char* what) {
  if (x > 0xffffffffull) raise_arg("DeviceBatchSet", what, "exceeds 2^32 entries in total");
  return static_cast<uint32_t>(x);
}

uint32_t grid_for(size_t jobs, size_t per_block) {
  size_t g = (jobs + per_block - 1) / per_block;
  return static_cast<uint32_t>(std::clamp<size_t>(g, 1, 1u << 30));
}
}  // namespace

struct DeviceBatchSet::Impl {
  std::vector<JobDesc> desc;
  size_t max_targets = 0;
  bool need_table = false;
  DeviceArray<JobDesc> d_desc, d_desc0;
  DeviceArray<Envelope> umq, umq0, prq, prq0, msgs, recvs;
  DeviceArray<Match> matches;
  DeviceArray<int32_t> scratch;
  DeviceArray<uint32_t> table;

  SetView view() const {
    return SetView{
        d_desc.ptr, static_cast<uint32_t>(desc.size()), umq.ptr, prq.ptr, msgs.ptr, recvs.ptr, matches.ptr, scratch.ptr,
        table.ptr};
  }
};

bool gpu_available() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}

std::string gpu_name() {
  if (!gpu_available()) return {};
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) return {};
  return p.name;
}

DeviceBatchSet::DeviceBatchSet(const std::vector<Batch>& batches) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  std::vector<Envelope> umq, prq, msgs, recvs;
  size_t matches = 0, scratch = 0, table = 0;
  m.desc.reserve(batches.size());
  for (const Batch& b : batches) {
    JobDesc d{};
    d.umq_off = checked_u32(umq.size(), "umq");
    d.umq_size = checked_u32(b.umq.size(), "umq");
    d.umq_cap = checked_u32(b.umq.size() + b.msgs.size(), "umq");
    umq.insert(umq.end(), b.umq.begin(), b.umq.end());
    umq.resize(umq.size() + b.msgs.size());
    d.prq_off = checked_u32(prq.size(), "prq");
    d.prq_size = checked_u32(b.prq.size(), "prq");
    d.prq_cap = checked_u32(b.prq.size() + b.recvs.size(), "prq");
    prq.insert(prq.end(), b.prq.begin(), b.prq.end());
    prq.resize(prq.size() + b.recvs.size());
    d.msg_off = checked_u32(msgs.size(), "msgs");
    d.n_msgs = checked_u32(b.msgs.size(), "msgs");
    msgs.insert(msgs.end(), b.msgs.begin(), b.msgs.end());
    d.recv_off = checked_u32(recvs.size(), "recvs");
    d.n_recvs = checked_u32(b.recvs.size(), "recvs");
    recvs.insert(recvs.end(), b.recvs.begin(), b.recvs.end());
    d.match_off = checked_u32(matches, "matches");
    matches += b.msgs.size() + b.recvs.size();
    d.scratch_off = checked_u32(scratch, "scratch");
    scratch += std::max(b.msgs.size(), b.recvs.size());
    const size_t most = max_targets_of(b);
    m.max_targets = std::max(m.max_targets, most);
    if (most > kHashSharedTargets) {  // hash tables of this job live in global memory
      uint32_t slots = 1;
      while (slots < 2 * most) slots <<= 1;
      d.table_off = checked_u32(table, "hash table");
      d.table_slots = slots;
      table += size_t{kHashWordsPerSlot} * slots + slots / 2;
    }
    m.desc.push_back(d);
  }
  m.d_desc.alloc(m.desc.size());
  m.d_desc0.alloc(m.desc.size());
  m.umq.alloc(umq.size());
  m.umq0.alloc(umq.size());
  m.prq.alloc(prq.size());
  m.prq0.alloc(prq.size());
  m.msgs.alloc(msgs.size());
  m.recvs.alloc(recvs.size());
  m.matches.alloc(matches);
  m.scratch.alloc(scratch);
  m.table.alloc(table);
  m.d_desc0.upload(m.desc);
  m.umq0.upload(umq);
  m.prq0.upload(prq);
  m.msgs.upload(msgs);
  m.recvs.upload(recvs);
  restore(nullptr);
  GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

DeviceBatchSet::~DeviceBatchSet() = default;
size_t DeviceBatchSet::size() const {
  return impl_->desc.size();
}
size_t DeviceBatchSet::max_targets() const {
  return impl_->max_targets;
}

void DeviceBatchSet::restore(cudaStream_t stream) {
  Impl& m = *impl_;
  m.d_desc.copy_from(m.d_desc0, stream);
  m.umq.copy_from(m.umq0, stream);
  m.prq.copy_from(m.prq0, stream);
}

void DeviceBatchSet::run(Engine e, cudaStream_t stream, const RunOptions& o) {
  Impl& m = *impl_;
  if (m.desc.empty()) return;
  const SetView v = m.view();
  const size_t n = m.desc.size();
  const size_t warps_per_block = kWarpKernelThreads / 32;
  const bool small = m.max_targets <= kDirectMaxTargets;
  const bool warp_level = o.level == Level::warp || (o.level == Level::automatic && small);
  switch (e) {
    case Engine::mpi:
    case Engine::no_unexpected:
      if (warp_level) {
        if (e == Engine::mpi) {
          warp_kernel<0><<<grid_for(n, warps_per_block), kWarpKernelThreads, 0, stream>>>(v);
        } else {
          warp_kernel<1><<<grid_for(n, warps_per_block), kWarpKernelThreads, 0, stream>>>(v);
        }
      } else {
        if (e == Engine::mpi) {
          block_kernel<false><<<grid_for(n, 1), kBlockThreads, 0, stream>>>(v);
        } else {
          block_kernel<true><<<grid_for(n, 1), kBlockThreads, 0, stream>>>(v);
        }
      }
      GPUCOMM_CUDA_CHECK_LAUNCH(std::string(engine_name(e)) + (warp_level ? " warp kernel" : " block kernel"));
      break;
    case Engine::partitioned:
      warp_kernel<2><<<grid_for(n, warps_per_block), kWarpKernelThreads, 0, stream>>>(v);
      GPUCOMM_CUDA_CHECK_LAUNCH("partitioned warp kernel");
      break;
    case Engine::hash: {
      static const bool configured = [] {
        GPUCOMM_CUDA_CHECK(cudaFuncSetAttribute(hash_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                static_cast<int>(kHashSharedBytes)));
        return true;
      }();
      (void)configured;
      hash_kernel<<<grid_for(n, 1), kHashThreads, kHashSharedBytes, stream>>>(v, o.hash);
      GPUCOMM_CUDA_CHECK_LAUNCH("hash kernel");
      break;
    }
  }
}

std::vector<Outcome> DeviceBatchSet::download(cudaStream_t stream, std::vector<uint32_t>* status) {
  Impl& m = *impl_;
  GPUCOMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto desc = m.d_desc.download();
  const auto umq = m.umq.download();
  const auto prq = m.prq.download();
  const auto matches = m.matches.download();
  std::vector<Outcome> out(desc.size());
  if (status) status->assign(desc.size(), 0);
  for (size_t i = 0; i < desc.size(); ++i) {
    const JobDesc& d = desc[i];
    const JobDesc& d0 = m.desc[i];
    if (d.umq_size > d0.umq_cap || d.prq_size > d0.prq_cap || d.n_matches > d0.n_msgs + d0.n_recvs) {
      raise(Errc::internal, "DeviceBatchSet::download",
            "job " + std::to_string(i) + " reports sizes beyond its capacities (umq " + std::to_string(d.umq_size) +
                ", prq " + std::to_string(d.prq_size) + ", matches " + std::to_string(d.n_matches) + ")");
    }
    Outcome& o = out[i];
    o.matches.assign(matches.begin() + d0.match_off, matches.begin() + d0.match_off + d.n_matches);
    o.umq.assign(umq.begin() + d0.umq_off, umq.begin() + d0.umq_off + d.umq_size);
    o.prq.assign(prq.begin() + d0.prq_off, prq.begin() + d0.prq_off + d.prq_size);
    if (status) (*status)[i] = d.status;
  }
  return out;
}

}  // namespace gpucomm::matching
