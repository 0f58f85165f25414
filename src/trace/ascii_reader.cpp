#include "gpucomm/trace/ascii_reader.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/format.hpp"
#include "gpucomm/trace/functions.hpp"

namespace gpucomm::trace {
namespace {
constexpr std::string_view kEntering = " entering at walltime ";
constexpr std::string_view kReturning = " returning at walltime ";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view s, int64_t* out) {
  s = trim(s);
  auto res = std::from_chars(s.data(), s.data() + s.size(), *out);
  return res.ec == std::errc() && res.ptr != s.data();
}

// "S.NNNNNNNNN" -> nanoseconds
bool parse_time(std::string_view s, int64_t* ns) {
  auto dot = s.find('.');
  int64_t sec = 0, frac = 0;
  if (dot == std::string_view::npos) return false;
  if (!parse_int(s.substr(0, dot), &sec)) return false;
  std::string_view f = s.substr(dot + 1);
  if (f.empty() || f.size() > 9) return false;
  if (!parse_int(f, &frac) || frac < 0) return false;
  for (size_t k = f.size(); k < 9; ++k) frac *= 10;
  *ns = sec * 1000000000LL + frac;
  return true;
}

// Parses the text after "walltime ": "W, cputime C seconds in thread T."
bool parse_stamp(std::string_view rest, int64_t* wall, int64_t* cpu, int* thread) {
  auto comma = rest.find(", cputime ");
  if (comma == std::string_view::npos) return false;
  if (!parse_time(rest.substr(0, comma), wall)) return false;
  rest.remove_prefix(comma + 10);
  auto sp = rest.find(" seconds in thread ");
  if (sp == std::string_view::npos) return false;
  if (!parse_time(rest.substr(0, sp), cpu)) return false;
  rest.remove_prefix(sp + 19);
  if (!rest.empty() && rest.back() == '.') rest.remove_suffix(1);
  int64_t t = 0;
  if (!parse_int(rest, &t)) return false;
  *thread = static_cast<int>(t);
  return true;
}

enum class Field {
  none,
  count,
  datatype,
  peer,
  tag,
  comm,
  request,
  count2,
  datatype2,
  peer2,
  tag2,
  root,
  commrank,
  commsize,
  flag,
  index,
  value,
  newcomm,
  requests,
  indices,
  statuses,
  counts,
  counts2
};

Field field_role(uint16_t func, std::string_view name) {
  const bool sendrecv = func == fid::Sendrecv || func == fid::Sendrecv_replace;
  const bool scatter = func == fid::Scatter || func == fid::Scatterv;
  if (sendrecv) {
    if (name == "sendcount" || name == "count") return Field::count;
    if (name == "sendtype" || name == "datatype") return Field::datatype;
    if (name == "dest") return Field::peer;
    if (name == "sendtag") return Field::tag;
    if (name == "recvcount") return Field::count2;
    if (name == "recvtype") return Field::datatype2;
    if (name == "source") return Field::peer2;
    if (name == "recvtag") return Field::tag2;
  }
  if (scatter) {
    if (name == "recvcount") return Field::count;
    if (name == "recvtype") return Field::datatype;
    if (name == "sendcount") return Field::count2;
    if (name == "sendtype") return Field::datatype2;
    if (name == "sendcounts") return Field::counts2;
  }
  if (func == fid::Reduce_scatter && name == "recvcounts") return Field::counts;
  if (func == fid::Type_size && name == "size") return Field::value;
  if ((func == fid::Comm_size && name == "size") || (func == fid::Comm_rank && name == "rank")) return Field::value;
  static constexpr std::pair<std::string_view, Field> kNames[] = {
      {"count", Field::count},       {"sendcount", Field::count},   {"datatype", Field::datatype},
      {"sendtype", Field::datatype}, {"dest", Field::peer},         {"source", Field::peer},
      {"tag", Field::tag},           {"comm", Field::comm},         {"oldcomm", Field::comm},
      {"request", Field::request},   {"recvcount", Field::count2},  {"recvtype", Field::datatype2},
      {"root", Field::root},         {"commrank", Field::commrank}, {"oldcommrank", Field::commrank},
      {"commsize", Field::commsize}, {"flag", Field::flag},         {"index", Field::index},
      {"newcomm", Field::newcomm},   {"requests", Field::requests}, {"indices", Field::indices},
      {"status", Field::statuses},   {"statuses", Field::statuses}, {"sendcounts", Field::counts},
      {"recvcounts", Field::counts2}};
  for (auto& [n, f] : kNames)
    if (n == name) return f;
  return Field::none;
}
}  // namespace

