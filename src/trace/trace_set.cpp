#include "gpucomm/trace/trace_set.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <regex>

#include "gpucomm/core/error.hpp"
#include "gpucomm/trace/ascii_reader.hpp"
#include "gpucomm/trace/dumpi_reader.hpp"

namespace gpucomm::trace {
namespace fs = std::filesystem;

namespace {
constexpr const char* kCall = "trace";

uint64_t size_of(const std::string& p) {
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

bool is_text_name(const std::string& name) {
  return name.ends_with(".txt") || name.ends_with(".ascii");
}

// Rank files of one run are numbered below this (DUMPI writes four digits; runs of millions of
// ranks are far beyond any trace here).
constexpr int kMaxRanks = 1 << 24;

// The rank number of a rank file's name (`digits` of <prefix>-NNNN.ext); an absurd number raises.
int rank_number(const std::string& digits, const std::string& file) {
  int r = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), r);
  if (ec != std::errc() || end != digits.data() + digits.size() || r >= kMaxRanks) {
    raise(Errc::invalid_argument, kCall,
          file + ": rank number " + digits + " in the file name is out of range (at most " +
              std::to_string(kMaxRanks - 1) + ")");
  }
  return r;
}

// Text traces named <prefix>-NNNN.txt, by rank; all of one run (one prefix).
std::map<int, std::string> text_ranks(const fs::path& dir) {
  static const std::regex re(R"((.*)-(\d+)\.(txt|ascii)$)");
  std::map<std::string, std::map<int, std::string>> by_prefix;
  for (auto& e : fs::directory_iterator(dir)) {
    std::smatch m;
    std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !std::regex_match(name, m, re)) continue;
    auto& ranks = by_prefix[m[1]];
    int r = rank_number(m[2], e.path().string());
    if (auto it = ranks.find(r); it != ranks.end()) {
      raise(Errc::invalid_argument, kCall,
            dir.string() + " holds two text traces of rank " + std::to_string(r) + ": " +
                fs::path(it->second).filename().string() + " and " + name);
    }
    ranks[r] = e.path().string();
  }
  if (by_prefix.size() > 1) {
    std::string runs;
    for (auto& [prefix, ranks] : by_prefix)
      runs += (runs.empty() ? "" : ", ") + prefix + "-* (" + std::to_string(ranks.size()) + " files)";
    raise(Errc::invalid_argument, kCall,
          dir.string() + " holds the text traces of " + std::to_string(by_prefix.size()) + " runs: " + runs +
              "; put each run in a directory of its own");
  }
  return by_prefix.empty() ? std::map<int, std::string>{} : by_prefix.begin()->second;
}

// Rank files of the meta file's run beyond its numprocs: the meta file does not describe every
// file of the run (it was edited, or a file of another run carries its prefix).
void note_extra_rank_files(TraceInfo& info, const DumpiMeta& meta) {
  fs::path dir = fs::path(meta.path).parent_path();
  if (dir.empty()) dir = ".";
  const std::regex re(R"((.*)-(\d+)\.(bin|txt|ascii)$)");
  int extra = 0, highest = -1;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    std::string name = e.path().filename().string();
    if (!std::regex_match(name, m, re) || m[1] != meta.fileprefix) continue;
    int r = rank_number(m[2], e.path().string());
    if (r >= meta.numprocs) {
      ++extra;
      highest = std::max(highest, r);
    }
  }
  if (extra) {
    info.warnings.push_back(meta.path + " says numprocs=" + std::to_string(meta.numprocs) + ", but " +
                            std::to_string(extra) + " more rank files of its run exist (up to rank " +
                            std::to_string(highest) +
                            "): they are left out, and messages to their ranks have no "
                            "receiver in the analysis");
  }
}

