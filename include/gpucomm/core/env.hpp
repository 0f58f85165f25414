#pragma once
// Every GPUCOMM_* environment variable is declared in one table (src/core/env.cpp) with its
// default and meaning; docs/ENV.md is checked against that table by a test, and unknown
// GPUCOMM_* variables draw a warning at start-up.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gpucomm::env {

struct Variable {
  const char* name;
  const char* default_value;  // as text; "" when unset means "not set"
  const char* description;
};

std::span<const Variable> known_variables() noexcept;

std::optional<std::string> get(const char* name);
std::string get_string(const char* name, const std::string& fallback);
// Parses integers with optional K/M/G suffixes (powers of 1024); bad text raises an error
// naming the variable.
int64_t get_int(const char* name, int64_t fallback);
double get_double(const char* name, double fallback);
bool get_bool(const char* name, bool fallback);

// Returns the GPUCOMM_* names set in the environment that the table does not know.
std::vector<std::string> unknown_variables();
// Logs one warning per unknown GPUCOMM_* variable (once per process).
void warn_unknown_once();

// Blocking-wait limit in milliseconds (GPUCOMM_TIMEOUT, seconds; 0 disables).
int64_t wait_timeout_ms();

}  // namespace gpucomm::env
