#pragma once
// Prebuilt patterns: broadcast, scatter, gather, all-gather, and the halo exchange of 1-, 2- and
// 3-D fields. Each returns a sealed Pattern (Pattern::editable() gives a changeable copy); the
// forms that take a Runtime declare the whole job's pattern and are called by every PE with the
// same arguments (its own addresses).
#include <array>
#include <cstddef>
#include <initializer_list>
#include <vector>

#include "gpucomm/patterns/pattern.hpp"
#include "gpucomm/patterns/plan.hpp"
#include "gpucomm/runtime/runtime.hpp"

namespace gpucomm::patterns {

// `ptr` as the runtime sees it: inside the symmetric heap -> this PE's symmetric copy; device
// memory of this PE's GPU -> device; anything else -> host.
Buffer local(const Runtime& rt, void* ptr, size_t bytes);

// ---- one PE: its own buffers ----
Pattern broadcast(const Region& src, const std::vector<Region>& dsts);
// src holds dsts.size() blocks of dst's size, back to back.
Pattern scatter(const Region& src, const std::vector<Region>& dsts);
Pattern gather(const Region& dst, const std::vector<Region>& srcs);

// ---- the job: symmetric buffers (the same call on every PE) ----
// root's `src` (host, device or symmetric memory of root; other PEs pass a buffer of the same
// place and size, its address unused) into every PE's copy of the symmetric `dst`. When src is
// root's copy of dst, root itself gets no copy.
Pattern broadcast(const Runtime& rt, const Buffer& src, void* dst, int root);
// Block i (dst_bytes long) of root's `src` into PE i's copy of the symmetric `dst`.
Pattern scatter(const Runtime& rt, const Buffer& src, void* dst, size_t dst_bytes, int root);
// PE i's copy of the symmetric `src` (src_bytes long) into block i of root's `dst`.
Pattern gather(const Runtime& rt, void* src, size_t src_bytes, const Buffer& dst, int root);
// PE i's copy of the symmetric `src` (block_bytes) into block i of every PE's copy of the
// symmetric `dst`; src nullptr: in place (block i of PE i's dst is the source).
Pattern all_gather(const Runtime& rt, void* src, void* dst, size_t block_bytes);

// A 1-, 2- or 3-D array of `elem`-byte elements, x fastest, ghost cells included in `dims`.
// pitch and plane_pitch (bytes; 0: packed) and `offset` describe a sub-array of a larger
// allocation.
struct Field {
  void* data = nullptr;  // element (0, 0, 0)
  size_t elem = 0;
  std::array<size_t, 3> dims{1, 1, 1};
  int ndim = 3;
  size_t pitch = 0;
  size_t plane_pitch = 0;

  template <class T>
  static Field of(T* data, std::initializer_list<size_t> dims) {
    Field f;
    f.data = const_cast<void*>(static_cast<const void*>(data));
    f.elem = sizeof(T);
    f.ndim = static_cast<int>(dims.size());
    size_t i = 0;
    for (size_t d : dims) {
      if (i < 3) f.dims[i] = d;
      ++i;
    }
    return f;
  }
  size_t row_pitch() const { return pitch ? pitch : dims[0] * elem; }
  size_t slice_pitch() const { return plane_pitch ? plane_pitch : dims[1] * row_pitch(); }
  size_t bytes() const;  // from element (0,0,0) to one past the last
};

// A value per axis (x, y, z); one value sets all three.
template <class T>
struct PerAxis {
  std::array<T, 3> v;
  PerAxis(T all) : v{all, all, all} {}  // NOLINT(google-explicit-constructor): `.ghost = 2` reads best
  PerAxis(T x, T y, T z) : v{x, y, z} {}
  T operator[](size_t i) const { return v[i]; }
};

struct HaloOptions {
  PerAxis<size_t> ghost = size_t{1};  // ghost cells on each side, per axis
  PerAxis<bool> periodic = false;
  // PEs per axis (product = the job's PEs); zeros: a balanced split (like MPI_Dims_create).
  // A job of one PE exchanges with itself where periodic.
  std::array<int, 3> grid{0, 0, 0};
  // Also fill edge and corner ghosts: axis y moves after x (with x's ghosts), z after y.
  bool corners = true;
};

// The halo exchange of `f` on every PE: each PE's boundary cells into its neighbours' ghost
// cells. With several PEs the field must be symmetric (the same allocation on every PE).
Pattern halo(const Runtime& rt, const Field& f, const HaloOptions& o = {});
// The PE grid halo() uses for `pes` PEs and an `ndim`-D field with `grid` requested.
std::array<int, 3> halo_grid(int pes, int ndim, std::array<int, 3> grid);

}  // namespace gpucomm::patterns
