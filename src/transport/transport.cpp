// Transport names, GPUCOMM_TRANSPORT, and the registry that remote-transport libraries
// (libgpucomm_ucx) join when they are loaded.
#include "gpucomm/transport/transport.hpp"

#include <dlfcn.h>

#include <map>
#include <mutex>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::transport {

namespace {
struct Registry {
  std::mutex mu;
  std::map<std::string, RemoteFactory> factories;
};
Registry& registry() {
  static Registry r;
  return r;
}

// Folder of the library that holds this function (libgpucomm), with a trailing slash.
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || !info.dli_fname) return {};
  std::string p = info.dli_fname;
  auto slash = p.rfind('/');
  return slash == std::string::npos ? std::string() : p.substr(0, slash + 1);
}
}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::automatic:
      return "auto";
    case Kind::direct:
      return "direct";
    case Kind::proxy_cpu:
      return "proxy-cpu";
    case Kind::proxy_gpu:
      return "proxy-gpu";
    case Kind::ucx:
      return "ucx";
  }
  return "?";
}

Kind parse_kind(const std::string& text, const char* what) {
  for (Kind k : {Kind::automatic, Kind::direct, Kind::proxy_cpu, Kind::proxy_gpu, Kind::ucx})
    if (text == kind_name(k)) return k;
  if (text.empty()) return Kind::automatic;
  raise_arg("transport", what, "'" + text + "' is not one of auto, direct, proxy-cpu, proxy-gpu, ucx");
}

Kind kind_from_env() {
  auto v = env::get("GPUCOMM_TRANSPORT");
  return v ? parse_kind(*v, "GPUCOMM_TRANSPORT") : Kind::automatic;
}

void register_remote(const std::string& name, RemoteFactory f) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.factories[name] = std::move(f);
}

std::unique_ptr<Remote> open_remote(const std::string& name, const RemoteContext& ctx) {
  auto find = [&]() -> RemoteFactory {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    auto it = r.factories.find(name);
    return it == r.factories.end() ? RemoteFactory{} : it->second;
  };
  RemoteFactory f = find();
  if (!f) {
    // The library registers its factory from a static initializer when it is loaded.
    std::string file = "libgpucomm_" + name + ".so";
    std::string errors;
    for (const std::string& path : {own_folder() + file, file}) {
      if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) break;
      const char* e = dlerror();
      errors += "\n  " + path + ": " + (e ? e : "unknown error");
    }
    f = find();
    if (!f) raise(Errc::unsupported, "transport " + name, "no '" + name + "' transport could be loaded:" + errors);
  }
  return f(ctx);
}

}  // namespace gpucomm::transport
