#pragma once
// Small text helpers shared by the error messages of every layer.
#include <cstdint>
#include <cstdio>
#include <string>

namespace gpucomm {

// "0x1f40"
inline std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}
inline std::string hex(const void* p) {
  return hex(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)));
}

}  // namespace gpucomm
