#pragma once
// What each PE publishes through the bootstrap all-gather when the transport opens: its UCX
// worker address, the packed remote key and extent of its heap, and the PEs it will reach (so
// that each PE knows who may write to it). A PE whose set-up failed publishes only the error, so
// the others fail too instead of waiting.
#include <cstdint>
#include <string>
#include <vector>

namespace gpucomm::transport::ucx {

struct PeerInfo {
  std::string error;    // non-empty: this PE could not open the transport (then nothing else is set)
  std::string address;  // packed ucp worker address
  std::string rkey;     // packed remote key of the heap ("" when the heap is empty)
  uint64_t heap_base = 0;
  uint64_t heap_bytes = 0;
  bool heap_on_device = false;
  std::vector<bool> reaches;  // RemoteContext::remote_pes of that PE
};

std::string pack_info(const PeerInfo& info);
// Raises Errc::protocol naming `rank` when the blob is malformed or of another job size.
PeerInfo unpack_info(const std::string& blob, int rank, int size);

}  // namespace gpucomm::transport::ucx
