#include "gpucomm/trace/queue_snapshot.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "gpucomm/core/error.hpp"

namespace gpucomm::trace {
namespace {
constexpr char kMagic[8] = {'G', 'C', 'Q', 'S', 'N', 'A', 'P', '1'};
constexpr uint32_t kVersion = 1;
constexpr const char* kCall = "queue snapshot";

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

template <typename T>
void put(std::string& out, T v) {
  // little-endian on every host
  for (size_t k = 0; k < sizeof(T); ++k) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    out.push_back(static_cast<char>((bits >> (8 * k)) & 0xff));
  }
}

class In {
 public:
  In(std::string path, std::string data) : path_(std::move(path)), data_(std::move(data)) {}
  template <typename T>
  T get(const char* what) {
    if (pos_ + sizeof(T) > data_.size()) {
      raise(Errc::protocol, kCall,
            path_ + ": byte offset " + std::to_string(pos_) + ": file ends inside " + what + " (truncated)");
    }
    uint64_t bits = 0;
    for (size_t k = 0; k < sizeof(T); ++k) bits |= uint64_t(static_cast<uint8_t>(data_[pos_ + k])) << (8 * k);
    pos_ += sizeof(T);
    T v;
    std::memcpy(&v, &bits, sizeof(T));
    return v;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return data_.size() - pos_; }
  const std::string& data() const { return data_; }
  [[noreturn]] void fail(size_t at, const std::string& what) const {
    raise(Errc::protocol, kCall, path_ + ": byte offset " + std::to_string(at) + ": " + what);
  }

 private:
  std::string path_;
  std::string data_;
  size_t pos_ = 0;
};
}  // namespace

void write_queue_snapshots(const std::string& path, const std::vector<QueueSnapshot>& snaps) {
  std::string out(kMagic, 8);
  put<uint32_t>(out, kVersion);
  put<uint32_t>(out, static_cast<uint32_t>(snaps.size()));
  for (const auto& s : snaps) {
    put<int32_t>(out, s.rank);
    put<uint32_t>(out, static_cast<uint32_t>(s.reason));
    put<double>(out, s.time_s);
    put<uint32_t>(out, static_cast<uint32_t>(s.umq.size()));
    put<uint32_t>(out, static_cast<uint32_t>(s.prq.size()));
    for (const auto* q : {&s.umq, &s.prq}) {
      for (const auto& e : *q) {
        put<int32_t>(out, e.comm);
        put<int32_t>(out, e.source);
        put<int32_t>(out, e.tag);
        put<uint32_t>(out, 0);
        put<int64_t>(out, e.bytes);
      }
    }
  }
  File f(std::fopen(path.c_str(), "wb"));
  if (!f) raise_errno(kCall, errno, "cannot create " + path);
  if (std::fwrite(out.data(), 1, out.size(), f.get()) != out.size()) raise_errno(kCall, errno, "cannot write " + path);
}

std::vector<QueueSnapshot> read_queue_snapshots(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) raise_errno(kCall, errno, "cannot open " + path);
  std::string data;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f.get())) > 0) data.append(buf, got);
  // Checked before `data` moves into the reader (GCC 12 at -O3 takes the moved-to string's
  // buffer pointer for uninitialized).
  const bool magic_ok = data.size() >= 8 && std::memcmp(data.data(), kMagic, 8) == 0;
  In in(path, std::move(data));
  if (!magic_ok) in.fail(0, "not a gpucomm queue snapshot file (wrong magic)");
  for (int k = 0; k < 8; ++k) in.get<uint8_t>("magic");
  uint32_t version = in.get<uint32_t>("header");
  if (version != kVersion) in.fail(8, "unsupported snapshot version " + std::to_string(version));
  uint32_t n = in.get<uint32_t>("header");
  std::vector<QueueSnapshot> out;
  for (uint32_t i = 0; i < n; ++i) {
    QueueSnapshot s;
    size_t at = in.pos();
    s.rank = in.get<int32_t>("snapshot");
    uint32_t reason = in.get<uint32_t>("snapshot");
    if (reason != static_cast<uint32_t>(SnapshotReason::rank_peak))
      in.fail(at + 4, "unknown snapshot reason " + std::to_string(reason));
    s.reason = static_cast<SnapshotReason>(reason);
    s.time_s = in.get<double>("snapshot");
    uint32_t nu = in.get<uint32_t>("snapshot"), np = in.get<uint32_t>("snapshot");
    if ((uint64_t(nu) + np) * 24 > in.left()) {
      in.fail(in.pos() - 8,
              "queue lengths " + std::to_string(nu) + " + " + std::to_string(np) + " exceed the file (truncated)");
    }
    for (uint32_t k = 0; k < nu + np; ++k) {
      QueueEnvelope e;
      e.comm = in.get<int32_t>("envelope");
      e.source = in.get<int32_t>("envelope");
      e.tag = in.get<int32_t>("envelope");
      in.get<uint32_t>("envelope");
      e.bytes = in.get<int64_t>("envelope");
      (k < nu ? s.umq : s.prq).push_back(e);
    }
    out.push_back(std::move(s));
  }
  if (in.left() != 0) in.fail(in.pos(), std::to_string(in.left()) + " trailing bytes after the last snapshot");
  return out;
}

}  // namespace gpucomm::trace
