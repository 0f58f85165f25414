// gpucomm-apps: the application suite's program (docs/APPS.md). `gpucomm apps` runs it under the
// launcher; it can also be run by hand:
//   gpucomm-apps catalog                               the applications and models, as JSON
//   gpucomm run -n 2 -- gpucomm-apps run global_sum --models putget,cpu --sizes 128,256K [--json F]
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpucomm/apps/aliev_panfilov.hpp"
#include "gpucomm/apps/catalog.hpp"
#include "gpucomm/apps/global_sum.hpp"
#include "gpucomm/apps/himeno.hpp"
#include "gpucomm/apps/jacobi2d.hpp"
#include "gpucomm/apps/mmv.hpp"
#include "gpucomm/apps/nbody.hpp"
#include "gpucomm/apps/random_access.hpp"
#include "gpucomm/core/error.hpp"
#include "report.hpp"

using namespace gpucomm;
using namespace gpucomm::apps;

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: gpucomm-apps catalog\n"
               "       gpucomm-apps selftest\n"
               "       gpucomm-apps run APP [--models M1,M2] [--sizes S1,S2|sweep] [--warmup N] [--iters N]\n"
               "                        [--json FILE]\n"
               "  catalog   print the applications, their models and sizes as JSON\n"
               "  selftest  check building blocks of the applications (RandomAccess's HPCC_starts)\n"
               "  run       run APP under a launcher (gpucomm run -n N); every PE checks every step's result\n"
               "            against the CPU reference; exit 1 when one differs\n"
               "  --models  models to run, in order (default: every model done for this kind of PE)\n"
               "  --sizes   sizes, e.g. 128,256K, or 'sweep' (default: the application's default sizes)\n"
               "  --warmup  untimed steps first   --iters  timed steps (defaults: the application's, gpucomm-apps\n"
               "            catalog: 5 and 50, N-Body 1 and 5)\n"
               "  --json    write the report to FILE (rank 0)\n");
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

int parse_count(const std::string& text, const std::string& arg, int min) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) raise_arg("gpucomm-apps", arg, "'" + text + "' is not an integer");
  if (v < min) raise_arg("gpucomm-apps", arg, "must be at least " + std::to_string(min) + ", got " + text);
  return v;
}

std::string valid_models(const AppInfo& app, bool gpu) {
  std::string s;
  for (const auto& m : app.models)
    if ((gpu ? m.gpu : m.host) == Support::done) s += (s.empty() ? "" : ", ") + std::string(model_name(m.model));
  return s;
}

// The models of `text` (or every model done for this kind of PE), each checked against the catalog.
std::vector<Model> parse_models(const AppInfo& app, const std::string& text, bool gpu) {
  const char* kind = gpu ? "GPU PEs" : "host-memory PEs";
  std::vector<Model> out;
  if (text.empty()) {
    for (const auto& m : app.models)
      if ((gpu ? m.gpu : m.host) == Support::done) out.push_back(m.model);
    return out;
  }
  for (const auto& name : split(text)) {
    const auto m = parse_model(name);
    if (!m) {
      raise_arg(
          "gpucomm-apps", "--models",
          "unknown model '" + name + "'; valid models of " + app.name + " on " + kind + ": " + valid_models(app, gpu));
    }
    for (const auto& e : app.models) {
      if (e.model != *m) continue;
      const Support s = gpu ? e.gpu : e.host;
      if (s != Support::done) {
        raise_arg("gpucomm-apps", "--models",
                  app.name + " has no model '" + name + "' on " + kind + " (" + support_name(s) + ")" +
                      ((gpu ? e.gpu_note : e.host_note).empty() ? "" : ": " + (gpu ? e.gpu_note : e.host_note)) +
                      "; valid models: " + valid_models(app, gpu));
      }
    }
    out.push_back(*m);
  }
  return out;
}

// The functions of one application: its models on host and GPU PEs and the reference of the value
// every step checks.
struct AppFns {
  RunResult (*host)(Runtime&, Model, const RunConfig&);
  RunResult (*gpu)(Runtime&, Model, const RunConfig&);
  double (*reference)(int pes, const RunConfig& cfg);
  std::string (*timing)(bool gpu);  // what a step's time covers (the report's "timing")
};

