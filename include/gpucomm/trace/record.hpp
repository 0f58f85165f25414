#pragma once
// One MPI call as read from a trace, in a form shared by the binary and the text readers.
// Only the arguments gpucomm's metrics use are kept; `Record` is reused from call to call so that
// reading allocates nothing once its vectors have grown to the largest call seen.
#include <cstdint>
#include <vector>

namespace gpucomm::trace {

inline constexpr int32_t kAnySource = -1;   // DUMPI_ANY_SOURCE
inline constexpr int32_t kAnyTag = -1;      // DUMPI_ANY_TAG
inline constexpr int32_t kProcNull = -2;    // Open MPI's MPI_PROC_NULL, stored unchanged by libdumpi
inline constexpr int32_t kRequestNull = 1;  // DUMPI_REQUEST_NULL
inline constexpr int32_t kCommWorld = 2;    // DUMPI_COMM_WORLD
inline constexpr int32_t kCommSelf = 3;     // DUMPI_COMM_SELF
inline constexpr int32_t kUnset = INT32_MIN;

struct Status {
  int32_t bytes = 0;
  int32_t source = 0;
  int32_t tag = 0;
  uint8_t cancelled = 0;
  uint8_t error = 0;
};

struct Record {
  uint16_t func = 0;
  uint16_t thread = 0;
  bool has_wall = false, has_cpu = false;
  int64_t wall_start_ns = 0, wall_stop_ns = 0;  // absolute, on the tracing host's clock
  int64_t cpu_start_ns = 0, cpu_stop_ns = 0;
  uint64_t offset = 0;  // byte offset of the record (binary) or line number (text)

  // Arguments by role (kUnset where the call has no such argument).
  int32_t count = kUnset, datatype = kUnset, peer = kUnset, tag = kUnset, comm = kUnset;
  int32_t request = kUnset;
  int32_t count2 = kUnset, datatype2 = kUnset, peer2 = kUnset, tag2 = kUnset;  // receive half
  int32_t root = kUnset, commrank = kUnset, commsize = kUnset;
  int32_t flag = kUnset, index = kUnset, value = kUnset, newcomm = kUnset;
  int64_t counts_sum = -1, counts2_sum = -1;  // sums of per-peer count arrays; -1: none
  std::vector<int32_t> requests;
  std::vector<int32_t> indices;
  std::vector<Status> statuses;
  bool statuses_recorded = false;  // false: MPI_STATUS(ES)_IGNORE or statuses not traced

  void reset() {
    count = datatype = peer = tag = comm = request = kUnset;
    count2 = datatype2 = peer2 = tag2 = kUnset;
    root = commrank = commsize = flag = index = value = newcomm = kUnset;
    counts_sum = counts2_sum = -1;
    requests.clear();
    indices.clear();
    statuses.clear();
    statuses_recorded = false;
    has_wall = has_cpu = false;
    thread = 0;
  }
};

}  // namespace gpucomm::trace
