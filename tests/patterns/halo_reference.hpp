#pragma once
// A CPU reference of the halo exchange, written cell by cell from its definition (not from the
// boxes patterns::halo builds): axis by axis, every ghost cell of a PE takes the value of the
// matching interior cell of its neighbour (wrapping where periodic). Along the other axes a face
// spans the interior, or with corners the whole range of the axes done before.
#include <array>
#include <cstddef>
#include <cstring>
#include <vector>

#include "gpucomm/patterns/prebuilt.hpp"

namespace gpucomm::patterns::testing {

struct HaloCase {
  int ndim = 3;
  std::array<size_t, 3> dims{1, 1, 1};  // cells, ghosts included
  std::array<size_t, 3> ghost{0, 0, 0};
  std::array<bool, 3> periodic{false, false, false};
  std::array<int, 3> grid{1, 1, 1};
  bool corners = true;
  size_t elem = 8;
  size_t pitch = 0, plane_pitch = 0;  // bytes (0: packed)

  size_t row() const { return pitch ? pitch : dims[0] * elem; }
  size_t plane() const { return plane_pitch ? plane_pitch : dims[1] * row(); }
  size_t bytes() const { return (dims[2] - 1) * plane() + (dims[1] - 1) * row() + dims[0] * elem; }
  size_t at(size_t x, size_t y, size_t z) const { return z * plane() + y * row() + x * elem; }

  // The same case in the library's terms, for a field at `data`.
  Field field(void* data) const {
    Field f;
    f.data = data;
    f.elem = elem;
    f.dims = dims;
    f.ndim = ndim;
    f.pitch = pitch;
    f.plane_pitch = plane_pitch;
    return f;
  }
  HaloOptions options() const {
    HaloOptions o;
    o.ghost = PerAxis<size_t>(ghost[0], ghost[1], ghost[2]);
    o.periodic = PerAxis<bool>(periodic[0], periodic[1], periodic[2]);
    o.corners = corners;
    return o;
  }
};

// fields[pe]: each PE's field (bytes()). Exchanges in place.
inline void halo_reference(std::vector<std::vector<char>>& fields, const HaloCase& h) {
  const int pes = h.grid[0] * h.grid[1] * h.grid[2];
  auto coords = [&](int pe) {
    return std::array<int, 3>{pe % h.grid[0], (pe / h.grid[0]) % h.grid[1], pe / (h.grid[0] * h.grid[1])};
  };
  for (size_t a = 0; a < static_cast<size_t>(h.ndim); ++a) {
    const size_t g = h.ghost[a], n = h.dims[a];
    if (g == 0) continue;
    const auto before = fields;
    for (int pe = 0; pe < pes; ++pe) {
      const auto c = coords(pe);
      std::array<size_t, 3> lo{}, hi{};
      for (size_t b = 0; b < 3; ++b) {
        const size_t gb = b < static_cast<size_t>(h.ndim) ? h.ghost[b] : 0;
        lo[b] = (h.corners && b < a) ? 0 : gb;
        hi[b] = (h.corners && b < a) ? h.dims[b] : h.dims[b] - gb;
      }
      for (int side : {-1, +1}) {  // the low ghosts come from the neighbour below, the high from above
        auto nc = c;
        nc[a] += side;
        if (nc[a] < 0 || nc[a] >= h.grid[a]) {
          if (!h.periodic[a]) continue;
          nc[a] = (nc[a] + h.grid[a]) % h.grid[a];
        }
        const int from = nc[0] + h.grid[0] * (nc[1] + h.grid[1] * nc[2]);
        for (size_t k = 0; k < g; ++k) {
          const size_t ghost = side < 0 ? k : n - g + k;           // this PE's ghost cell along a
          const size_t source = side < 0 ? n - 2 * g + k : g + k;  // the neighbour's interior cell
          std::array<size_t, 3> l = lo, u = hi;
          l[a] = ghost;
          u[a] = ghost + 1;
          for (size_t z = l[2]; z < u[2]; ++z) {
            for (size_t y = l[1]; y < u[1]; ++y) {
              for (size_t x = l[0]; x < u[0]; ++x) {
                std::array<size_t, 3> s{x, y, z};
                s[a] = source;
                std::memcpy(fields[static_cast<size_t>(pe)].data() + h.at(x, y, z),
                            before[static_cast<size_t>(from)].data() + h.at(s[0], s[1], s[2]), h.elem);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace gpucomm::patterns::testing
