#pragma once
// Samples, medians and the JSON report of gpucomm-bench-rma (the NVSHMEM programs in
// bench/nvshmem write the same schema).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace bench {

struct Result {
  std::string name;   // p_pingpong, put_signal_pingpong, put_bw, ...
  std::string level;  // thread, warp, block, copy_engine
  size_t bytes = 0;
  int ctas = 1;
  std::string unit;  // us (one-way or per operation), GB/s, Mops/s
  std::vector<double> samples;
  double median() const {
    std::vector<double> s = samples;
    std::sort(s.begin(), s.end());
    size_t n = s.size();
    return n == 0 ? 0.0 : (n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]));
  }
  double min() const { return samples.empty() ? 0.0 : *std::min_element(samples.begin(), samples.end()); }
  double max() const { return samples.empty() ? 0.0 : *std::max_element(samples.begin(), samples.end()); }
};

inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      {
        o += '\\', o += ch;
      }
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      {
        o += ' ';
      }
    } else {
      {
        o += ch;
      }
    }
  }
  return o;
}

inline std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

// Smallest size whose median bandwidth reaches half of the curve's peak (name, level, ctas fixed).
inline size_t half_peak_bytes(const std::vector<Result>& rs, const std::string& name, const std::string& level,
                              int ctas) {
  double peak = 0;
  for (const auto& r : rs)
    if (r.name == name && r.level == level && r.ctas == ctas) peak = std::max(peak, r.median());
  size_t best = 0;
  for (const auto& r : rs) {
    {
      if (r.name == name && r.level == level && r.ctas == ctas && r.median() >= peak / 2 &&
          (best == 0 || r.bytes < best))
        best = r.bytes;
    }
  }
  return best;
}

inline bool write_json(const std::string& path, const std::string& tool, const std::string& commit,
                       const std::string& cmdline, const std::vector<std::string>& devices, bool quick,
                       const std::vector<Result>& rs, const std::vector<std::pair<std::string, size_t>>& half_peaks,
                       const std::string& extra_json = {}) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fprintf(f,
               "{\n  \"tool\": \"%s\",\n  \"date\": \"%s\",\n  \"git_commit\": \"%s\",\n  \"command_line\": \"%s\",\n  "
               "\"quick\": %s,\n",
               tool.c_str(), utc_now().c_str(), json_escape(commit).c_str(), json_escape(cmdline).c_str(),
               quick ? "true" : "false");
  if (!extra_json.empty()) std::fprintf(f, "  %s,\n", extra_json.c_str());  // more top-level "key": value pairs
  std::fprintf(f, "  \"devices\": [");
  for (size_t i = 0; i < devices.size(); ++i)
    std::fprintf(f, "%s\"%s\"", i ? ", " : "", json_escape(devices[i]).c_str());
  std::fprintf(f, "],\n  \"half_peak_bytes\": {");
  for (size_t i = 0; i < half_peaks.size(); ++i)
    std::fprintf(f, "%s\"%s\": %zu", i ? ", " : "", half_peaks[i].first.c_str(), half_peaks[i].second);
  std::fprintf(f, "},\n  \"results\": [\n");
  for (size_t i = 0; i < rs.size(); ++i) {
    const Result& r = rs[i];
    std::fprintf(
        f,
        "    {\"name\": \"%s\", \"level\": \"%s\", \"bytes\": %zu, \"ctas\": %d, \"unit\": \"%s\", \"median\": %.6g, "
        "\"min\": %.6g, \"max\": %.6g, \"samples\": %zu}%s\n",
        r.name.c_str(), r.level.c_str(), r.bytes, r.ctas, r.unit.c_str(), r.median(), r.min(), r.max(),
        r.samples.size(), i + 1 < rs.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  return std::fclose(f) == 0;
}

inline void print_table(const std::vector<Result>& rs) {
  std::printf("%-24s %-12s %12s %5s %12s %s\n", "benchmark", "level", "bytes", "ctas", "median", "unit (min..max)");
  for (const auto& r : rs) {
    {
      std::printf("%-24s %-12s %12zu %5d %12.3f %s (%.3f..%.3f)\n", r.name.c_str(), r.level.c_str(), r.bytes, r.ctas,
                  r.median(), r.unit.c_str(), r.min(), r.max());
    }
  }
}

}  // namespace bench
