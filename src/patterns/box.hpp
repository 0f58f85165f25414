#pragma once
// Arithmetic on boxes: validation against a buffer, the rows a box covers, exact overlap of two
// boxes in one address space, and merging rows that are back to back.
#include <cstdint>
#include <string>

#include "gpucomm/patterns/region.hpp"

namespace gpucomm::patterns::detail {

// Empty when `b` is a valid box of a `buffer_bytes` buffer; else what is wrong, e.g. "pitch 8
// is less than the width 16 (rows would overlap)".
std::string check_box(const Box& b, uint64_t buffer_bytes);

// Calls f(offset_of_row_start) for every row, plane by plane.
template <class F>
void for_each_row(const Box& b, F&& f) {
  const size_t rp = b.row_pitch(), sp = b.slice_pitch();
  for (size_t p = 0; p < b.planes; ++p)
    for (size_t r = 0; r < b.rows; ++r) f(b.offset + p * sp + r * rp);
}

// Whether box `a` of a buffer at `a_base` and box `b` of one at `b_base` (same address space)
// share a byte. Exact: boxes of one array are compared by coordinates, others row by row.
bool boxes_overlap(uint64_t a_base, const Box& a, uint64_t b_base, const Box& b);

// Whether [lo, hi) of the address space holds a byte of box `b` of a buffer at `base`.
bool box_hits(uint64_t base, const Box& b, uint64_t lo, uint64_t hi);

// Merges rows (and planes) that are back to back on both sides, so that a transfer becomes
// contiguous, or 2-D, where it can: same bytes, fewer rows.
void merge_rows(Box& dst, Box& src);

// Sub-box of `b` holding bytes [from, from + bytes) of a contiguous box (a chunk).
Box sub_range(const Box& b, uint64_t from, uint64_t bytes);

}  // namespace gpucomm::patterns::detail
