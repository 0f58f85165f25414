#pragma once
// A stream of one rank's MPI calls, in call order. Implemented by the DUMPI binary reader
// (dumpi_reader.hpp) and the dumpi2ascii text reader (ascii_reader.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "gpucomm/trace/record.hpp"

namespace gpucomm::trace {

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // Reads the next call into `r`; false at the end of the stream. Malformed input raises
  // gpucomm::Error (Errc::protocol) naming the file and the byte offset (or line).
  virtual bool next(Record& r) = 0;
  virtual const std::string& path() const = 0;
  virtual int rank() const = 0;
  virtual uint64_t bytes_consumed() const = 0;
  virtual uint64_t bytes_total() const = 0;
  // The trace's own datatype-size table (index = datatype handle); empty where the input has none.
  virtual const std::vector<int32_t>& datatype_sizes() const = 0;
  // Per-function call counts from the file footer (index = function id); empty if none.
  virtual const std::vector<uint32_t>& footer_counts() const = 0;
};

}  // namespace gpucomm::trace
