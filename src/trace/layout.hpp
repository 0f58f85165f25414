#pragma once
// Internal: compiled argument layouts of DUMPI records.
//
// Layout tokens (space separated, optional ":role", optional leading "?" = present only when the
// record's commrank equals its root, as for the root-only arguments of gather/scatter/spawn):
//   i int32   h uint16 handle   b uint8   q int64
//   A int32 array (uint32 length, then values)   D uint16 array   B uint8 array
//   c string (uint32 length, then bytes)   C string array (uint32 n, then n strings)
//   E array of string arrays   G array of int32 arrays
//   s status list (uint32 n, then n statuses); present only when the record mask has statuses
//   V argc/argv of MPI_Init (uint32 argc, then argc strings; files before 0.6.2 repeat argc)
//   T int32 array, but a single int32 in files before 0.6.9 (MPI_Type_struct displacements)
//   K int32 array, but a single int32 in files before 0.6.8 (MPI_Cart_get coordinates)
#include <cstdint>
#include <vector>

namespace gpucomm::trace::detail {

enum class Op : uint8_t {
  i32,
  u16,
  u8,
  i64,
  int_array,
  u16_array,
  u8_array,
  str,
  str_array,
  str_array2,
  int_array2,
  statuses,
  argv,
  int_array_since_069,
  int_array_since_068,
};

enum class Role : uint8_t {
  none,
  count,
  datatype,
  peer,
  tag,
  comm,
  request,
  count2,
  datatype2,
  peer2,
  tag2,
  root,
  commrank,
  commsize,
  flag,
  index,
  value,
  newcomm,
  requests,
  indices,
  statuses,
  counts,
  counts2,
};

struct Step {
  Op op;
  Role role;
  bool root_only;
};

struct Layout {
  bool known = false;
  std::vector<Step> steps;
};

// The compiled layout of a function id (known == false for ids without one).
const Layout& layout_for(uint16_t id);

}  // namespace gpucomm::trace::detail
