#include "gpucomm/trace/dumpi_reader.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "byte_reader.hpp"
#include "gpucomm/core/error.hpp"
#include "gpucomm/core/format.hpp"
#include "gpucomm/trace/functions.hpp"
#include "layout.hpp"

namespace gpucomm::trace {
namespace {
constexpr uint64_t kHeadMagic = 0xffaadd44554d5049ULL;  // "\xff\xaa\xddDUMPI"
constexpr uint64_t kFootMagic = 0xf007fee7ULL;
constexpr uint8_t kMaskStatuses = 0x03, kMaskCpu = 0x04, kMaskWall = 0x08, kMaskThread = 0x40, kMaskPerf = 0x80;

bool version_at_least(const std::array<uint8_t, 3>& v, int a, int b, int c) {
  if (v[0] != a) return v[0] > a;
  if (v[1] != b) return v[1] > b;
  return v[2] >= c;
}
}  // namespace

class DumpiFile::Reader : public detail::ByteReader {
 public:
  using ByteReader::ByteReader;
};

DumpiFile::DumpiFile(std::string path, int rank, size_t buffer_bytes) : path_(std::move(path)), rank_(rank) {
  struct stat st{};
  if (::stat(path_.c_str(), &st) != 0) raise_errno("trace reader", errno, "cannot open rank file " + path_);
  file_size_ = static_cast<uint64_t>(st.st_size);
  std::FILE* f = std::fopen(path_.c_str(), "rb");
  if (!f) raise_errno("trace reader", errno, "cannot open rank file " + path_);
  std::setvbuf(f, nullptr, _IONBF, 0);
  in_ = std::make_unique<Reader>(f, path_, file_size_, buffer_bytes);
  Reader& in = *in_;

  if (file_size_ < 8 + 40)
    in.fail(0, "file of " + std::to_string(file_size_) + " bytes is too short to be a DUMPI trace");
  in.seek(0, file_size_);
  if (in.u64() != kHeadMagic) in.fail(0, "wrong magic: not a DUMPI binary trace");

  // The index sits at the end; older libdumpi versions wrote fewer slots, so look for the magic
  // at 8, 7, 6 and 5 slots from the end.
  int slots = 0;
  for (int k : {8, 7, 6, 5}) {
    const uint64_t index_bytes = 8 * static_cast<uint64_t>(k);
    if (index_bytes + 8 > file_size_) continue;  // the index cannot overlap the leading magic
    in.seek(file_size_ - index_bytes, file_size_);
    if (in.u64() == kHeadMagic) {
      slots = k;
      break;
    }
  }
  if (slots == 0)
    in.fail(file_size_ > 64 ? file_size_ - 64 : 0, "no DUMPI index record at the end of the file (truncated?)");
  if (slots >= 8) index_.sizes = in.u64();
  if (slots >= 7) index_.addresses = in.u64();
  if (slots >= 6) index_.perf_labels = in.u64();
  index_.header = in.u64();
  index_.body = in.u64();
  index_.footer = in.u64();
  index_.keyval = in.u64();
  const uint64_t index_start = file_size_ - 8 * static_cast<uint64_t>(slots);
  for (uint64_t off :
       {index_.sizes, index_.addresses, index_.perf_labels, index_.header, index_.body, index_.footer, index_.keyval}) {
    if (off >= index_start) {
      in.fail(index_start,
              "index names section offset " + std::to_string(off) + " beyond the data (corrupt or truncated)");
    }
  }
  if (index_.body < 8) in.fail(index_start, "index has no body section");

  if (index_.header > 0) {
    in.seek(index_.header, index_start);
    for (auto& v : header_.version) v = in.u8();
    header_.start_time = in.u64();
    header_.hostname = in.str(in.u16());
    header_.username = in.str(in.u16());
  }
  if (index_.footer > 0) {
    in.seek(index_.footer, index_start);
    if (in.u64() != kFootMagic) in.fail(index_.footer, "footer does not start with its magic");
    footer_.resize(fid::kAllFunctions + 1);
    for (auto& c : footer_) c = in.u32();
  }
  if (index_.perf_labels > 0) {
    in.seek(index_.perf_labels, index_start);
    perf_counters_ = in.checked_length(in.u32(), 2, "perf counter label table");
  }
  if (index_.sizes > 0) {
    in.seek(index_.sizes, index_start);
    uint32_t n = in.checked_length(in.u32(), 4, "datatype size table");
    sizes_.resize(n);
    for (auto& s : sizes_) s = in.i32();
  }

  // The body runs up to the first section after it; its last 2 bytes hold the end label.
  uint64_t body_end = index_start;
  for (uint64_t off : {index_.sizes, index_.addresses, index_.perf_labels, index_.header, index_.footer, index_.keyval})
    if (off > index_.body && off < body_end) body_end = off;
  if (index_.header > index_.body) body_end = index_.header;
  in.seek(index_.body, body_end);
  cpu_offset_ = in.u32();
  wall_offset_ = in.u32();
}

DumpiFile::~DumpiFile() = default;

uint64_t DumpiFile::bytes_consumed() const {
  return done_ ? file_size_ : in_->tell();
}

bool DumpiFile::next(Record& r) {
  if (done_) return false;
  Reader& in = *in_;
  const uint64_t start = in.tell();
  if (in.remaining() == 0) in.fail(start, "body ends without its end-of-stream label (truncated?)");
  const uint16_t id = in.u16();
  if (id == fid::kEndOfStream) {
    done_ = true;
    return false;
  }
  const detail::Layout& layout = detail::layout_for(id);
  if (!layout.known) {
    in.fail(start, "unknown function id " + std::to_string(id) + " (" + std::string(function_name(id)) +
                       "): its record length is not self-describing, so the rest of the file cannot be read");
  }
  r.reset();
  r.func = id;
  r.offset = start;
  const uint8_t mask = in.u8();
  if (mask & kMaskThread) r.thread = in.u16();
  auto read_time = [&](uint32_t sec_offset, int64_t* out_start, int64_t* out_stop) {
    for (int64_t* out : {out_start, out_stop}) {
      uint64_t at = in.tell();
      int64_t sec = int64_t(in.u16()) + sec_offset;
      uint32_t ns = in.u32();
      if (ns >= 1000000000u) {
        in.fail(at, "nanosecond field " + std::to_string(ns) + " out of range (corrupt record of " +
                        std::string(function_name(id)) + ")");
      }
      *out = sec * 1000000000LL + ns;
    }
  };
  if (mask & kMaskCpu) {
    read_time(cpu_offset_, &r.cpu_start_ns, &r.cpu_stop_ns);
    r.has_cpu = true;
  }
  if (mask & kMaskWall) {
    read_time(wall_offset_, &r.wall_start_ns, &r.wall_stop_ns);
    r.has_wall = true;
  }
  if (mask & kMaskPerf) {
    uint32_t n = in.u8();
    if (index_.perf_labels > 0) n = perf_counters_;
    in.skip(uint64_t(n) * 16);
  }
  const bool have_statuses = (mask & kMaskStatuses) != 0;
  const bool status_tags = version_at_least(header_.version, 0, 6, 3);

  using detail::Op;
  using detail::Role;
  auto store = [&r](Role role, int32_t v) {
    switch (role) {
      case Role::count:
        r.count = v;
        break;
      case Role::datatype:
        r.datatype = v;
        break;
      case Role::peer:
        r.peer = v;
        break;
      case Role::tag:
        r.tag = v;
        break;
      case Role::comm:
        r.comm = v;
        break;
      case Role::request:
        r.request = v;
        break;
      case Role::count2:
        r.count2 = v;
        break;
      case Role::datatype2:
        r.datatype2 = v;
        break;
      case Role::peer2:
        r.peer2 = v;
        break;
      case Role::tag2:
        r.tag2 = v;
        break;
      case Role::root:
        r.root = v;
        break;
      case Role::commrank:
        r.commrank = v;
        break;
      case Role::commsize:
        r.commsize = v;
        break;
      case Role::flag:
        r.flag = v;
        break;
      case Role::index:
        r.index = v;
        break;
      case Role::value:
        r.value = v;
        break;
      case Role::newcomm:
        r.newcomm = v;
        break;
      default:
        break;
    }
  };
  auto int_array = [&](Role role) {
    uint32_t n = in.checked_length(in.u32(), 4, "int array");
    int64_t sum = 0;
    std::vector<int32_t>* dst = role == Role::requests ? &r.requests : role == Role::indices ? &r.indices : nullptr;
    for (uint32_t k = 0; k < n; ++k) {
      int32_t v = in.i32();
      if (dst) dst->push_back(v);
      sum += v;
    }
    if (role == Role::counts) r.counts_sum = sum;
    if (role == Role::counts2) r.counts2_sum = sum;
  };
  auto string_field = [&] { in.skip(in.checked_length(in.u32(), 1, "string")); };
  auto string_array = [&] {
    uint32_t n = in.checked_length(in.u32(), 4, "string array");
    for (uint32_t k = 0; k < n; ++k) string_field();
  };

  for (const detail::Step& st : layout.steps) {
    if (st.root_only && !(r.commrank != kUnset && r.commrank == r.root)) continue;
    switch (st.op) {
      case Op::i32:
        store(st.role, in.i32());
        break;
      case Op::u16:
        store(st.role, in.u16());
        break;
      case Op::u8:
        store(st.role, in.u8());
        break;
      case Op::i64:
        in.skip(8);
        break;
      case Op::int_array:
        int_array(st.role);
        break;
      case Op::u16_array:
        in.skip(uint64_t(in.checked_length(in.u32(), 2, "handle array")) * 2);
        break;
      case Op::u8_array:
        in.skip(in.checked_length(in.u32(), 1, "byte array"));
        break;
      case Op::str:
        string_field();
        break;
      case Op::str_array:
        string_array();
        break;
      case Op::str_array2: {
        uint32_t n = in.checked_length(in.u32(), 4, "string table");
        for (uint32_t k = 0; k < n; ++k) string_array();
        break;
      }
      case Op::int_array2: {
        uint32_t n = in.checked_length(in.u32(), 4, "int table");
        for (uint32_t k = 0; k < n; ++k) in.skip(uint64_t(in.checked_length(in.u32(), 4, "int array")) * 4);
        break;
      }
      case Op::statuses: {
        if (!have_statuses) break;
        const uint32_t each = status_tags ? 14 : 10;
        uint32_t n = in.checked_length(in.u32(), each, "status list");
        r.statuses_recorded = n > 0;
        for (uint32_t k = 0; k < n; ++k) {
          Status s;
          s.bytes = in.i32();
          s.source = in.i32();
          s.cancelled = in.u8();
          s.error = in.u8();
          s.tag = status_tags ? in.i32() : kAnyTag;
          r.statuses.push_back(s);
        }
        break;
      }
      case Op::argv: {
        uint32_t argc = in.checked_length(in.u32(), 4, "argv");
        if (!version_at_least(header_.version, 0, 6, 2)) in.u32();
        for (uint32_t k = 0; k < argc; ++k) string_field();
        break;
      }
      case Op::int_array_since_069:
      case Op::int_array_since_068: {
        bool array = st.op == Op::int_array_since_069 ? version_at_least(header_.version, 0, 6, 9)
                                                      : version_at_least(header_.version, 0, 6, 8);
        if (array) {
          int_array(Role::none);
        } else {
          in.skip(4);
        }
        break;
      }
    }
  }
  ++records_;
  return true;
}

DumpiMeta read_meta(const std::string& path) {
  std::ifstream is(path);
  if (!is) raise_errno("trace reader", errno, "cannot open meta file " + path);
  DumpiMeta m;
  m.path = path;
  std::string line;
  int lineno = 0;
  bool have_prefix = false, have_np = false;
  auto fail = [&](const std::string& why) {  // `path: line N: why`
    std::string msg = path;
    msg.append(": line ").append(std::to_string(lineno)).append(": ").append(why);
    raise(Errc::protocol, "trace reader", msg);
  };
  while (std::getline(is, line)) {
    ++lineno;
    if (line.empty()) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) fail("expected key=value, got '" + printable(line) + "': not a DUMPI .meta file");
    std::string key = line.substr(0, eq), val = line.substr(eq + 1);
    try {
      if (key == "hostname") {
        m.hostname = val;
      } else if (key == "username") {
        m.username = val;
      } else if (key == "fileprefix") {
        m.fileprefix = val;
        have_prefix = true;
      } else if (key == "numprocs") {
        m.numprocs = std::stoi(val);
        have_np = true;
      } else if (key == "startime" || key == "starttime") {
        m.start_time = std::stoull(val);
      } else if (key == "version") {
        m.version[0] = std::stoi(val);
      } else if (key == "subversion") {
        m.version[1] = std::stoi(val);
      } else if (key == "subsubversion") {
        m.version[2] = std::stoi(val);
      }
    } catch (const std::exception&) {
      std::string why = "bad value for ";
      why.append(printable(key)).append(": '").append(printable(val)).append("'");
      fail(why);
    }
  }
  if (!have_prefix) raise(Errc::protocol, "trace reader", path + ": no fileprefix= line");
  if (!have_np || m.numprocs <= 0) raise(Errc::protocol, "trace reader", path + ": missing or bad numprocs= line");
  return m;
}

std::string rank_file_path(const DumpiMeta& meta, int rank) {
  std::string dir = meta.path;
  auto slash = dir.find_last_of('/');
  dir = slash == std::string::npos ? std::string(".") : dir.substr(0, slash);
  char num[16];
  std::snprintf(num, sizeof num, "%04d", rank);
  return dir + "/" + meta.fileprefix + "-" + num + ".bin";
}

}  // namespace gpucomm::trace
