// The halo exchange of a 1-, 2- or 3-D field over a grid of PEs (docs/PATTERNS.md, "Halo
// exchange"). PE p at grid coordinates c sends, along each axis a and direction d = +1/-1, its
// last (d = +1) or first (d = -1) g_a interior cells to the ghost cells on the opposite side of
// its neighbour c + d e_a (wrapping where periodic; no transfer past a non-periodic edge). Along
// the other axes a face spans the interior only; with corners, axes before a span their ghost
// cells too, and the transfer depends on the transfers that fill them (x, then y, then z), which
// carries edges and corners along.
#include <algorithm>

#include "gpucomm/core/error.hpp"
#include "gpucomm/patterns/prebuilt.hpp"

namespace gpucomm::patterns {

size_t Field::bytes() const {
  return (dims[2] - 1) * slice_pitch() + (dims[1] - 1) * row_pitch() + dims[0] * elem;
}

std::array<int, 3> halo_grid(int pes, int ndim, std::array<int, 3> grid) {
  GPUCOMM_CHECK_ARG(ndim >= 1 && ndim <= 3, "patterns::halo", "ndim", std::to_string(ndim) + " (1, 2 or 3)");
  for (int a = ndim; a < 3; ++a) {
    GPUCOMM_CHECK_ARG(grid[static_cast<size_t>(a)] <= 1, "patterns::halo", "grid",
                      "a " + std::to_string(ndim) + "-D field has no PEs along axis " + std::to_string(a));
    grid[static_cast<size_t>(a)] = 1;
  }
  int fixed = 1;
  for (int a = 0; a < ndim; ++a) {
    GPUCOMM_CHECK_ARG(grid[static_cast<size_t>(a)] >= 0, "patterns::halo", "grid", "negative PE count");
    if (grid[static_cast<size_t>(a)] > 0) fixed *= grid[static_cast<size_t>(a)];
  }
  GPUCOMM_CHECK_ARG(fixed > 0 && pes % fixed == 0, "patterns::halo", "grid",
                    "the given PEs per axis do not divide the job's " + std::to_string(pes) + " PEs");
  // The free axes share the rest: prime factors, largest first, to the axis with the fewest PEs.
  int rest = pes / fixed;
  std::vector<int> factors;
  for (int f = 2; f * f <= rest; ++f)
    while (rest % f == 0) factors.push_back(f), rest /= f;
  if (rest > 1) factors.push_back(rest);
  std::sort(factors.rbegin(), factors.rend());
  std::array<int, 3> out = grid;
  bool any_free = false;
  for (int a = 0; a < ndim; ++a)
    if (out[static_cast<size_t>(a)] == 0) out[static_cast<size_t>(a)] = 1, any_free = true;
  if (!any_free) {
    GPUCOMM_CHECK_ARG(fixed == pes, "patterns::halo", "grid",
                      "the PEs per axis multiply to " + std::to_string(fixed) + ", the job has " + std::to_string(pes));
    return out;
  }
  for (int f : factors) {
    int best = -1;
    for (int a = 0; a < ndim; ++a) {
      if (grid[static_cast<size_t>(a)] == 0 &&
          (best < 0 || out[static_cast<size_t>(a)] < out[static_cast<size_t>(best)]))
        best = a;
    }
    out[static_cast<size_t>(best)] *= f;
  }
  return out;
}

namespace {

struct Span {
  size_t lo, hi;  // cells [lo, hi)
};

const char* axis_name(size_t a) {
  static const char* names[] = {"x", "y", "z"};
  return names[a];
}

}  // namespace

Pattern halo(const Runtime& rt, const Field& f, const HaloOptions& o) {
  const char* call = "patterns::halo";
  GPUCOMM_CHECK_ARG(f.ndim >= 1 && f.ndim <= 3, call, "field.ndim", std::to_string(f.ndim) + " (1, 2 or 3)");
  GPUCOMM_CHECK_ARG(f.elem > 0, call, "field.elem", "is 0");
  GPUCOMM_CHECK_ARG(f.data != nullptr, call, "field.data", "is null");
  const auto nd = static_cast<size_t>(f.ndim);
  for (size_t a = 0; a < 3; ++a) {
    GPUCOMM_CHECK_ARG(f.dims[a] > 0, call, "field.dims", std::string(axis_name(a)) + " has no cells");
    if (a >= nd) {
      GPUCOMM_CHECK_ARG(f.dims[a] == 1, call, "field.dims",
                        "a " + std::to_string(f.ndim) + "-D field has one cell along " + axis_name(a));
    }
  }
  GPUCOMM_CHECK_ARG(
      f.pitch == 0 || f.pitch >= f.dims[0] * f.elem, call, "field.pitch",
      std::to_string(f.pitch) + " is less than a row of " + std::to_string(f.dims[0] * f.elem) + " bytes");
  GPUCOMM_CHECK_ARG(f.plane_pitch == 0 || f.plane_pitch >= f.dims[1] * f.row_pitch(), call, "field.plane_pitch",
                    std::to_string(f.plane_pitch) + " is less than a plane of " +
                        std::to_string(f.dims[1] * f.row_pitch()) + " bytes");
  const int pes = rt.size();
  const std::array<int, 3> grid = halo_grid(pes, f.ndim, o.grid);
  std::array<size_t, 3> g{};
  for (size_t a = 0; a < nd; ++a) {
    g[a] = o.ghost[a];
    GPUCOMM_CHECK_ARG(g[a] == 0 || f.dims[a] >= 3 * g[a], call, "ghost",
                      std::string(axis_name(a)) + ": " + std::to_string(f.dims[a]) + " cells with " +
                          std::to_string(g[a]) + " ghost cells per side leave no interior slab as wide as the ghosts");
  }
  const size_t bytes = f.bytes();
  const Buffer mine = local(rt, f.data, bytes);
  GPUCOMM_CHECK_ARG(pes == 1 || mine.place == Place::symmetric, call, "field.data",
                    "a halo exchange across PEs needs the field in the symmetric heap (Runtime::malloc)");
  auto field_of = [&](int pe) { return pes == 1 ? mine : symmetric(f.data, bytes, pe); };
  auto coords = [&](int pe) {
    return std::array<int, 3>{pe % grid[0], (pe / grid[0]) % grid[1], pe / (grid[0] * grid[1])};
  };
  auto rank_at = [&](std::array<int, 3> c) { return c[0] + grid[0] * (c[1] + grid[1] * c[2]); };
  auto box_of = [&](const std::array<Span, 3>& s) {
    return Box{s[2].lo * f.slice_pitch() + s[1].lo * f.row_pitch() + s[0].lo * f.elem,
               (s[0].hi - s[0].lo) * f.elem,
               s[1].hi - s[1].lo,
               s[2].hi - s[2].lo,
               f.row_pitch(),
               f.slice_pitch()};
  };

  Pattern p("halo");
  struct Made {
    TransferId id;
    int to;
    size_t axis;
  };
  std::vector<Made> made;
  for (int pe = 0; pe < pes; ++pe) {
    const auto c = coords(pe);
    for (size_t a = 0; a < nd; ++a) {
      if (g[a] == 0) continue;
      for (int dir : {+1, -1}) {
        auto nc = c;
        nc[a] += dir;
        if (nc[a] < 0 || nc[a] >= grid[a]) {
          if (!o.periodic[a]) continue;
          nc[a] = (nc[a] + grid[a]) % grid[a];
        }
        const int to = rank_at(nc);
        std::array<Span, 3> src{}, dst{};
        for (size_t b = 0; b < 3; ++b) {
          const size_t n = f.dims[b], gb = b < nd ? g[b] : 0;
          const Span inner{gb, n - gb}, all{0, n};
          src[b] = dst[b] = (o.corners && b < a) ? all : inner;
        }
        const size_t n = f.dims[a];
        src[a] = dir > 0 ? Span{n - 2 * g[a], n - g[a]} : Span{g[a], 2 * g[a]};
        dst[a] = dir > 0 ? Span{0, g[a]} : Span{n - g[a], n};
        TransferOptions opt;
        opt.owner = pe;
        opt.direction = static_cast<int8_t>(dir);
        opt.axis = static_cast<int8_t>(a);
        opt.label = "rank " + std::to_string(pe) + " " + axis_name(a) + (dir > 0 ? "+" : "-") + " face";
        const TransferId id = p.add(Region{field_of(to), box_of(dst)}, Region{field_of(pe), box_of(src)}, opt);
        made.push_back({id, to, a});
      }
    }
  }
  if (o.corners) {
    // A face along a reads the ghosts of the axes before a: after the transfers that fill them.
    for (const Made& m : made) {
      const int from = p.transfers()[m.id].options.owner;
      for (const Made& e : made)
        if (e.axis < m.axis && e.to == from) p.depends(m.id, e.id);
    }
  }
  p.seal_as(Kind::halo);
  return p;
}

}  // namespace gpucomm::patterns
