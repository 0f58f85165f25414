#include "wire.hpp"

#include <cstring>

#include "gpucomm/core/error.hpp"

namespace gpucomm::bootstrap::wire {

const char* op_name(Op op) {
  switch (op) {
    case Op::hello:
      return "hello";
    case Op::hello_ok:
      return "hello_ok";
    case Op::set:
      return "set";
    case Op::get:
      return "get";
    case Op::value:
      return "value";
    case Op::gather:
      return "gather";
    case Op::gather_result:
      return "gather_result";
    case Op::query:
      return "query";
    case Op::query_result:
      return "query_result";
    case Op::ok:
      return "ok";
    case Op::bye:
      return "bye";
    case Op::abort:
      return "abort";
    case Op::error:
      return "error";
  }
  return "unknown";
}

void validate(const Header& h, const char* where) {
  if (h.magic != kMagic) {
    raise(
        Errc::protocol, where, "not a gpucomm bootstrap message (bad magic 0x" + [&] {
          char b[16];
          std::snprintf(b, sizeof b, "%08x", h.magic);
          return std::string(b);
        }() + ")");
  }
  if (h.version != kVersion) {
    raise(Errc::protocol, where,
          "bootstrap protocol version " + std::to_string(h.version) + ", expected " + std::to_string(kVersion) +
              " (mixed gpucomm versions in one job?)");
  }
  if (h.op < static_cast<uint16_t>(Op::hello) || h.op > static_cast<uint16_t>(Op::error))
    raise(Errc::protocol, where, "unknown operation " + std::to_string(h.op));
  if (h.key_len > kMaxKey)
    raise(Errc::protocol, where, "key of " + std::to_string(h.key_len) + " bytes exceeds the limit");
  if (h.payload_len > kMaxPayload)
    raise(Errc::protocol, where, "payload of " + std::to_string(h.payload_len) + " bytes exceeds the limit");
}

std::string encode(Op op, int32_t rank, uint32_t aux, uint64_t seq, const std::string& key,
                   const std::string& payload) {
  Header h{kMagic, kVersion,      static_cast<uint16_t>(op), rank, aux, seq, static_cast<uint32_t>(key.size()),
           0,      payload.size()};
  std::string buf(sizeof h + key.size() + payload.size(), '\0');
  std::memcpy(buf.data(), &h, sizeof h);
  std::memcpy(buf.data() + sizeof h, key.data(), key.size());
  std::memcpy(buf.data() + sizeof h + key.size(), payload.data(), payload.size());
  return buf;
}

void write_frame(int fd, Op op, int32_t rank, uint32_t aux, uint64_t seq, const std::string& key,
                 const std::string& payload, const char* what) {
  std::string buf = encode(op, rank, aux, seq, key, payload);
  send_all(fd, buf.data(), buf.size(), what);
}

bool read_frame(int fd, Frame* f, Clock::time_point deadline, const char* what, bool allow_eof) {
  if (!recv_all(fd, &f->h, sizeof f->h, deadline, what, allow_eof)) return false;
  validate(f->h, what);
  f->key.resize(f->h.key_len);
  f->payload.resize(f->h.payload_len);
  if (f->h.key_len) recv_all(fd, f->key.data(), f->h.key_len, deadline, what);
  if (f->h.payload_len) recv_all(fd, f->payload.data(), f->h.payload_len, deadline, what);
  return true;
}

}  // namespace gpucomm::bootstrap::wire
