#include "worker.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "gpucomm/core/log.hpp"
#include "ucx_status.hpp"

namespace gpucomm::transport::ucx {

namespace {
constexpr const char* kCall = "ucx transport open";

// A libucp older than the headers is another UCX loaded first (an MPI library's, say) that
// took the soname: its missing functions would fail in odd places, so refuse it here.
void check_library_version() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  if (major != UCP_API_MAJOR || minor < UCP_API_MINOR) {
    raise(Errc::unsupported, kCall,
          "the loaded " + library_description() + " is older than the UCX " + std::to_string(UCP_API_MAJOR) + "." +
              std::to_string(UCP_API_MINOR) +
              " headers libgpucomm_ucx was built with (was another UCX loaded first, by MPI for instance?)");
  }
}

struct ConfigGuard {
  ucp_config_t* config = nullptr;
  ~ConfigGuard() {
    if (config) ucp_config_release(config);
  }
};
}  // namespace

std::string library_description() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  std::string text = "UCX " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ucp_get_version), &info) != 0 && info.dli_fname)
    text += std::string(" (") + info.dli_fname + ")";
  return text;
}

Worker::Worker(size_t expected_peers) {
  check_library_version();
  ConfigGuard cfg;
  check(ucp_config_read(nullptr, nullptr, &cfg.config), Errc::unsupported, "ucp_config_read", kCall);
  // fence(): UCX's endpoint-based fence orders an endpoint's operations with a weak (transport)
  // fence where the endpoint used one lane since it was last flushed, and flushes only where it
  // used several; the worker-wide strong fence that `auto` picks over TCP is a blocking flush of
  // every endpoint. UCX_FENCE_MODE in the environment wins.
  if (!std::getenv("UCX_FENCE_MODE"))
    check(ucp_config_modify(cfg.config, "FENCE_MODE", "ep_based"), Errc::unsupported, "ucp_config_modify", kCall);

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                      UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_AM;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = expected_peers;
  params.name = "gpucomm";
  check(ucp_init(&params, cfg.config, &context_), Errc::unsupported, "ucp_init", kCall);

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucs_status_t s = ucp_worker_create(context_, &wp, &worker_);
  if (s != UCS_OK) {
    ucp_cleanup(context_);
    raise_status(Errc::unsupported, "ucp_worker_create", kCall, s);
  }

  ucp_address_t* addr = nullptr;
  size_t len = 0;
  s = ucp_worker_get_address(worker_, &addr, &len);
  if (s != UCS_OK) {
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    raise_status(Errc::unsupported, "ucp_worker_get_address", kCall, s);
  }
  address_.assign(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(worker_, addr);
  GPUCOMM_LOG(debug, "ucx: " << library_description() << ", worker address of " << len << " bytes");
}

Worker::~Worker() {
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
}

}  // namespace gpucomm::transport::ucx
