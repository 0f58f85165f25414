// Broadcast, scatter, gather and all-gather, on one PE's buffers and across the job's PEs.
#include "gpucomm/patterns/prebuilt.hpp"

#include <cuda_runtime_api.h>

#include "gpucomm/core/error.hpp"

namespace gpucomm::patterns {

Buffer local(const Runtime& rt, void* ptr, size_t bytes) {
  auto& h = const_cast<Runtime&>(rt).heap();
  if (ptr && h.contains(ptr, bytes)) return symmetric(ptr, bytes, rt.rank());
  if (rt.pe_kind() == PeKind::gpu && ptr) {
    cudaPointerAttributes a{};
    const bool ok = cudaPointerGetAttributes(&a, ptr) == cudaSuccess;
    (void)cudaGetLastError();
    if (ok && (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged)) return device(ptr, bytes);
  }
  return host(ptr, bytes);
}

namespace {

TransferOptions labelled(const std::string& label, int owner = -1) {
  TransferOptions o;
  o.label = label;
  o.owner = owner;
  return o;
}

// Block i of a run of blocks shaped like `like` (rows and planes packed).
Region block_like(const Region& run, const Box& like, size_t i) {
  const size_t w = like.width, rows = like.rows;
  return Region{run.buffer, Box{run.box.offset + i * like.bytes(), w, rows, like.planes, w, w * rows}};
}

void check_run(const Region& run, size_t blocks, size_t block_bytes, const char* call, const char* arg) {
  GPUCOMM_CHECK_ARG(run.box.contiguous(), call, arg, "must be one contiguous run of blocks");
  GPUCOMM_CHECK_ARG(
      run.box.bytes() >= blocks * block_bytes, call, arg,
      "holds " + std::to_string(run.box.bytes()) + " bytes, the blocks need " + std::to_string(blocks * block_bytes));
}

}  // namespace

Pattern broadcast(const Region& src, const std::vector<Region>& dsts) {
  Pattern p("broadcast");
  for (size_t i = 0; i < dsts.size(); ++i) p.add(dsts[i], src, labelled("broadcast to #" + std::to_string(i)));
  p.seal_as(Kind::broadcast);
  return p;
}

Pattern scatter(const Region& src, const std::vector<Region>& dsts) {
  Pattern p("scatter");
  if (!dsts.empty()) check_run(src, dsts.size(), dsts[0].box.bytes(), "patterns::scatter", "src");
  for (size_t i = 0; i < dsts.size(); ++i)
    p.add(dsts[i], block_like(src, dsts[0].box, i), labelled("scatter block " + std::to_string(i)));
  p.seal_as(Kind::scatter);
  return p;
}

Pattern gather(const Region& dst, const std::vector<Region>& srcs) {
  Pattern p("gather");
  if (!srcs.empty()) check_run(dst, srcs.size(), srcs[0].box.bytes(), "patterns::gather", "dst");
  for (size_t i = 0; i < srcs.size(); ++i)
    p.add(block_like(dst, srcs[0].box, i), srcs[i], labelled("gather block " + std::to_string(i)));
  p.seal_as(Kind::gather);
  return p;
}

Pattern broadcast(const Runtime& rt, const Buffer& src, void* dst, int root) {
  GPUCOMM_CHECK_ARG(root >= 0 && root < rt.size(), "patterns::broadcast", "root", std::to_string(root));
  Pattern p("broadcast");
  const bool in_place = src.place == Place::symmetric && src.ptr == dst && src.pe == root;
  for (int q = 0; q < rt.size(); ++q) {
    if (in_place && q == root) continue;
    p.add(symmetric(dst, src.bytes, q), src, labelled("broadcast to rank " + std::to_string(q), root));
  }
  p.seal_as(Kind::broadcast);
  return p;
}

Pattern scatter(const Runtime& rt, const Buffer& src, void* dst, size_t dst_bytes, int root) {
  GPUCOMM_CHECK_ARG(root >= 0 && root < rt.size(), "patterns::scatter", "root", std::to_string(root));
  const auto n = static_cast<size_t>(rt.size());
  GPUCOMM_CHECK_ARG(
      src.bytes >= n * dst_bytes, "patterns::scatter", "src",
      std::to_string(src.bytes) + " bytes for " + std::to_string(n) + " blocks of " + std::to_string(dst_bytes));
  Pattern p("scatter");
  for (int q = 0; q < rt.size(); ++q) {
    p.add(symmetric(dst, dst_bytes, q), 0, src, static_cast<size_t>(q) * dst_bytes, dst_bytes,
          labelled("scatter to rank " + std::to_string(q), root));
  }
  p.seal_as(Kind::scatter);
  return p;
}

Pattern gather(const Runtime& rt, void* src, size_t src_bytes, const Buffer& dst, int root) {
  GPUCOMM_CHECK_ARG(root >= 0 && root < rt.size(), "patterns::gather", "root", std::to_string(root));
  const auto n = static_cast<size_t>(rt.size());
  GPUCOMM_CHECK_ARG(
      dst.bytes >= n * src_bytes, "patterns::gather", "dst",
      std::to_string(dst.bytes) + " bytes for " + std::to_string(n) + " blocks of " + std::to_string(src_bytes));
  Pattern p("gather");
  for (int q = 0; q < rt.size(); ++q) {
    p.add(dst, static_cast<size_t>(q) * src_bytes, symmetric(src, src_bytes, q), 0, src_bytes,
          labelled("gather from rank " + std::to_string(q), root));
  }
  p.seal_as(Kind::gather);
  return p;
}

Pattern all_gather(const Runtime& rt, void* src, void* dst, size_t block_bytes) {
  const auto n = static_cast<size_t>(rt.size());
  Pattern p("all_gather");
  for (int from = 0; from < rt.size(); ++from) {
    for (int to = 0; to < rt.size(); ++to) {
      if (!src && from == to) continue;  // in place: the block is there already
      const Buffer d = symmetric(dst, n * block_bytes, to);
      const Region s =
          src ? whole(symmetric(src, block_bytes, from))
              : range(symmetric(dst, n * block_bytes, from), static_cast<size_t>(from) * block_bytes, block_bytes);
      p.add(range(d, static_cast<size_t>(from) * block_bytes, block_bytes), s,
            labelled("block of rank " + std::to_string(from) + " to rank " + std::to_string(to), from));
    }
  }
  p.seal_as(Kind::all_gather);
  return p;
}

}  // namespace gpucomm::patterns
