#include "box.hpp"

#include <algorithm>

namespace gpucomm::patterns::detail {

namespace {

bool mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// Floor division of a signed value by a positive one.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

bool ranges_meet(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {  // [a0, a1) and [b0, b1)
  return a0 < b1 && b0 < a1;
}

// Boxes of one array (same pitches, rows and planes that do not wrap): `b` sits at plane dp,
// row dr, byte dc of `a`'s coordinates. False when that does not hold.
bool same_array_overlap(const Box& a, uint64_t a_start, const Box& b, uint64_t b_start, bool* overlap) {
  const uint64_t rp = a.row_pitch(), sp = a.slice_pitch();
  if (rp != b.row_pitch() || sp != b.slice_pitch() || rp == 0 || sp == 0 || sp % rp != 0) return false;
  if (a.rows > 1 && a.width > rp) return false;
  const int64_t d = static_cast<int64_t>(b_start) - static_cast<int64_t>(a_start);
  const int64_t dp = floor_div(d, static_cast<int64_t>(sp));
  const int64_t rem = d - dp * static_cast<int64_t>(sp);
  const int64_t dr = rem / static_cast<int64_t>(rp);
  const int64_t dc = rem % static_cast<int64_t>(rp);
  const int64_t rows_per_plane = static_cast<int64_t>(sp / rp);
  // b's rows must stay inside a's row grid: no byte past the pitch, no row past the plane.
  if (dc + static_cast<int64_t>(b.width) > static_cast<int64_t>(rp)) return false;
  if (dr + static_cast<int64_t>(b.rows) > rows_per_plane) return false;
  if (static_cast<int64_t>(a.rows) > rows_per_plane || static_cast<int64_t>(a.width) > static_cast<int64_t>(rp))
    return false;
  *overlap = ranges_meet(0, static_cast<int64_t>(a.planes), dp, dp + static_cast<int64_t>(b.planes)) &&
             ranges_meet(0, static_cast<int64_t>(a.rows), dr, dr + static_cast<int64_t>(b.rows)) &&
             ranges_meet(0, static_cast<int64_t>(a.width), dc, dc + static_cast<int64_t>(b.width));
  return true;
}

}  // namespace

std::string check_box(const Box& b, uint64_t buffer_bytes) {
  if (b.width == 0 || b.rows == 0 || b.planes == 0) return "has no bytes (width, rows and planes must be > 0)";
  if (b.rows > 1 && b.pitch != 0 && b.pitch < b.width) {
    return "pitch " + std::to_string(b.pitch) + " is less than the width " + std::to_string(b.width) +
           " (rows would overlap)";
  }
  uint64_t plane_span = 0, total = 0;
  if (!mul(b.rows - 1, b.row_pitch(), &plane_span) || __builtin_add_overflow(plane_span, b.width, &plane_span))
    return "rows * pitch overflows";
  if (b.planes > 1 && b.plane_pitch != 0 && b.plane_pitch < plane_span) {
    return "plane_pitch " + std::to_string(b.plane_pitch) + " is less than the " + std::to_string(plane_span) +
           " bytes one plane spans (planes would overlap)";
  }
  uint64_t planes_span = 0;
  if (!mul(b.planes - 1, b.slice_pitch(), &planes_span) || __builtin_add_overflow(planes_span, plane_span, &total))
    return "planes * plane_pitch overflows";
  uint64_t end = 0;
  if (__builtin_add_overflow(b.offset, total, &end) || end > buffer_bytes) {
    return "ends at byte " + (end < b.offset ? std::string("(overflow)") : std::to_string(end)) + ", past the " +
           std::to_string(buffer_bytes) + "-byte buffer (offset " + std::to_string(b.offset) + ", span " +
           std::to_string(total) + ")";
  }
  return {};
}

bool box_hits(uint64_t base, const Box& b, uint64_t lo, uint64_t hi) {
  if (hi <= lo) return false;
  const int64_t rp = static_cast<int64_t>(b.row_pitch()), sp = static_cast<int64_t>(b.slice_pitch());
  const int64_t start = static_cast<int64_t>(base + b.offset), width = static_cast<int64_t>(b.width);
  const int64_t plane_span = (static_cast<int64_t>(b.rows) - 1) * rp + width;
  const int64_t l = static_cast<int64_t>(lo) - start, h = static_cast<int64_t>(hi) - start;  // relative [l, h)
  // Planes whose span [p*sp, p*sp + plane_span) meets [l, h).
  int64_t p0 = 0, p1 = static_cast<int64_t>(b.planes) - 1;
  if (b.planes > 1) {
    p0 = std::max<int64_t>(0, floor_div(l - plane_span, sp) + 1);
    p1 = std::min<int64_t>(p1, floor_div(h - 1, sp));
  }
  for (int64_t p = p0; p <= p1; ++p) {
    const int64_t pl = l - p * sp, ph = h - p * sp;  // relative to the plane
    if (!ranges_meet(pl, ph, 0, plane_span)) continue;
    if (b.rows == 1) return true;
    // Rows r with [r*rp, r*rp + width) meeting [pl, ph).
    const int64_t r0 = std::max<int64_t>(0, floor_div(pl - width, rp) + 1);
    const int64_t r1 = std::min<int64_t>(static_cast<int64_t>(b.rows) - 1, floor_div(ph - 1, rp));
    if (r0 <= r1) return true;
  }
  return false;
}

bool boxes_overlap(uint64_t a_base, const Box& a, uint64_t b_base, const Box& b) {
  const uint64_t a0 = a_base + a.offset, b0 = b_base + b.offset;
  if (!ranges_meet(static_cast<int64_t>(a0), static_cast<int64_t>(a0 + a.span()), static_cast<int64_t>(b0),
                   static_cast<int64_t>(b0 + b.span())))
    return false;
  if (a.contiguous() && b.contiguous()) return true;  // spans met
  bool overlap = false;
  if (a0 <= b0 ? same_array_overlap(a, a0, b, b0, &overlap) : same_array_overlap(b, b0, a, a0, &overlap))
    return overlap;
  // Row by row over the box with fewer rows.
  const Box& few = a.rows * a.planes <= b.rows * b.planes ? a : b;
  const Box& many = &few == &a ? b : a;
  const uint64_t few_base = &few == &a ? a_base : b_base, many_base = &few == &a ? b_base : a_base;
  bool hit = false;
  for_each_row(few, [&](size_t off) {
    if (!hit) hit = box_hits(many_base, many, few_base + off, few_base + off + few.width);
  });
  return hit;
}

void merge_rows(Box& d, Box& s) {
  auto rows_packed = [](const Box& b) { return b.rows == 1 || b.row_pitch() == b.width; };
  if (rows_packed(d) && rows_packed(s) && (d.rows > 1 || s.rows > 1)) {
    // Rows back to back: planes become rows of width * rows bytes.
    const size_t w = d.width * d.rows;
    const size_t dsp = d.slice_pitch(), ssp = s.slice_pitch();
    d = Box{d.offset, w, d.planes, 1, d.planes > 1 ? dsp : 0, 0};
    s = Box{s.offset, w, s.planes, 1, s.planes > 1 ? ssp : 0, 0};
  }
  auto planes_packed = [](const Box& b) { return b.planes == 1 || b.slice_pitch() == b.rows * b.row_pitch(); };
  if (d.planes > 1 && planes_packed(d) && planes_packed(s)) {
    // Planes back to back: one plane of rows * planes rows.
    d = Box{d.offset, d.width, d.rows * d.planes, 1, d.row_pitch(), 0};
    s = Box{s.offset, s.width, s.rows * s.planes, 1, s.row_pitch(), 0};
  }
  if (d.rows > 1 && d.row_pitch() == d.width && s.row_pitch() == s.width) {
    d = Box{d.offset, d.width * d.rows, 1, 1, 0, 0};
    s = Box{s.offset, s.width * s.rows, 1, 1, 0, 0};
  }
  if (d.rows == 1 && d.planes == 1) d.pitch = d.plane_pitch = 0;
  if (s.rows == 1 && s.planes == 1) s.pitch = s.plane_pitch = 0;
}

Box sub_range(const Box& b, uint64_t from, uint64_t bytes) {
  return Box{b.offset + from, bytes, 1, 1, 0, 0};
}

}  // namespace gpucomm::patterns::detail
