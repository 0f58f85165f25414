// gpucomm-fault-pe SCENARIO [VICTIM [ARG]]: see fault_pe.hpp; `--list` names the scenarios.
#include "fault_pe.hpp"

#include <time.h>
#include <unistd.h>

#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "gpucomm/runtime/runtime.hpp"

namespace faultpe {

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

int env_rank() {
  const char* r = std::getenv("GPUCOMM_RANK");
  int v = 0;
  if (r) std::from_chars(r, r + std::strlen(r), v);
  return v;
}

void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stdout, fmt, ap);
  va_end(ap);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void fault_here(int rank, const char* what) {
  say("FAULT rank %d at %lld %s", rank, static_cast<long long>(now_ns()), what);
}

int with_runtime(const std::function<int(gpucomm::Runtime&)>& body) {
  try {
    gpucomm::Runtime rt;
    const int rc = body(rt);
    if (rc == 0) say("PE OK rank %d", rt.rank());
    return rc;
  } catch (const std::exception& e) {
    say("PE ERROR rank %d at %lld: %s", env_rank(), static_cast<long long>(now_ns()), e.what());
    return kFailed;
  }
}

}  // namespace faultpe

namespace {

constexpr const char* kScenarios =
    "failures: loop [- ITERS], exception V, abort V, bad-env-heap V, bad-env-timeout V, caught-timeout V,\n"
    "          coll-raise V\n"
    "checks:   bad-input, heap-mismatch V, alloc-mismatch V, dead-put V, barrier-blame V, cloexec\n"
    "soak:     soak SECONDS\n"
    "gpu:      gpu-kill-wait V (two PEs sharing a GPU; skipped without one)\n";

bool parse(const char* text, int* out) {
  const char* end = text + std::strlen(text);
  auto [stop, ec] = std::from_chars(text, end, *out);
  return ec == std::errc() && stop == end;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "--list") == 0) {
    std::printf("usage: gpucomm-fault-pe SCENARIO [VICTIM [ARG]] (under gpucomm run)\n%s", kScenarios);
    return argc < 2 ? faultpe::kUsage : 0;
  }
  const std::string scenario = argv[1];
  int victim = -1, arg = 0;
  if ((argc > 2 && std::strcmp(argv[2], "-") != 0 && !parse(argv[2], &victim)) || (argc > 3 && !parse(argv[3], &arg))) {
    std::fprintf(stderr, "gpucomm-fault-pe: VICTIM and ARG are integers ('-': no victim)\n");
    return faultpe::kUsage;
  }
  for (auto* run : {&faultpe::run_failure, &faultpe::run_check, &faultpe::run_gpu}) {
    if (int rc = run(scenario, victim, arg); rc >= 0) return rc;
  }
  if (int rc = faultpe::run_soak(scenario, arg); rc >= 0) return rc;
  std::fprintf(stderr, "gpucomm-fault-pe: unknown scenario '%s'\n%s", scenario.c_str(), kScenarios);
  return faultpe::kUsage;
}
