#pragma once
// Test helper: writes DUMPI binary rank files and meta files with known contents, following the
// layout gpucomm's reader documents (big-endian body records, end label, header, footer,
// datatype-size table, index). Only the calls the tests need have helpers; `begin` + `put*`
// write any other record.
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gpucomm/trace/functions.hpp"
#include "gpucomm/trace/record.hpp"

namespace gpucomm::trace::testing {

class DumpiWriter {
 public:
  // `wall_offset_s` is the body's wall-clock second offset; record times are absolute ns.
  DumpiWriter(std::string path, uint64_t start_time = 1700000000, std::array<uint8_t, 3> version = {13, 0, 0},
              uint32_t wall_offset_s = 1000)
      : path_(std::move(path)), start_time_(start_time), version_(version), wall_offset_(wall_offset_s) {
    counts_.assign(fid::kAllFunctions + 1, 0);
    put64(0xffaadd44554d5049ULL);
    body_ = buf_.size();
    put32(0);  // cpu time offset
    put32(wall_offset_);
  }

  void begin(uint16_t func, int64_t t0_ns, int64_t t1_ns, uint8_t mask = 0x4f) {
    put16(func);
    put8(mask);
    if (mask & 0x40) put16(0);  // thread
    if (mask & 0x04) {          // cpu times: zero
      for (int k = 0; k < 2; ++k) {
        put16(0);
        put32(0);
      }
    }
    if (mask & 0x08) {
      for (int64_t t : {t0_ns, t1_ns}) {
        put16(static_cast<uint16_t>(t / 1000000000 - wall_offset_));
        put32(static_cast<uint32_t>(t % 1000000000));
      }
    }
    if (func < counts_.size()) ++counts_[func];
    ++counts_[fid::kAllFunctions];
  }
  void status_list(const std::vector<Status>& st) {
    put32(static_cast<uint32_t>(st.size()));
    for (const Status& s : st) {
      put32(static_cast<uint32_t>(s.bytes));
      put32(static_cast<uint32_t>(s.source));
      put8(s.cancelled);
      put8(s.error);
      put32(static_cast<uint32_t>(s.tag));
    }
  }
  void int_array(const std::vector<int32_t>& v) {
    put32(static_cast<uint32_t>(v.size()));
    for (int32_t x : v) put32(static_cast<uint32_t>(x));
  }

  void init(int64_t t0, int64_t t1) {
    begin(fid::Init, t0, t1);
    put32(1);
    put32(4);
    for (char c : std::string("prog")) put8(static_cast<uint8_t>(c));
  }
  void finalize(int64_t t0, int64_t t1) { begin(fid::Finalize, t0, t1); }
  void comm_size(int64_t t0, int64_t t1, int32_t size) {
    begin(fid::Comm_size, t0, t1);
    put16(kCommWorld);
    put32(size);
  }
  void send_like(uint16_t func, int64_t t0, int64_t t1, int32_t count, int32_t dt, int32_t dest, int32_t tag,
                 int32_t comm = kCommWorld) {
    begin(func, t0, t1);
    put32(count);
    put16(static_cast<uint16_t>(dt));
    put32(dest);
    put32(tag);
    put16(static_cast<uint16_t>(comm));
  }
  void isend(int64_t t0, int64_t t1, int32_t count, int32_t dt, int32_t dest, int32_t tag, int32_t req,
             int32_t comm = kCommWorld) {
    send_like(fid::Isend, t0, t1, count, dt, dest, tag, comm);
    put32(req);
  }
  void irecv(int64_t t0, int64_t t1, int32_t count, int32_t dt, int32_t src, int32_t tag, int32_t req,
             int32_t comm = kCommWorld) {
    send_like(fid::Irecv, t0, t1, count, dt, src, tag, comm);
    put32(req);
  }
  void recv(int64_t t0, int64_t t1, int32_t count, int32_t dt, int32_t src, int32_t tag,
            const std::vector<Status>& st) {
    send_like(fid::Recv, t0, t1, count, dt, src, tag);
    status_list(st);
  }
  void wait(int64_t t0, int64_t t1, int32_t req, const std::vector<Status>& st) {
    begin(fid::Wait, t0, t1);
    put32(req);
    status_list(st);
  }
  void waitall(int64_t t0, int64_t t1, const std::vector<int32_t>& reqs, const std::vector<Status>& st) {
    begin(fid::Waitall, t0, t1);
    put32(static_cast<uint32_t>(reqs.size()));
    int_array(reqs);
    status_list(st);
  }
  void barrier(int64_t t0, int64_t t1) {
    begin(fid::Barrier, t0, t1);
    put16(kCommWorld);
  }
  void allreduce(int64_t t0, int64_t t1, int32_t count, int32_t dt) {
    begin(fid::Allreduce, t0, t1);
    put32(count);
    put16(static_cast<uint16_t>(dt));
    put8(3);
    put16(kCommWorld);
  }

