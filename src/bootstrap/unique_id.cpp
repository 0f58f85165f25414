#include "gpucomm/bootstrap/unique_id.hpp"

#include <sys/random.h>

#include <cerrno>
#include <charconv>

#include "gpucomm/core/error.hpp"
#include "listen_registry.hpp"
#include "socket.hpp"

namespace gpucomm::bootstrap {

std::string token_hex(const std::array<uint8_t, 16>& t) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : t) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::string UniqueId::endpoint() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string UniqueId::to_string() const {
  return "gpucomm1:" + endpoint() + ":" + token_hex(token);
}

UniqueId UniqueId::parse(const std::string& text, const std::string& what) {
  static const std::string prefix = "gpucomm1:";
  auto bad = [&](const std::string& why) {
    raise_arg("bootstrap", what, "'" + text + "' is malformed: " + why + " (expected gpucomm1:HOST:PORT:TOKEN)");
  };
  if (text.compare(0, prefix.size(), prefix) != 0) bad("it does not start with 'gpucomm1:'");
  std::string rest = text.substr(prefix.size());
  size_t last = rest.rfind(':');
  if (last == std::string::npos) bad("it has no token");
  std::string tok = rest.substr(last + 1);
  if (tok.size() != 32) bad("the token is not 32 hex digits");
  UniqueId id;
  for (size_t i = 0; i < 16; ++i) {
    const char* first = tok.data() + 2 * i;
    unsigned v = 0;
    if (auto [end, ec] = std::from_chars(first, first + 2, v, 16); ec != std::errc() || end != first + 2)
      bad("the token is not 32 hex digits");
    id.token[i] = static_cast<uint8_t>(v);
  }
  split_host_port(rest.substr(0, last), what, &id.host, &id.port);
  if (id.port == 0) bad("port 0");
  return id;
}

UniqueId UniqueId::create(const std::string& ifname) {
  UniqueId id;
  id.host = interface_address(ifname);
  size_t got = 0;
  while (got < id.token.size()) {
    ssize_t r = getrandom(id.token.data() + got, id.token.size() - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      raise_errno("getrandom", errno);
    }
    got += static_cast<size_t>(r);
  }
  Fd fd = listen_tcp(id.host, 0);
  id.port = local_address(fd.get()).port();
  ListenRegistry::instance().put(id.endpoint(), std::move(fd));
  return id;
}

}  // namespace gpucomm::bootstrap
