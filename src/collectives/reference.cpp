// The CPU reference (reference.hpp): each element folded in the order the algorithm folds it.
#include "gpucomm/collectives/reference.hpp"

#include <cstring>

#include "gpucomm/collectives/dispatch.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::coll {

namespace {

template <class S>
S at(const std::vector<uint8_t>& buf, uint64_t i) {
  S v;
  std::memcpy(&v, buf.data() + i * sizeof(S), sizeof(S));
  return v;
}
template <class S>
void put(std::vector<uint8_t>& buf, uint64_t i, S v) {
  std::memcpy(buf.data() + i * sizeof(S), &v, sizeof(S));
}

// Element `i` of the buffer (or of a block) as member `r` holds it.
template <DataType DT>
struct Folder {
  using N = Num<DT>;
  using S = typename N::S;
  using A = typename N::A;
  const RefSetup& s;
  const std::vector<std::vector<uint8_t>>& in;
  int n;

  S x(int r, uint64_t i) const { return at<S>(in[static_cast<size_t>(r)], i); }

  // Rank order, accumulation type, one rounding.
  S ranks(uint64_t i) const {
    return N::from_acc(algo::fold_ranks<DT>(s.redop, n, [&](int r) { return x(r, i); }));
  }
  // Ring positions start, start+1, ... (n of them) on a channel's direction; storage-type
  // rounding at every hop.
  S ring(uint64_t i, int start, bool fwd) const {
    S acc = x(ring_rank(start, n, fwd), i);
    for (int h = 1; h < n; ++h)
      acc = N::from_acc(apply(s.redop, N::to_acc(acc), N::to_acc(x(ring_rank(start + h, n, fwd), i))));
    return acc;
  }
  // Node partials (accumulation type) in local order, then the nodes in order.
  S hierarchical(uint64_t i) const {
    A total{};
    for (size_t a = 0; a < s.nodes.size(); ++a) {
      A part{};
      for (size_t l = 0; l < s.nodes[a].size(); ++l) {
        const A v = N::to_acc(x(s.nodes[a][l], i));
        part = l == 0 ? v : apply(s.redop, part, v);
      }
      total = a == 0 ? part : apply(s.redop, total, part);
    }
    return N::from_acc(total);
  }
  // Element i of an allreduce or reduce.
  S whole(uint64_t i) const {
    if (n == 1 || (s.algo != Algorithm::ring && s.algo != Algorithm::multiring && s.algo != Algorithm::hierarchical))
      return ranks(i);
    if (s.algo == Algorithm::hierarchical) return hierarchical(i);
    for (uint32_t c = 0; c < s.channels; ++c) {
      const Range sl = channel_slice(s.count, s.channels, c, sizeof(S));
      if (i < sl.lo || i >= sl.hi) continue;
      const uint64_t w = window_elems(s.op, Algorithm::ring, DT, s.sizes);
      const uint64_t off = sl.lo + (i - sl.lo) / w * w, len = std::min(w, sl.hi - off);
      const uint64_t part = algo::part_size(len, static_cast<uint64_t>(n), sizeof(S));
      const int k = static_cast<int>((i - off) / part);
      return ring(i, ring_fold_start(k, 1, n), ring_forward(c));
    }
    raise(Errc::internal, "coll::reference", "element outside every channel");
  }
  // Element i of block `b` of a reduce-scatter (the block member b receives).
  S block(int b, uint64_t i) const {
    const uint64_t g = static_cast<uint64_t>(b) * s.count + i;
    if (n == 1 || (s.algo != Algorithm::ring && s.algo != Algorithm::multiring)) {
      return N::from_acc(algo::fold_ranks<DT>(s.redop, n, [&](int r) { return x(r, g); }));
    }
    for (uint32_t c = 0; c < s.channels; ++c) {
      const Range sl = channel_slice(s.count, s.channels, c, sizeof(S));
      if (i < sl.lo || i >= sl.hi) continue;
      const bool fwd = ring_forward(c);
      S acc{};
      const int start = ring_fold_start(ring_pos(b, n, fwd), 0, n);
      for (int h = 0; h < n; ++h) {
        const S v = x(ring_rank(start + h, n, fwd), g);
        acc = h == 0 ? v : N::from_acc(apply(s.redop, N::to_acc(acc), N::to_acc(v)));
      }
      return acc;
    }
    raise(Errc::internal, "coll::reference", "element outside every channel");
  }
};

template <DataType DT>
void reduce_ref(const RefSetup& s, const std::vector<std::vector<uint8_t>>& in, int rank, std::vector<uint8_t>& out) {
  const Folder<DT> f{s, in, static_cast<int>(in.size())};
  using S = typename Num<DT>::S;
  if (s.op == CollOp::reduce_scatter) {
    for (uint64_t i = 0; i < s.count; ++i) put<S>(out, i, f.block(rank, i));
    return;
  }
  if (s.op == CollOp::reduce && rank != s.root) return;
  for (uint64_t i = 0; i < s.count; ++i) put<S>(out, i, f.whole(i));
}

void copy_bytes(std::vector<uint8_t>& out, uint64_t at, const std::vector<uint8_t>& from, uint64_t from_at,
                uint64_t bytes) {
  if (bytes) std::memcpy(out.data() + at, from.data() + from_at, bytes);
}

}  // namespace

std::vector<uint8_t> reference(const RefSetup& s, const std::vector<std::vector<uint8_t>>& sends, int rank,
                               std::vector<uint8_t> recv) {
  const int n = static_cast<int>(sends.size());
  const uint64_t sz = type_size(s.dt), blk = s.count * sz;
  switch (s.op) {
    case CollOp::barrier:
      return recv;
    case CollOp::broadcast:
      copy_bytes(recv, 0, sends[static_cast<size_t>(s.root)], 0, blk);
      return recv;
    case CollOp::allgather:
      for (int j = 0; j < n; ++j)
        copy_bytes(recv, static_cast<uint64_t>(j) * blk, sends[static_cast<size_t>(j)], 0, blk);
      return recv;
    case CollOp::alltoall:
      for (int j = 0; j < n; ++j) {
        copy_bytes(recv, static_cast<uint64_t>(j) * blk, sends[static_cast<size_t>(j)],
                   static_cast<uint64_t>(rank) * blk, blk);
      }
      return recv;
    case CollOp::alltoallv:
      for (int j = 0; j < n; ++j) {
        const auto ju = static_cast<size_t>(j), ru = static_cast<size_t>(rank);
        copy_bytes(recv, s.recv_displs[ju][ru] * sz, sends[ju], s.send_displs[ju][ru] * sz, s.counts[ju][ru] * sz);
      }
      return recv;
    default:
      break;
  }
  with_type(s.dt, [&](auto t) { reduce_ref<decltype(t)::value>(s, sends, rank, recv); });
  return recv;
}

}  // namespace gpucomm::coll
