// A PE of the messaging layer's multi-process tests: `gpucomm_test_msg_pe SCENARIO [--opt value]`
// under `gpucomm run -n N` (GPUCOMM_DEVICE=host in CI). `--node-per-pe` gives every PE its own
// node name, so the PEs reach each other through UCX. Prints "PE OK" and exits 0 on success; on
// failure prints what failed (and the seed) and exits 1.
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "msg_pe_common.hpp"

using namespace gpucomm;

namespace gpucomm::msgtest {

int64_t Options::get(const char* name, int64_t fallback) const {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == name) return testing::arg_int(args[i + 1].c_str(), name);
  return fallback;
}
std::string Options::text(const char* name, const std::string& fallback) const {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == name) return args[i + 1];
  return fallback;
}
bool Options::flag(const char* name) const {
  for (const auto& a : args)
    if (a == name) return true;
  return false;
}

namespace {
uint64_t g_seed = 0;
}

uint64_t shared_seed(Runtime& rt) {
  if (rt.rank() == 0) {
    const char* env = std::getenv("GPUCOMM_TEST_SEED");
    const uint64_t s = env ? std::strtoull(env, nullptr, 0) : testing::pe_seed(0);
    rt.bootstrap().set("msgtest/seed", std::to_string(s));
  }
  g_seed = std::strtoull(rt.bootstrap().get("msgtest/seed").c_str(), nullptr, 10);
  return g_seed;
}
uint64_t last_seed() {
  return g_seed;
}

}  // namespace gpucomm::msgtest

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr,
                 "usage: gpucomm_test_msg_pe SCENARIO [--option value ...] [--node-per-pe]\n"
                 "scenarios: exchange, order, random, stress, unsafe, bad-input, api, am\n");
    return argc < 2 ? 2 : 0;
  }
  msgtest::Options o;
  for (int i = 2; i < argc; ++i) o.args.emplace_back(argv[i]);
  if (o.flag("--node-per-pe")) {
    const char* r = std::getenv("GPUCOMM_RANK");
    setenv("GPUCOMM_HOSTNAME", ("node" + std::string(r ? r : "0")).c_str(), 1);
  }
  const std::map<std::string, void (*)(Runtime&, const msgtest::Options&)> scenarios = {
      {"exchange", msgtest::scenario_exchange}, {"order", msgtest::scenario_order},
      {"random", msgtest::scenario_random},     {"stress", msgtest::scenario_stress},
      {"unsafe", msgtest::scenario_unsafe},     {"bad-input", msgtest::scenario_bad_input},
      {"api", msgtest::scenario_api},           {"am", msgtest::scenario_am},
  };
  const auto it = scenarios.find(argv[1]);
  if (it == scenarios.end()) {
    std::fprintf(stderr, "unknown scenario '%s'\n", argv[1]);
    return 2;
  }
  try {
    Runtime rt;
    it->second(rt, o);
    if (testing::g_pe_failures == 0) {
      testing::print_pe_ok(rt.rank(), rt.size(), argv[1]);
    } else {
      std::fprintf(stderr, "PE FAILED rank %d: %d checks failed (GPUCOMM_TEST_SEED=%llu replays)\n", rt.rank(),
                   testing::g_pe_failures, static_cast<unsigned long long>(msgtest::last_seed()));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "PE ERROR: %s (GPUCOMM_TEST_SEED=%llu replays)\n", e.what(),
                 static_cast<unsigned long long>(msgtest::last_seed()));
    return 1;
  }
  return testing::g_pe_failures == 0 ? 0 : 1;
}
