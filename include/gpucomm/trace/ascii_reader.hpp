#pragma once
// Reader of the text that `dumpi2ascii` prints for one rank file: per call an
// "MPI_X entering at walltime S.N, cputime S.N seconds in thread T." line, one
// "type name=value" line per argument, and an "MPI_X returning at ..." line.
// Datatype sizes are not part of that text, so message sizes from it are in elements unless the
// trace itself reports sizes through MPI_Type_size. A file without a single call in that form is
// not taken for an empty trace: reading it raises Errc::protocol.
#include <fstream>
#include <string>
#include <vector>

#include "gpucomm/trace/source.hpp"

namespace gpucomm::trace {

class AsciiFile final : public RecordSource {
 public:
  AsciiFile(std::string path, int rank);
  bool next(Record& r) override;
  const std::string& path() const override { return path_; }
  int rank() const override { return rank_; }
  uint64_t bytes_consumed() const override { return consumed_; }
  uint64_t bytes_total() const override { return size_; }
  const std::vector<int32_t>& datatype_sizes() const override { return sizes_; }
  const std::vector<uint32_t>& footer_counts() const override { return footer_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void parse_field(Record& r, const std::string& line);
  std::string path_;
  int rank_;
  std::ifstream in_;
  uint64_t size_ = 0, consumed_ = 0, line_no_ = 0, records_ = 0;
  std::vector<int32_t> sizes_;
  std::vector<uint32_t> footer_;
  std::string line_;
};

}  // namespace gpucomm::trace