AsciiFile::AsciiFile(std::string path, int rank) : path_(std::move(path)), rank_(rank) {
  struct stat st{};
  if (::stat(path_.c_str(), &st) != 0) raise_errno("trace reader", errno, "cannot open text trace " + path_);
  size_ = static_cast<uint64_t>(st.st_size);
  in_.open(path_);
  if (!in_) raise_errno("trace reader", errno, "cannot open text trace " + path_);
}

void AsciiFile::fail(const std::string& what) const {
  raise(Errc::protocol, "trace reader", path_ + ": line " + std::to_string(line_no_) + ": " + what);
}

bool AsciiFile::next(Record& r) {
  // Find the next "entering" line; other text between records (headers, blank lines) is skipped.
  std::string name;
  while (true) {
    if (!std::getline(in_, line_)) {
      if (records_ == 0) {
        fail("no MPI call in the form dumpi2ascii prints ('MPI_Send entering at walltime ...') in " +
             std::to_string(line_no_) + " lines: not a dumpi2ascii text trace");
      }
      return false;
    }
    ++line_no_;
    consumed_ += line_.size() + 1;
    auto at = line_.find(kEntering);
    if (at == std::string::npos) continue;
    name = line_.substr(0, at);
    int id = function_id(name);
    if (id < 0) fail("unknown function '" + printable(name) + "'");
    r.reset();
    r.func = static_cast<uint16_t>(id);
    r.offset = line_no_;
    int thread = 0;
    if (!parse_stamp(std::string_view(line_).substr(at + kEntering.size()), &r.wall_start_ns, &r.cpu_start_ns, &thread))
      fail("cannot read the times of '" + printable(line_) + "'");
    r.thread = static_cast<uint16_t>(thread);
    r.has_wall = r.has_cpu = true;
    ++records_;
    break;
  }
  const uint64_t start_line = line_no_;
  while (std::getline(in_, line_)) {
    ++line_no_;
    consumed_ += line_.size() + 1;
    auto at = line_.find(kReturning);
    if (at != std::string::npos) {
      if (line_.compare(0, at, name) != 0) {
        fail("'" + name + "' entered at line " + std::to_string(start_line) + " but '" +
             printable(line_.substr(0, at)) + "' returns");
      }
      int thread = 0;
      if (!parse_stamp(std::string_view(line_).substr(at + kReturning.size()), &r.wall_stop_ns, &r.cpu_stop_ns,
                       &thread))
        fail("cannot read the times of '" + printable(line_) + "'");
      return true;
    }
    if (line_.find(kEntering) != std::string::npos)
      fail("'" + name + "' entered at line " + std::to_string(start_line) + " has no 'returning' line");
    parse_field(r, line_);
  }
  fail("end of file inside '" + name + "' entered at line " + std::to_string(start_line));
}

