#pragma once
// The application suite's catalog (docs/APPS.md): the applications, the communication models each
// one has on host-memory PEs and on GPU PEs, and the problem sizes they accept. The `gpucomm apps`
// command reads it from `gpucomm-apps catalog` (JSON), so it is written down once, here.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpucomm::apps {

// The communication models of the suite. cpu and cpu_graph are the CPU-controlled model written
// with one stream (a launch and copies per step) and with one CUDA graph launch per step.
enum class Model { loadstore, putget, proxy, agent, sendrecv, am, collective, cpu, cpu_graph, patterns };
inline constexpr Model kAllModels[] = {Model::loadstore, Model::putget,  Model::proxy,      Model::agent,
                                       Model::sendrecv,  Model::am,      Model::collective, Model::cpu,
                                       Model::cpu_graph, Model::patterns};

const char* model_name(Model m);
// Raises Errc::unsupported: application `app` has no model `m` on GPU PEs (`gpu`) or on
// host-memory PEs. The applications' entry points call it for a model the catalog does not offer.
[[noreturn]] void raise_unavailable(const char* app, Model m, bool gpu);
std::optional<Model> parse_model(std::string_view name);

// Whether an application has a model on one kind of PE.
enum class Support {
  done,          // implemented, verified against the CPU reference
  not_possible,  // the model does not exist on this kind of PE (the note says why)
  planned,       // not written yet
};
const char* support_name(Support s);

struct ModelEntry {
  Model model;
  Support host;           // host-memory PEs
  Support gpu;            // GPU PEs
  std::string what;       // how the application communicates in this model
  std::string host_note;  // why not / what differs on host PEs
  std::string gpu_note;
};

struct AppInfo {
  std::string name;                     // "global_sum"
  std::string summary;                  // one line
  std::string size_unit;                // "elements per PE"
  uint64_t min_size = 1, max_size = 1;  // accepted sizes
  bool power_of_two = false;            // sizes must also be powers of two
  std::vector<uint64_t> default_sizes;  // `--size` when none is given, and `compare --quick`
  std::vector<uint64_t> sweep;          // `--size sweep`
  std::vector<ModelEntry> models;       // every model of kAllModels, in that order
  bool done = false;                    // false: listed as planned, cannot run
  // Steps when none are given: untimed warm-up and timed steps of `run` and `compare`, and of
  // `--quick` (an O(n^2) application takes fewer steps than a stencil).
  int warmup = 5, iters = 50;
  int quick_warmup = 2, quick_iters = 10;
};

// Every application of the suite, finished or not (unfinished ones have done == false).
const std::vector<AppInfo>& catalog();
// The application called `name`, or nullptr.
const AppInfo* find_app(std::string_view name);

// A size written as an integer with an optional K (x1024) or M (x1024^2) suffix: "128", "256K".
// Raises Errc::invalid_argument naming `arg` and the accepted range of `app`.
uint64_t parse_size(const AppInfo& app, std::string_view text, const std::string& arg);
// 262144 -> "256K", 128 -> "128".
std::string size_text(uint64_t n);

// The catalog as JSON (gpucomm-apps catalog).
std::string catalog_json();

}  // namespace gpucomm::apps