AppFns app_fns(const std::string& name) {
  if (name == "jacobi2d") {
    return {
        jacobi2d_host, jacobi2d_gpu,
        [](int pes, const RunConfig& c) { return jacobi_reference(pes, c.size, c.warmup + c.iters).residual.back(); },
        [](bool gpu) -> std::string {
          return gpu ? "loadstore, putget: the global timer read by the persistent kernel after each iteration's "
                       "allreduce; cpu: CUDA events between consecutive iterations on the runtime's stream; a "
                       "step (one iteration) takes the slowest PE's time"
                     : "wall clock of the halo exchange, the update and the residual's allreduce after a "
                       "barrier; a step (one iteration) takes the slowest PE's time";
        }};
  }
  if (name == "aliev_panfilov") {
    return {aliev_panfilov_host, aliev_panfilov_gpu,
            [](int pes, const RunConfig& c) { return ap_reference(pes, c.size, c.warmup + c.iters).e_sum(0); },
            [](bool gpu) -> std::string {
              return gpu ? "CUDA events between consecutive steps on the runtime's stream (the ghost planes' exchange "
                           "and the step kernel); a step takes the slowest PE's time"
                         : "wall clock of the ghost planes' exchange and the update after a barrier; a step takes the "
                           "slowest PE's time";
            }};
  }
  if (name == "himeno") {
    return {himeno_host, himeno_gpu,
            [](int pes, const RunConfig& c) { return himeno_reference(pes, c.size, c.warmup + c.iters).gosa.back(); },
            [](bool gpu) -> std::string {
              return gpu ? "CUDA events between consecutive iterations on the runtime's stream (the ghost planes' "
                           "exchange, the iteration kernel and gosa's allreduce); a step (one iteration) takes the "
                           "slowest PE's time"
                         : "wall clock of the ghost planes' exchange, the update and gosa's allreduce after a barrier; "
                           "a step (one iteration) takes the slowest PE's time";
            }};
  }
  if (name == "random_access") {
    return {random_access_host, random_access_gpu,
            [](int pes, const RunConfig& c) {
              return ra_value(ra_reference(pes, c.size, c.warmup + c.iters).step_xor.back());
            },
            [](bool gpu) -> std::string {
              return gpu ? "CUDA events around one step on the runtime's stream (the step's kernels, the cpu model's "
                           "host part, and the barrier that ends the step); a step takes the slowest PE's time; GUPS = "
                           "every PE's updates of a step / the median step time"
                         : "wall clock of one step (the PE's updates and their delivery, until every update of the "
                           "step is applied) after a barrier; a step takes the slowest PE's time; GUPS = every PE's "
                           "updates of a step / the median step time";
            }};
  }
  if (name == "mmv") {
    return {[](Runtime&, Model, const RunConfig&) -> RunResult {
              raise(Errc::unsupported, "mmv", "needs GPU PEs (a kernel to keep or relaunch)");
            },
            mmv_gpu,
            [](int, const RunConfig& c) {
              return mmv_reference_value(static_cast<uint64_t>(c.warmup) + static_cast<uint64_t>(c.iters),
                                         mmv_vectors(c.size));
            },
            [](bool) -> std::string {
              return "the producer's wall clock from handing a batch over to seeing all its products in pinned host "
                     "memory (the batch was written before); a step (one batch) takes the slowest PE's time";
            }};
  }
  if (name == "nbody") {
    return {nbody_host, nbody_gpu,
            [](int pes, const RunConfig& c) { return nbody_reference(pes, c.size, c.warmup + c.iters).value; },
            [](bool gpu) -> std::string {
              return gpu ? "loadstore, putget: the global timer read by the persistent kernel after each step's "
                           "integration; cpu: CUDA events between consecutive steps on the runtime's stream; a step "
                           "(the P ring stages and the integration) takes the slowest PE's time"
                         : "wall clock of the P ring stages (pass and compute) and the integration after a barrier; "
                           "a step takes the slowest PE's time";
            }};
  }
  if (name == "global_sum") {
    return {global_sum_host, global_sum_gpu,
            [](int pes, const RunConfig& c) { return static_cast<double>(global_sum_reference(pes, c.size)); },
            [](bool) { return std::string(); }};
  }
  raise(Errc::internal, "gpucomm-apps", "the catalog marks " + name + " done but no program runs it");
}

