#pragma once
// Where the bytes of a transfer live and which of them move. A Buffer names memory (this PE's
// host memory, a local device buffer, or a PE's copy of a symmetric object); a Box selects bytes
// inside it: `rows` rows of `width` bytes, `pitch` bytes apart, in `planes` planes
// `plane_pitch` bytes apart (a contiguous range is one row). A Region is a Buffer and a Box.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gpucomm::patterns {

enum class Place : uint8_t {
  host,       // host memory of the PE that executes the transfer (pinned or pageable)
  device,     // a device buffer on the GPU of the PE that executes the transfer
  symmetric,  // `pe`'s copy of a symmetric object (Runtime::malloc); `ptr` is this PE's address of it
};
const char* place_name(Place p) noexcept;

struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  Place place = Place::host;
  int pe = -1;  // symmetric buffers: whose copy; -1 otherwise
  bool operator==(const Buffer&) const = default;
};

// This PE's host memory (pinned memory is used as is; pageable memory is registered or staged,
// see CompileOptions::pageable).
Buffer host(void* ptr, size_t bytes);
// A device buffer of this PE's GPU (cudaMalloc, or an address inside the symmetric heap).
Buffer device(void* ptr, size_t bytes);
// `pe`'s copy of the symmetric object at `sym` (this PE's address of it).
Buffer symmetric(void* sym, size_t bytes, int pe);
template <class T>
Buffer host(std::span<T> s) {
  return host(const_cast<void*>(static_cast<const void*>(s.data())), s.size_bytes());
}
template <class T>
Buffer device(std::span<T> s) {
  return device(const_cast<void*>(static_cast<const void*>(s.data())), s.size_bytes());
}
template <class T>
Buffer symmetric(std::span<T> s, int pe) {
  return symmetric(const_cast<void*>(static_cast<const void*>(s.data())), s.size_bytes(), pe);
}

// Bytes inside a buffer. pitch 0 means `width` (rows back to back), plane_pitch 0 means
// rows * pitch. A valid box keeps its rows and planes apart (pitch >= width, plane_pitch >= the
// span of one plane) and ends inside its buffer.
struct Box {
  size_t offset = 0;  // of the first byte, from the buffer's start
  size_t width = 0;   // bytes per row
  size_t rows = 1;
  size_t planes = 1;
  size_t pitch = 0;
  size_t plane_pitch = 0;
  bool operator==(const Box&) const = default;

  size_t row_pitch() const { return pitch ? pitch : width; }
  size_t slice_pitch() const { return plane_pitch ? plane_pitch : rows * row_pitch(); }
  size_t bytes() const { return width * rows * planes; }  // bytes that move
  // From the first byte to one past the last byte the box touches (0 for an empty box).
  size_t span() const;
  bool contiguous() const;  // one run of bytes
};

struct Region {
  Buffer buffer;
  Box box;
  bool operator==(const Region&) const = default;
};

// The whole buffer as one run.
Region whole(const Buffer& b);
// `bytes` bytes from `offset`.
Region range(const Buffer& b, size_t offset, size_t bytes);
// A strided box (pitches in bytes; 0 as above).
Region box(const Buffer& b, size_t offset, size_t width, size_t rows, size_t pitch, size_t planes = 1,
           size_t plane_pitch = 0);

// "host 0x7f..+4096", "rank 3's symmetric heap+0x100 (1024 bytes)": for messages.
std::string describe(const Buffer& b);

}  // namespace gpucomm::patterns
