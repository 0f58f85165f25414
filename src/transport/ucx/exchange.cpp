#include "exchange.hpp"

#include <cstring>

#include "gpucomm/core/error.hpp"

namespace gpucomm::transport::ucx {

namespace {
constexpr uint64_t kMagic = 0x31584355436d6367ULL;  // "gcmCUCX1"

void put_u64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_bytes(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

class Reader {
 public:
  Reader(const std::string& blob, int rank) : blob_(blob), rank_(rank) {}
  uint64_t u64() {
    need(8);
    uint64_t v;
    std::memcpy(&v, blob_.data() + off_, 8);
    off_ += 8;
    return v;
  }
  std::string bytes() {
    uint64_t n = u64();
    need(n);
    std::string s = blob_.substr(off_, n);
    off_ += n;
    return s;
  }
  void done() const {
    if (off_ != blob_.size()) fail("trailing bytes");
  }
  [[noreturn]] void fail(const std::string& why) const {
    raise(Errc::protocol, "ucx transport open",
          "the address record of PE " + std::to_string(rank_) + " is malformed (" + why + ")");
  }

 private:
  void need(uint64_t n) const {
    if (n > blob_.size() - off_) fail("truncated");
  }
  const std::string& blob_;
  int rank_;
  size_t off_ = 0;
};
}  // namespace

std::string pack_info(const PeerInfo& info) {
  std::string out;
  put_u64(out, kMagic);
  put_bytes(out, info.error);
  if (!info.error.empty()) return out;
  put_bytes(out, info.address);
  put_bytes(out, info.rkey);
  put_u64(out, info.heap_base);
  put_u64(out, info.heap_bytes);
  put_u64(out, info.heap_on_device ? 1 : 0);
  std::string reach(info.reaches.size(), '\0');
  for (size_t i = 0; i < info.reaches.size(); ++i) reach[i] = info.reaches[i] ? 1 : 0;
  put_bytes(out, reach);
  return out;
}

PeerInfo unpack_info(const std::string& blob, int rank, int size) {
  Reader r(blob, rank);
  if (r.u64() != kMagic) r.fail("foreign record");
  PeerInfo info;
  info.error = r.bytes();
  if (!info.error.empty()) {
    r.done();
    return info;
  }
  info.address = r.bytes();
  info.rkey = r.bytes();
  info.heap_base = r.u64();
  info.heap_bytes = r.u64();
  info.heap_on_device = r.u64() != 0;
  std::string reach = r.bytes();
  r.done();
  if (reach.size() != static_cast<size_t>(size))
    r.fail("it lists " + std::to_string(reach.size()) + " PEs, the job has " + std::to_string(size));
  if (info.address.empty()) r.fail("empty worker address");
  info.reaches.resize(reach.size());
  for (size_t i = 0; i < reach.size(); ++i) info.reaches[i] = reach[i] != 0;
  return info;
}

}  // namespace gpucomm::transport::ucx