void from_meta(TraceInfo& info, const std::string& meta_path) {
  DumpiMeta meta = read_meta(meta_path);
  info.meta_path = meta_path;
  info.prefix = meta.fileprefix;
  info.hostname = meta.hostname;
  info.username = meta.username;
  info.start_time = meta.start_time;
  info.version = meta.version;
  for (int r = 0; r < meta.numprocs; ++r) {
    RankFile f;
    f.rank = r;
    f.path = rank_file_path(meta, r);
    if (!fs::exists(f.path)) {
      std::string base = f.path.substr(0, f.path.size() - 4);
      for (const char* ext : {".txt", ".ascii"}) {
        if (fs::exists(base + ext)) {
          f.path = base + ext;
          f.binary = false;
          break;
        }
      }
    }
    if (!fs::exists(f.path)) {
      raise(Errc::invalid_argument, kCall,
            "rank file missing: " + rank_file_path(meta, r) + " (" + meta_path + " lists " +
                std::to_string(meta.numprocs) + " ranks)");
    }
    f.bytes = size_of(f.path);
    info.files.push_back(f);
  }
  note_extra_rank_files(info, meta);
}
}  // namespace

uint64_t TraceInfo::total_bytes() const {
  uint64_t n = 0;
  for (auto& f : files) n += f.bytes;
  return n;
}

TraceSet TraceSet::open(const std::string& path) {
  TraceSet ts;
  ts.info_.input = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) raise(Errc::invalid_argument, kCall, "trace path does not exist: " + path);
  fs::path p(path);
  if (fs::is_directory(p)) {
    std::vector<std::string> metas;
    for (auto& e : fs::directory_iterator(p))
      if (e.is_regular_file() && e.path().extension() == ".meta") metas.push_back(e.path().string());
    std::sort(metas.begin(), metas.end());
    if (metas.size() > 1) {
      raise(Errc::invalid_argument, kCall,
            path + " holds " + std::to_string(metas.size()) + " .meta files (" + metas[0] + ", " + metas[1] +
                ", ...): pass one of them instead of the directory");
    }
    if (metas.size() == 1) {
      from_meta(ts.info_, metas[0]);
    } else {
      auto ranks = text_ranks(p);
      if (ranks.empty()) {
        raise(Errc::invalid_argument, kCall,
              path + " holds neither a DUMPI .meta file nor text traces named <prefix>-NNNN.txt");
      }
      int expect = 0;
      for (auto& [r, file] : ranks) {
        if (r != expect)
          raise(Errc::invalid_argument, kCall, "text trace for rank " + std::to_string(expect) + " missing in " + path);
        ts.info_.files.push_back({r, file, false, size_of(file)});
        ++expect;
      }
    }
  } else if (p.extension() == ".meta") {
    from_meta(ts.info_, path);
  } else if (is_text_name(p.filename().string())) {
    static const std::regex re(R"(.*-(\d+)\.(txt|ascii)$)");
    std::smatch m;
    std::string name = p.filename().string();
    int rank = std::regex_match(name, m, re) ? rank_number(m[1], path) : 0;
    ts.info_.files.push_back({rank, path, false, size_of(path)});
  } else if (p.extension() == ".bin") {
    raise(Errc::invalid_argument, kCall,
          path + ": pass the run's .meta file or its directory, not a single .bin rank file");
  } else {
    raise(Errc::invalid_argument, kCall, path + ": not a trace directory, .meta file or text trace (.txt)");
  }
  return ts;
}

std::unique_ptr<RecordSource> TraceSet::open_rank(int r) const {
  if (r < 0 || r >= ranks())
    raise_arg(kCall, "rank", std::to_string(r) + " is outside 0.." + std::to_string(ranks() - 1));
  const RankFile& f = info_.files[r];
  if (!f.binary) return std::make_unique<AsciiFile>(f.path, f.rank);
  auto file = std::make_unique<DumpiFile>(f.path, f.rank);
  if (!info_.meta_path.empty()) {
    const auto& h = file->header();
    if (h.start_time != info_.start_time) {
      raise(Errc::protocol, kCall,
            f.path + ": byte offset " + std::to_string(file->index().header + 3) + ": header start time " +
                std::to_string(h.start_time) + " differs from " + info_.meta_path + " (" +
                std::to_string(info_.start_time) + "): the file belongs to another run");
    }
    if (h.version[0] != info_.version[0] || h.version[1] != info_.version[1] || h.version[2] != info_.version[2]) {
      raise(Errc::protocol, kCall,
            f.path + ": byte offset " + std::to_string(file->index().header) + ": trace format version " +
                std::to_string(h.version[0]) + "." + std::to_string(h.version[1]) + "." + std::to_string(h.version[2]) +
                " differs from the meta file's: the file belongs to another run");
    }
  }
  return file;
}

}  // namespace gpucomm::trace
