#pragma once
// Internal: buffered big-endian reader over one file with absolute offsets and a hard end.
// Every read past the end, or past the file, raises Errc::protocol naming file and offset.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "gpucomm/core/error.hpp"

namespace gpucomm::trace::detail {

class ByteReader {
 public:
  ByteReader(std::FILE* f, std::string path, uint64_t file_size, size_t buffer_bytes)
      : f_(f),
        path_(std::move(path)),
        file_size_(file_size),
        // No larger than the file, and not zero-filled: opening many small rank files stays cheap.
        cap_(std::max<size_t>(64, std::min<uint64_t>(buffer_bytes, file_size + 64))),
        buf_(new uint8_t[cap_]) {}
  ~ByteReader() { std::fclose(f_); }
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;

  // Positions the reader at `offset`; reads may not go beyond `end`.
  void seek(uint64_t offset, uint64_t end) {
    end_ = end;
    if (offset >= buf_file_pos_ && offset <= buf_file_pos_ + buf_len_) {
      pos_ = static_cast<size_t>(offset - buf_file_pos_);
      return;
    }
    buf_file_pos_ = offset;
    buf_len_ = 0;
    pos_ = 0;
    if (std::fseek(f_, static_cast<long>(offset), SEEK_SET) != 0)
      fail(offset, "cannot seek (file shorter than its index says?)");
  }

  uint64_t tell() const { return buf_file_pos_ + pos_; }
  uint64_t end() const { return end_; }
  uint64_t remaining() const { return end_ - tell(); }
  const std::string& path() const { return path_; }

  uint8_t u8() { return *take(1); }
  uint16_t u16() {
    const uint8_t* p = take(2);
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
  }
  uint32_t u32() {
    const uint8_t* p = take(4);
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
  }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  uint64_t u64() {
    uint64_t hi = u32();
    return (hi << 32) | u32();
  }
  void skip(uint64_t n) {
    if (n > remaining())
      fail(tell(), "field of " + std::to_string(n) + " bytes runs past the end of its section (truncated or corrupt)");
    while (n > 0) {
      size_t avail = buf_len_ - pos_;
      if (avail == 0) {
        refill(1);
        avail = buf_len_ - pos_;
      }
      size_t step = n < avail ? static_cast<size_t>(n) : avail;
      pos_ += step;
      n -= step;
    }
  }
  std::string str(uint64_t n) {
    if (n > remaining())
      fail(tell(), "string of " + std::to_string(n) + " bytes runs past the end of its section (truncated or corrupt)");
    std::string s;
    s.reserve(static_cast<size_t>(n < 4096 ? n : 4096));
    while (n > 0) {
      size_t step = static_cast<size_t>(n < 4096 ? n : 4096);
      const uint8_t* p = take(step);
      s.append(reinterpret_cast<const char*>(p), step);
      n -= step;
    }
    return s;
  }
  // Checks that `count` elements of `elem` bytes fit before the end; returns count.
  uint32_t checked_length(uint32_t count, uint32_t elem, const char* what) {
    if (uint64_t(count) * elem > remaining()) {
      fail(tell() - 4, std::string(what) + " length " + std::to_string(count) +
                           " exceeds the bytes left in its section (truncated or corrupt)");
    }
    return count;
  }

  [[noreturn]] void fail(uint64_t offset, const std::string& what) const {
    raise(Errc::protocol, "trace reader", path_ + ": byte offset " + std::to_string(offset) + ": " + what);
  }

 private:
  const uint8_t* take(size_t n) {
    if (n > remaining()) {
      if (tell() + n > file_size_)
        fail(tell(), "unexpected end of file (needs " + std::to_string(n) + " more bytes; file truncated?)");
      fail(tell(), "field runs past the end of its section (truncated or corrupt)");
    }
    if (buf_len_ - pos_ < n) refill(n);
    const uint8_t* p = buf_.get() + pos_;
    pos_ += n;
    return p;
  }
  void refill(size_t need) {
    size_t keep = buf_len_ - pos_;
    std::memmove(buf_.get(), buf_.get() + pos_, keep);
    buf_file_pos_ += pos_;
    pos_ = 0;
    buf_len_ = keep;
    if (std::fseek(f_, static_cast<long>(buf_file_pos_ + buf_len_), SEEK_SET) != 0) fail(tell(), "cannot seek");
    size_t got = std::fread(buf_.get() + buf_len_, 1, cap_ - buf_len_, f_);
    buf_len_ += got;
    if (buf_len_ < need) fail(tell(), "unexpected end of file (truncated?)");
  }

  std::FILE* f_;
  std::string path_;
  uint64_t file_size_;
  size_t cap_;
  std::unique_ptr<uint8_t[]> buf_;
  uint64_t buf_file_pos_ = 0;  // file offset of buf_[0]
  size_t buf_len_ = 0, pos_ = 0;
  uint64_t end_ = 0;
};

}  // namespace gpucomm::trace::detail
