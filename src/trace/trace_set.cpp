#include "gpucomm/trace/trace_set.hpp"

#include <algorithm>
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

// Text traces named <anything>-NNNN.txt, by rank.
std::map<int, std::string> text_ranks(const fs::path& dir) {
  static const std::regex re(R"((.*)-(\d+)\.(txt|ascii)$)");
  std::map<int, std::string> out;
  for (auto& e : fs::directory_iterator(dir)) {
    std::smatch m;
    std::string name = e.path().filename().string();
    if (e.is_regular_file() && std::regex_match(name, m, re)) out[std::stoi(m[2])] = e.path().string();
  }
  return out;
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
    int rank = std::regex_match(name, m, re) ? std::stoi(m[1]) : 0;
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
