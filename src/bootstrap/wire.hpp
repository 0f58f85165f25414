#pragma once
// Frames of the bootstrap store protocol. Every frame is a fixed header followed by a key and a
// payload. The first frame of a connection must be HELLO carrying the job token; anything
// malformed (bad magic, version, lengths) is rejected with a protocol error.
#include <cstdint>
#include <string>

#include "socket.hpp"

namespace gpucomm::bootstrap::wire {

constexpr uint32_t kMagic = 0x4d4f4347;  // "GCOM" little-endian
constexpr uint16_t kVersion = 1;
constexpr uint32_t kMaxKey = 4096;
constexpr uint64_t kMaxPayload = uint64_t(1) << 30;

enum class Op : uint16_t {
  hello = 1,  // client -> server: rank, aux = world size, payload = token
  hello_ok,   // server -> client
  set,        // key, payload = value
  get,        // key; answered by value when the key exists
  value,
  gather,         // key = group, aux = count, payload = u32 index + data
  gather_result,  // payload = count x (u64 length + bytes)
  query,          // key = group: which members of a gather have arrived (for diagnostics)
  query_result,   // payload = text
  ok,
  bye,    // orderly goodbye before closing
  abort,  // server -> clients: a PE failed; payload = reason
  error,  // server -> client: request failed; aux = Errc, payload = reason
};

struct Header {
  uint32_t magic;
  uint16_t version;
  uint16_t op;
  int32_t rank;
  uint32_t aux;
  uint64_t seq;
  uint32_t key_len;
  uint32_t reserved;
  uint64_t payload_len;
};
static_assert(sizeof(Header) == 40);

struct Frame {
  Header h{};
  std::string key;
  std::string payload;
  Op op() const { return static_cast<Op>(h.op); }
};

const char* op_name(Op op);
// Raises Errc::protocol if the header is not a well-formed gpucomm header.
void validate(const Header& h, const char* where);
std::string encode(Op op, int32_t rank, uint32_t aux, uint64_t seq, const std::string& key, const std::string& payload);
void write_frame(int fd, Op op, int32_t rank, uint32_t aux, uint64_t seq, const std::string& key,
                 const std::string& payload, const char* what);
// Reads one whole frame; returns false on orderly EOF between frames when allow_eof.
bool read_frame(int fd, Frame* f, Clock::time_point deadline, const char* what, bool allow_eof);

}  // namespace gpucomm::bootstrap::wire