void AsciiFile::parse_field(Record& r, const std::string& line) {
  auto eq = line.find('=');
  if (eq == std::string::npos) return;  // perf counters and other annotations
  std::string_view left = trim(std::string_view(line).substr(0, eq));
  std::string_view value = trim(std::string_view(line).substr(eq + 1));
  auto sp = left.rfind(' ');
  std::string_view fname = sp == std::string_view::npos ? left : left.substr(sp + 1);
  if (auto br = fname.find('['); br != std::string_view::npos) fname = fname.substr(0, br);
  Field f = field_role(r.func, fname);
  if (f == Field::none) return;

  if (f == Field::statuses) {
    if (value.starts_with("<IGNORED>")) return;
    // [{bytes=4, cancelled=0, source=1, tag=17, error=0}, ...]
    size_t pos = 0;
    while ((pos = value.find('{', pos)) != std::string_view::npos) {
      auto end = value.find('}', pos);
      if (end == std::string_view::npos) fail("unterminated status in '" + printable(line) + "'");
      std::string_view body = value.substr(pos + 1, end - pos - 1);
      Status s;
      while (!body.empty()) {
        auto c = body.find(',');
        std::string_view kv = trim(body.substr(0, c));
        body = c == std::string_view::npos ? std::string_view{} : body.substr(c + 1);
        auto e = kv.find('=');
        if (e == std::string_view::npos) continue;
        int64_t v = 0;
        if (!parse_int(kv.substr(e + 1), &v)) fail("bad status field in '" + printable(line) + "'");
        std::string_view k = kv.substr(0, e);
        if (k == "bytes") {
          s.bytes = static_cast<int32_t>(v);
        } else if (k == "source") {
          s.source = static_cast<int32_t>(v);
        } else if (k == "tag") {
          s.tag = static_cast<int32_t>(v);
        } else if (k == "cancelled") {
          s.cancelled = static_cast<uint8_t>(v);
        } else if (k == "error") {
          s.error = static_cast<uint8_t>(v);
        }
      }
      r.statuses.push_back(s);
      r.statuses_recorded = true;
      pos = end + 1;
    }
    return;
  }
  if (f == Field::requests || f == Field::indices || f == Field::counts || f == Field::counts2 || f == Field::request) {
    if (value.starts_with("<IGNORED>")) return;
    std::string_view list = value;
    if (!list.empty() && list.front() == '[') list.remove_prefix(1);
    if (auto e = list.find(']'); e != std::string_view::npos) list = list.substr(0, e);
    int64_t sum = 0;
    bool any = false;
    while (!trim(list).empty()) {
      auto c = list.find(',');
      int64_t v = 0;
      if (!parse_int(list.substr(0, c), &v)) fail("bad list value in '" + printable(line) + "'");
      sum += v;
      any = true;
      if (f == Field::requests) {
        r.requests.push_back(static_cast<int32_t>(v));
      } else if (f == Field::indices) {
        r.indices.push_back(static_cast<int32_t>(v));
      } else if (f == Field::request) {
        r.request = static_cast<int32_t>(v);
      }
      list = c == std::string_view::npos ? std::string_view{} : list.substr(c + 1);
    }
    if (f == Field::counts) r.counts_sum = any ? sum : 0;
    if (f == Field::counts2) r.counts2_sum = any ? sum : 0;
    return;
  }
  int64_t v = 0;
  if (!parse_int(value.substr(0, value.find(' ')), &v)) fail("bad value in '" + printable(line) + "'");
  int32_t x = static_cast<int32_t>(v);
  switch (f) {
    case Field::count:
      r.count = x;
      break;
    case Field::datatype:
      r.datatype = x;
      break;
    case Field::peer:
      r.peer = x;
      break;
    case Field::tag:
      r.tag = x;
      break;
    case Field::comm:
      r.comm = x;
      break;
    case Field::count2:
      r.count2 = x;
      break;
    case Field::datatype2:
      r.datatype2 = x;
      break;
    case Field::peer2:
      r.peer2 = x;
      break;
    case Field::tag2:
      r.tag2 = x;
      break;
    case Field::root:
      r.root = x;
      break;
    case Field::commrank:
      r.commrank = x;
      break;
    case Field::commsize:
      r.commsize = x;
      break;
    case Field::flag:
      r.flag = x;
      break;
    case Field::index:
      r.index = x;
      break;
    case Field::value:
      r.value = x;
      break;
    case Field::newcomm:
      r.newcomm = x;
      break;
    default:
      break;
  }
}

}  // namespace gpucomm::trace
