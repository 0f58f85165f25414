#pragma once
// gpucomm-fault-pe: a PE that injects one fault or tries one kind of hostile input, for
// `gpucomm bench faults` and tests/reliability. It speaks in single flushed lines on stdout:
//   READY rank R pid P            the PE runs its loop (the driver may now kill or stop it)
//   FAULT rank R at NS WHAT       the PE injects WHAT now (NS: CLOCK_MONOTONIC, the clock of
//                                 Python's time.monotonic_ns())
//   RESULT rank R KEY=VALUE ...   counts of the scenario
//   PE ERROR rank R at NS: TEXT   the error the PE raised (expected for the others after a fault)
//   PE OK rank R                  the scenario's checks passed
// Exit codes: 0 passed, 1 the PE failed (expected where a fault was injected), 2 usage,
// 3 a check of the scenario failed.
#include <cstdint>
#include <functional>
#include <string>

namespace gpucomm {
class Runtime;
}

namespace faultpe {

constexpr int kFailed = 1, kUsage = 2, kCheckFailed = 3;

int64_t now_ns();
int env_rank();  // GPUCOMM_RANK, before a runtime exists (0 when unset)
void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void fault_here(int rank, const char* what);
// Runs `body` on a fresh runtime: says "PE OK" when it returns 0; when it raises, says
// "PE ERROR rank R at NS: TEXT" (the runtime is gone by then) and returns kFailed.
int with_runtime(const std::function<int(gpucomm::Runtime&)>& body);

// Each returns the exit code, or -1 for a scenario it does not know. `victim` is the PE the fault
// is injected into, `arg` the scenario's number (iterations, seconds).
int run_failure(const std::string& scenario, int victim, int arg);  // failure_scenarios.cpp
int run_check(const std::string& scenario, int victim, int arg);    // check_scenarios.cpp
int run_soak(const std::string& scenario, int seconds);             // soak.cpp
int run_gpu(const std::string& scenario, int victim, int arg);      // gpu_kill_wait.cu

}  // namespace faultpe
