#pragma once
// Internal: one row per DUMPI function id with its name, class and argument layout.
#include <cstdint>

#include "gpucomm/trace/functions.hpp"

namespace gpucomm::trace::detail {

struct FunctionRow {
  const char* name;  // MPI name
  FuncClass cls;
  const char* layout;  // argument layout, see layout.hpp; nullptr: layout not known
};

// Rows for ids 0..292 (293 rows); id 290 is the end-of-list sentinel.
const FunctionRow* function_rows() noexcept;
inline constexpr int kFunctionRows = 293;

}  // namespace gpucomm::trace::detail
