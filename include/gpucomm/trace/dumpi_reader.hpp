#pragma once
// Streaming reader of SST DUMPI binary traces: one `.bin` file per rank plus a `.meta` file.
//
// A rank file is big-endian: an 8-byte magic, the body (two 32-bit time offsets, then records),
// an end-of-stream label, the header (version, start time, host, user, mesh), the footer
// (per-function call counts), optional tables (perf counter labels, datatype sizes, function
// addresses) and, in its last bytes, an index of section offsets that starts with the magic
// again. The reader keeps one fixed-size buffer per file: memory does not grow with the trace.
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/trace/source.hpp"

namespace gpucomm::trace {

struct DumpiHeader {
  std::array<uint8_t, 3> version{0, 0, 0};
  uint64_t start_time = 0;  // seconds since the epoch, as libdumpi stored it
  std::string hostname;
  std::string username;
};

// Offsets of a rank file's sections (0 where the file has none).
struct DumpiIndex {
  uint64_t sizes = 0, addresses = 0, perf_labels = 0, header = 0, body = 0, footer = 0, keyval = 0;
};

class DumpiFile final : public RecordSource {
 public:
  // Opens and validates a rank file: magic, index, header, footer and datatype sizes. `rank` is
  // the rank this file belongs to (used in metrics and messages).
  DumpiFile(std::string path, int rank, size_t buffer_bytes = 1 << 20);
  ~DumpiFile() override;
  DumpiFile(const DumpiFile&) = delete;
  DumpiFile& operator=(const DumpiFile&) = delete;

  bool next(Record& r) override;
  const std::string& path() const override { return path_; }
  int rank() const override { return rank_; }
  uint64_t bytes_consumed() const override;
  uint64_t bytes_total() const override { return file_size_; }
  const std::vector<int32_t>& datatype_sizes() const override { return sizes_; }
  const std::vector<uint32_t>& footer_counts() const override { return footer_; }

  const DumpiHeader& header() const { return header_; }
  const DumpiIndex& index() const { return index_; }
  uint64_t records_read() const { return records_; }

 private:
  class Reader;
  std::string path_;
  int rank_;
  uint64_t file_size_ = 0;
  DumpiIndex index_;
  DumpiHeader header_;
  std::vector<int32_t> sizes_;
  std::vector<uint32_t> footer_;
  uint32_t perf_counters_ = 0;
  uint32_t cpu_offset_ = 0, wall_offset_ = 0;
  uint64_t records_ = 0;
  bool done_ = false;
  std::unique_ptr<Reader> in_;
};

// Contents of a `.meta` file (key=value lines written by libdumpi).
struct DumpiMeta {
  std::string path;
  std::string hostname, username, fileprefix;
  int numprocs = 0;
  uint64_t start_time = 0;
  std::array<int, 3> version{0, 0, 0};
};

DumpiMeta read_meta(const std::string& path);
// Path of rank r's file: <dir>/<fileprefix>-NNNN.bin
std::string rank_file_path(const DumpiMeta& meta, int rank);

}  // namespace gpucomm::trace
