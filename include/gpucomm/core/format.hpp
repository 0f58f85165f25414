#pragma once
// Small text helpers shared by the error messages of every layer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

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

// Length of the valid UTF-8 sequence that starts at s[i], or 0 where none does (a stray
// continuation byte, an overlong form, a surrogate, a code point above U+10FFFF, a cut-off end).
size_t utf8_sequence_length(std::string_view s, size_t i);

// `s` fit to quote in a message: printable ASCII and valid UTF-8 as they are, every other byte as
// \xNN, cut to `max_bytes` of input with "..." after it. Data read from files goes into error
// messages through this, so that a message is always valid text.
std::string printable(std::string_view s, size_t max_bytes = 120);

}  // namespace gpucomm