int run(int argc, char** argv, const std::string& cmdline) {
  if (argc < 3) raise_arg("gpucomm-apps run", "APP", "missing (gpucomm-apps catalog lists them)");
  const AppInfo* app = find_app(argv[2]);
  std::string names;
  for (const auto& a : catalog())
    if (a.done) names += (names.empty() ? "" : ", ") + a.name;
  if (!app) raise_arg("gpucomm-apps run", "APP", "unknown application '" + std::string(argv[2]) + "'; valid: " + names);
  if (!app->done) raise_arg("gpucomm-apps run", "APP", app->name + " is planned, not written yet; valid: " + names);
  std::string models_text, sizes_text, json;
  RunConfig cfg;
  cfg.warmup = app->warmup;
  cfg.iters = app->iters;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](const char* name) -> std::string {
      if (i + 1 >= argc) raise_arg("gpucomm-apps", name, "needs a value");
      return argv[++i];
    };
    if (a == "--models") {
      models_text = next("--models");
    } else if (a == "--sizes") {
      sizes_text = next("--sizes");
    } else if (a == "--warmup") {
      cfg.warmup = parse_count(next("--warmup"), "--warmup", 0);
    } else if (a == "--iters") {
      cfg.iters = parse_count(next("--iters"), "--iters", 1);
    } else if (a == "--json") {
      json = next("--json");
    } else if (a == "--dump-grid") {
      cfg.dump_dir = next("--dump-grid");
    } else if (a == "--corrupt-rank") {
      cfg.corrupt_rank = parse_count(next("--corrupt-rank"), "--corrupt-rank", 0);
    } else {
      raise_arg("gpucomm-apps run", a, "unknown option (see --help)");
    }
  }
  std::vector<uint64_t> sizes = app->default_sizes;
  if (sizes_text == "sweep") {
    sizes = app->sweep;
  } else if (!sizes_text.empty()) {
    sizes.clear();
    for (const auto& s : split(sizes_text)) sizes.push_back(parse_size(*app, s, "--sizes"));
  }

  Runtime rt;
  const bool gpu = rt.pe_kind() == PeKind::gpu;
  const std::vector<Model> models = parse_models(*app, models_text, gpu);
  if (app->name == "nbody")  // the bodies split into equal blocks, one per PE: refused before any model runs
    for (uint64_t s : sizes) nbody_per_pe(s, rt.size());
  const bool talk = rt.rank() == 0;
  if (talk) {
    std::fprintf(stderr, "gpucomm-apps: %s on %d %s, %zu model(s) x %zu size(s), %d warm-up + %d timed steps each\n",
                 app->name.c_str(), rt.size(), gpu ? "GPU PEs" : "host-memory PEs", models.size(), sizes.size(),
                 cfg.warmup, cfg.iters);
  }
  const AppFns fns = app_fns(app->name);
  std::vector<RunRecord> records;
  const size_t total = models.size() * sizes.size();
  for (uint64_t size : sizes) {
    for (Model m : models) {
      RunConfig c = cfg;
      c.size = size;
      const RunWindow start = window_now();
      const RunResult mine = gpu ? fns.gpu(rt, m, c) : fns.host(rt, m, c);
      RunWindow window = window_now();
      window.start_unix_ns = start.start_unix_ns;
      window.cpu_s -= start.cpu_s;
      records.push_back(gather_record(rt, mine, fns.reference(rt.size(), c), window));
      const auto& r = records.back();
      if (talk) {
        std::fprintf(stderr, "[%zu/%zu] %s %-10s %6s: median %10.2f us  %s\n", records.size(), total, app->name.c_str(),
                     model_name(m), size_text(size).c_str(), r.median_us,
                     r.wrong || r.wrong_cells ? "WRONG RESULT" : "verified");
      }
    }
  }
  int wrong = 0;
  uint64_t wrong_cells = 0;
  for (const auto& r : records) {
    wrong += r.wrong;
    wrong_cells += r.wrong_cells;
  }
  if (talk && !json.empty()) {
    ReportHeader h{app->name, cmdline, gpu ? "gpu" : "host", fns.timing(gpu), rt.size(), cfg.warmup, cfg.iters};
    std::ofstream f(json);
    if (!f) raise_arg("gpucomm-apps", "--json", "cannot write " + json);
    f << report_json(h, records);
  }
  if (talk && wrong)
    std::fprintf(stderr, "gpucomm-apps: %d step(s) differ from the CPU reference (see 'wrong_steps')\n", wrong);
  if (talk && wrong_cells) {
    std::fprintf(stderr,
                 "gpucomm-apps: %llu point(s) of the result differ from the CPU reference (see 'wrong_cells')\n",
                 static_cast<unsigned long long>(wrong_cells));
  }
  rt.barrier_all();
  return wrong || wrong_cells ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmdline;
  for (int i = 0; i < argc; ++i) cmdline.append(i ? " " : "").append(argv[i]);
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "-h" || cmd == "--help" || (argc > 2 && std::string(argv[2]) == "--help")) {
      usage(stdout);
      return 0;
    }
    if (cmd == "catalog") {
      std::fputs(catalog_json().c_str(), stdout);
      return 0;
    }
    if (cmd == "run") return run(argc, argv, cmdline);
    if (cmd == "selftest") {
      const int64_t bad = ra_selftest();
      if (bad >= 0) {
        std::fprintf(stderr, "gpucomm-apps selftest: random_access: HPCC_starts(%lld) differs from the stream\n",
                     static_cast<long long>(bad));
        return 1;
      }
      std::printf("random_access: HPCC_starts(m) equals m steps of the stream: ok\n");
      return 0;
    }
    usage(stderr);
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "gpucomm-apps: %s\n", e.what());
    return e.code() == Errc::invalid_argument ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucomm-apps: %s\n", e.what());
    return 1;
  }
}
