#include "memory.hpp"

#include "ucx_status.hpp"

namespace gpucomm::transport::ucx {

HeapRegistration::HeapRegistration(ucp_context_h context, void* base, size_t bytes, bool on_device)
    : context_(context) {
  if (bytes == 0) return;
  const std::string what = "ucx transport open: registering the symmetric heap (" + std::to_string(bytes) +
                           " bytes of " + (on_device ? "device" : "host") + " memory)";
  ucp_mem_map_params_t mp{};
  mp.field_mask =
      UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
  mp.address = base;
  mp.length = bytes;
  mp.memory_type = on_device ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  check(ucp_mem_map(context_, &mp, &memh_), Errc::unsupported, "ucp_mem_map", what);
  void* packed = nullptr;
  size_t len = 0;
  ucs_status_t s = ucp_rkey_pack(context_, memh_, &packed, &len);
  if (s != UCS_OK) {
    ucp_mem_unmap(context_, memh_);
    raise_status(Errc::unsupported, "ucp_rkey_pack", what, s);
  }
  rkey_.assign(static_cast<const char*>(packed), len);
  ucp_rkey_buffer_release(packed);
}

HeapRegistration::~HeapRegistration() {
  if (memh_) ucp_mem_unmap(context_, memh_);
}

RemoteKey::RemoteKey(ucp_ep_h ep, const std::string& packed, int pe) {
  check(ucp_ep_rkey_unpack(ep, packed.data(), &rkey_), Errc::protocol, "ucp_ep_rkey_unpack",
        "ucx transport open: the heap key of PE " + std::to_string(pe));
}

RemoteKey& RemoteKey::operator=(RemoteKey&& o) noexcept {
  if (this != &o) {
    reset();
    rkey_ = std::exchange(o.rkey_, nullptr);
  }
  return *this;
}

void RemoteKey::reset() {
  if (rkey_) ucp_rkey_destroy(std::exchange(rkey_, nullptr));
}

}  // namespace gpucomm::transport::ucx