  // Finishes the file: end label, header, footer, datatype sizes, index.
  void close(const std::vector<int32_t>& sizes = default_sizes()) {
    put16(fid::kEndOfStream);
    const uint64_t header = buf_.size();
    for (uint8_t v : version_) put8(v);
    put64(start_time_);
    put_string("testhost");
    put_string("tester");
    put32(0);
    put32(0);
    const uint64_t footer = buf_.size();
    put64(0xf007fee7ULL);
    for (uint32_t c : counts_) put32(c);
    for (size_t k = 0; k < counts_.size(); ++k) put32(0);
    const uint64_t perf = buf_.size();
    put32(0);
    const uint64_t sizes_at = buf_.size();
    put32(static_cast<uint32_t>(sizes.size()));
    for (int32_t s : sizes) put32(static_cast<uint32_t>(s));
    const uint64_t addr = buf_.size();
    put32(0);
    put64(0xffaadd44554d5049ULL);
    for (uint64_t off : {sizes_at, addr, perf, header, body_, footer, uint64_t(0)}) put64(off);
    std::ofstream os(path_, std::ios::binary);
    os.write(reinterpret_cast<const char*>(buf_.data()), static_cast<std::streamsize>(buf_.size()));
  }

  static std::vector<int32_t> default_sizes() {
    return {0, 0, 1, 1, 1, 1, 4, 2, 2, 4, 4, 8, 8, 4, 8, 16, 0, 8, 8, 1, 0, 0, 8, 12, 12, 6, 8, 20};
  }

  void put8(uint8_t v) { buf_.push_back(v); }
  void put16(uint16_t v) {
    put8(static_cast<uint8_t>(v >> 8));
    put8(static_cast<uint8_t>(v));
  }
  void put32(uint32_t v) {
    put16(static_cast<uint16_t>(v >> 16));
    put16(static_cast<uint16_t>(v));
  }
  void put64(uint64_t v) {
    put32(static_cast<uint32_t>(v >> 32));
    put32(static_cast<uint32_t>(v));
  }
  void put_string(const std::string& s) {
    put16(static_cast<uint16_t>(s.size()));
    for (char c : s) put8(static_cast<uint8_t>(c));
  }
  size_t size() const { return buf_.size(); }

 private:
  std::string path_;
  uint64_t start_time_;
  std::array<uint8_t, 3> version_;
  uint32_t wall_offset_;
  std::vector<uint8_t> buf_;
  uint64_t body_ = 0;
  std::vector<uint32_t> counts_;
};

inline void write_meta(const std::filesystem::path& dir, const std::string& prefix, int numprocs,
                       uint64_t start_time = 1700000000, int version = 13) {
  std::ofstream os(dir / (prefix + ".meta"));
  os << "hostname=testhost\nnumprocs=" << numprocs << "\nusername=tester\nstartime=" << start_time
     << "\nfileprefix=" << prefix << "\nversion=" << version << "\nsubversion=0\nsubsubversion=0\n";
}

inline std::string rank_path(const std::filesystem::path& dir, const std::string& prefix, int rank) {
  char num[8];
  std::snprintf(num, sizeof num, "%04d", rank);
  return (dir / (prefix + "-" + num + ".bin")).string();
}

// A fresh empty directory under the system temp folder, removed by the destructor.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    // Memory-backed /dev/shm where it exists: the truncation and fuzz tests write many files.
    std::error_code ec;
    std::filesystem::path base = std::filesystem::is_directory("/dev/shm", ec) ? std::filesystem::path("/dev/shm")
                                                                               : std::filesystem::temp_directory_path();
    path = base / ("gpucomm-trace-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace gpucomm::trace::testing
