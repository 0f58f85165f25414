#pragma once
// All rank files of one traced run. Accepts a directory holding a DUMPI `.meta` file and its
// `<prefix>-NNNN.bin` rank files (or dumpi2ascii output `<prefix>-NNNN.txt` in their place), a
// `.meta` file itself, a directory of `*-NNNN.txt` text traces, or one text trace file.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpucomm/trace/source.hpp"

namespace gpucomm::trace {

struct RankFile {
  int rank = 0;
  std::string path;
  bool binary = true;
  uint64_t bytes = 0;
};

struct TraceInfo {
  std::string input;      // the path given
  std::string meta_path;  // "" for text traces without a meta file
  std::string prefix, hostname, username;
  uint64_t start_time = 0;
  std::array<int, 3> version{0, 0, 0};
  std::vector<RankFile> files;
  std::vector<std::string> warnings;  // what the analysis should report about the files themselves
  uint64_t total_bytes() const;
};

class TraceSet {
 public:
  // Finds the rank files; a missing rank file raises Errc::invalid_argument naming the file.
  static TraceSet open(const std::string& path);
  int ranks() const { return static_cast<int>(info_.files.size()); }
  const TraceInfo& info() const { return info_; }
  // Opens rank r's file. Binary files are checked against the meta file: a header whose start
  // time or version differs (a file from another run) raises Errc::protocol naming the file.
  std::unique_ptr<RecordSource> open_rank(int r) const;

 private:
  TraceInfo info_;
};

}  // namespace gpucomm::trace
