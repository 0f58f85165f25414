#include "gpucomm/patterns/region.hpp"

#include <cstdio>

#include "gpucomm/core/error.hpp"

namespace gpucomm::patterns {

const char* place_name(Place p) noexcept {
  switch (p) {
    case Place::host:
      return "host";
    case Place::device:
      return "device";
    case Place::symmetric:
      return "symmetric";
  }
  return "?";
}

Buffer host(void* ptr, size_t bytes) {
  return Buffer{ptr, bytes, Place::host, -1};
}

Buffer device(void* ptr, size_t bytes) {
  return Buffer{ptr, bytes, Place::device, -1};
}

Buffer symmetric(void* sym, size_t bytes, int pe) {
  GPUCOMM_CHECK_ARG(pe >= 0, "patterns::symmetric", "pe", std::to_string(pe) + " is not a PE");
  return Buffer{sym, bytes, Place::symmetric, pe};
}

size_t Box::span() const {
  if (width == 0 || rows == 0 || planes == 0) return 0;
  return (planes - 1) * slice_pitch() + (rows - 1) * row_pitch() + width;
}

bool Box::contiguous() const {
  return span() == bytes();
}

Region whole(const Buffer& b) {
  return Region{b, Box{0, b.bytes, 1, 1, 0, 0}};
}

Region range(const Buffer& b, size_t offset, size_t bytes) {
  return Region{b, Box{offset, bytes, 1, 1, 0, 0}};
}

Region box(const Buffer& b, size_t offset, size_t width, size_t rows, size_t pitch, size_t planes, size_t plane_pitch) {
  return Region{b, Box{offset, width, rows, planes, pitch, plane_pitch}};
}

std::string describe(const Buffer& b) {
  char text[160];
  if (b.place == Place::symmetric) {
    std::snprintf(text, sizeof text, "rank %d's copy of the symmetric object at %p (%zu bytes)", b.pe, b.ptr, b.bytes);
  } else {
    std::snprintf(text, sizeof text, "%s memory at %p (%zu bytes)", place_name(b.place), b.ptr, b.bytes);
  }
  return text;
}

}  // namespace gpucomm::patterns
