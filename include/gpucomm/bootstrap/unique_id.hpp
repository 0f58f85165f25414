#pragma once
// The bootstrap unique id: where rank 0 serves the store and the random token that
// authenticates peers. Text form: gpucomm1:HOST:PORT:TOKEN (TOKEN = 32 hex digits; an IPv6
// HOST is written in brackets).
#include <array>
#include <cstdint>
#include <string>

namespace gpucomm::bootstrap {

struct UniqueId {
  std::string host;  // numeric address the store listens on
  uint16_t port = 0;
  std::array<uint8_t, 16> token{};  // random secret shared by the job's PEs

  std::string to_string() const;
  std::string endpoint() const;  // HOST:PORT
  // Parses the text form; a malformed id raises Errc::invalid_argument naming `what`.
  static UniqueId parse(const std::string& text, const std::string& what = "unique id");

  // Creates an id and opens its listening socket now (so the port cannot be taken between
  // creation and use). `ifname` picks the interface; empty means loopback. The socket is kept
  // in this process until a store is started with the id (or the process exits).
  static UniqueId create(const std::string& ifname = "");
};

std::string token_hex(const std::array<uint8_t, 16>& t);

}  // namespace gpucomm::bootstrap
