// Closing the transport: flush, a barrier during which this PE keeps progressing (its peers may
// still need that to complete their own flushes), then the endpoints are closed.
#include <chrono>

#include "gpucomm/bootstrap/bootstrap.hpp"
#include "gpucomm/core/env.hpp"
#include "gpucomm/core/log.hpp"
#include "polling.hpp"
#include "remote.hpp"

namespace gpucomm::transport::ucx {

UcxRemote::~UcxRemote() {
  try {
    flush();
  } catch (const std::exception& e) {
    GPUCOMM_LOG(warn, "ucx: closing with operations outstanding: " << e.what());
  }
  closing_ = true;  // from here on a peer that closes first is expected
  bool together = false;
  if (!bootstrap_->failed()) {
    try {
      progressing_barrier([this] { return worker_->progress(); }, [this] { bootstrap_->barrier(); }, true);
      together = true;
    } catch (const std::exception& e) {
      GPUCOMM_LOG(warn, "ucx: closing without the other PEs: " << e.what());
    }
  }
  for (Peer& p : peers_) p.rkey.reset();
  close_endpoints(together && in_flight_ == 0 && pending_remote_ == 0);
  heap_.reset();
  worker_.reset();
}

// Closes the endpoints. After a clean barrier nothing is outstanding, so a close (flush mode)
// only disconnects. An endpoint that failed is released by force, which completes what is still
// outstanding on it with UCS_ERR_CANCELED. After a failure the healthy endpoints are left to
// ucp_worker_destroy, since a close would wait for peers that may be gone. Bounded in time.
void UcxRemote::close_endpoints(bool graceful) {
  std::vector<void*> requests;
  for (Peer& p : peers_) {
    if (!p.ep) continue;
    ucp_ep_h ep = p.ep;
    p.ep = nullptr;
    if (!graceful && !p.failed) continue;
    ucp_request_param_t prm{};
    if (p.failed) {
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
    }
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &prm);
    if (UCS_PTR_IS_PTR(r)) requests.push_back(r);
  }
  const int64_t limit_ms = env::wait_timeout_ms() > 0 ? std::min<int64_t>(env::wait_timeout_ms(), 10000) : 10000;
  const auto start = std::chrono::steady_clock::now();
  Backoff backoff(true);
  while (!requests.empty()) {
    backoff.after(worker_->progress());
    for (size_t i = 0; i < requests.size();) {
      if (ucp_request_check_status(requests[i]) != UCS_INPROGRESS) {
        ucp_request_free(requests[i]);
        requests[i] = requests.back();
        requests.pop_back();
      } else {
        ++i;
      }
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(limit_ms)) {
      GPUCOMM_LOG(warn, "ucx: " << requests.size() << " endpoint(s) did not close within " << limit_ms << " ms");
      for (void* r : requests) ucp_request_free(r);
      break;
    }
  }
}

}  // namespace gpucomm::transport::ucx
