#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <set>
#include <sstream>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"

#ifndef GPUCOMM_SOURCE_DIR
#error "GPUCOMM_SOURCE_DIR must be defined"
#endif

namespace gpucomm {

TEST(Env, IntegersWithSuffixes) {
  setenv("GPUCOMM_HEAP_SIZE", "64M", 1);
  EXPECT_EQ(env::get_int("GPUCOMM_HEAP_SIZE", 0), 64LL << 20);
  setenv("GPUCOMM_HEAP_SIZE", "2GiB", 1);
  EXPECT_EQ(env::get_int("GPUCOMM_HEAP_SIZE", 0), 2LL << 30);
  setenv("GPUCOMM_HEAP_SIZE", "12x", 1);
  EXPECT_THROW(env::get_int("GPUCOMM_HEAP_SIZE", 0), Error);
  unsetenv("GPUCOMM_HEAP_SIZE");
  EXPECT_EQ(env::get_int("GPUCOMM_HEAP_SIZE", 7), 7);
}

TEST(Env, BadBoolNamesTheVariable) {
  setenv("GPUCOMM_LOG_LEVEL", "x", 1);
  try {
    env::get_bool("GPUCOMM_LOG_LEVEL", false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPUCOMM_LOG_LEVEL"), std::string::npos);
  }
  unsetenv("GPUCOMM_LOG_LEVEL");
}

TEST(Env, UnknownVariablesAreFound) {
  setenv("GPUCOMM_NO_SUCH_THING", "1", 1);
  auto unknown = env::unknown_variables();
  EXPECT_NE(std::find(unknown.begin(), unknown.end(), "GPUCOMM_NO_SUCH_THING"), unknown.end());
  unsetenv("GPUCOMM_NO_SUCH_THING");
}

// docs/ENV.md documents exactly the variables of the table.
TEST(Env, DocumentationMatchesTable) {
  std::ifstream in(std::string(GPUCOMM_SOURCE_DIR) + "/docs/ENV.md");
  ASSERT_TRUE(in) << "docs/ENV.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  std::set<std::string> documented;
  for (size_t pos = 0; (pos = doc.find("| `GPUCOMM_", pos)) != std::string::npos;) {
    size_t start = pos + 3, end = doc.find('`', start);
    documented.insert(doc.substr(start, end - start));
    pos = end;
  }
  std::set<std::string> table;
  for (const auto& v : env::known_variables()) table.insert(v.name);
  for (const auto& n : table) EXPECT_TRUE(documented.count(n)) << n << " is not in docs/ENV.md";
  for (const auto& n : documented) EXPECT_TRUE(table.count(n)) << n << " is documented but unknown to the table";
}

}  // namespace gpucomm
