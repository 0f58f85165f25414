#pragma once
// The main() of a multi-process test PE: runs the scenario named on the command line on a Runtime
// and prints "PE OK rank R of N: SCENARIO" on success; otherwise what failed, with `replay` (how to
// replay the run, e.g. the seed), and exits 1; an unknown scenario exits 2.
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <string>

#include "gpucomm/runtime/runtime.hpp"
#include "pe_check.hpp"

namespace gpucomm::testing {

using Scenario = std::function<void(Runtime&)>;

inline int run_scenario(const std::string& name, const std::map<std::string, Scenario>& scenarios,
                        const std::function<std::string()>& replay = {}) {
  const auto it = scenarios.find(name);
  if (it == scenarios.end()) {
    std::fprintf(stderr, "unknown scenario '%s'\n", name.c_str());
    return 2;
  }
  const auto how = [&] { return replay ? " (" + replay() + ")" : std::string(); };
  try {
    Runtime rt;
    it->second(rt);
    if (g_pe_failures == 0) {
      print_pe_ok(rt.rank(), rt.size(), name);
    } else {
      std::fprintf(stderr, "PE FAILED rank %d: %d checks failed%s\n", rt.rank(), g_pe_failures, how().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "PE ERROR: %s%s\n", e.what(), how().c_str());
    return 1;
  }
  return g_pe_failures == 0 ? 0 : 1;
}

}  // namespace gpucomm::testing
