// Teams as kernels see them (TeamHandle) and the device side of a team's synchronization slot.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "gpu_state.hpp"
#include "gpucomm/core/cuda_check.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm {

TeamHandle Runtime::device_team_checked(const Team& team, uint32_t version, size_t bytes) const {
  GPUCOMM_CHECK_ARG(team.valid(), "Runtime::device_team", "team", "is not a team this PE belongs to");
  if (version != kHandleVersion || bytes != sizeof(TeamHandle)) {
    raise_arg("Runtime::device_team", "headers",
              "the program was compiled against gpucomm headers of handle version " + std::to_string(version) + " (" +
                  std::to_string(bytes) + "-byte TeamHandle), this library has version " +
                  std::to_string(kHandleVersion) + ": rebuild it against this library's headers");
  }
  const Team::State& s = *team.state_;
  TeamHandle t{};
  t.magic = kTeamMagic;
  t.version = kHandleVersion;
  t.bytes = sizeof(TeamHandle);
  t.slot = s.id;
  t.size = static_cast<int32_t>(s.members.size());
  t.rank = s.my_index;
  // An arithmetic progression needs no table (the world, most node teams, strided splits).
  const int n = t.size;
  const int stride = n > 1 ? s.members[1] - s.members[0] : 1;
  bool arithmetic = stride != 0;
  for (int i = 0; i < n && arithmetic; ++i) arithmetic = s.members[static_cast<size_t>(i)] == s.members[0] + i * stride;
  if (arithmetic) {
    t.start = s.members[0];
    t.stride = stride;
    t.members = nullptr;
  } else {
    t.start = 0;
    t.stride = 0;
    t.members = gpu_ ? s.device_members.get() : s.members.data();
  }
  return t;
}

// A new team's slot on this PE starts from zero (epoch and round words) before any member uses
// it: the caller ends with a collective that every member reaches after this.
void Runtime::reset_team_slot(Team::State& s) {
  if (!gpu_) return;
  auto* control = reinterpret_cast<DeviceControl*>(heap_->base() - kDeviceControlBytes);
  const size_t slot = static_cast<size_t>(s.id);
  check_cuda(cudaMemsetAsync(&control->team_epoch[slot], 0, sizeof(uint64_t), gpu_->stream), "cudaMemsetAsync",
             "team slot epoch");
  check_cuda(cudaMemsetAsync(&control->team_round[slot][0], 0, sizeof(uint64_t) * kMaxBarrierRounds, gpu_->stream),
             "cudaMemsetAsync", "team slot round words");
  // The member table for kernels (also for arithmetic teams: cheap, and device_team stays simple).
  void* table = nullptr;
  check_cuda(cudaMalloc(&table, sizeof(int32_t) * s.members.size()), "cudaMalloc", "team member table");
  s.device_members = std::shared_ptr<const int32_t>(static_cast<const int32_t*>(table),
                                                    [](const int32_t* p) { (void)cudaFree(const_cast<int32_t*>(p)); });
  check_cuda(cudaMemcpyAsync(table, s.members.data(), sizeof(int32_t) * s.members.size(), cudaMemcpyHostToDevice,
                             gpu_->stream),
             "cudaMemcpyAsync", "team member table");
  check_cuda(cudaStreamSynchronize(gpu_->stream), "cudaStreamSynchronize", "team set-up");
}

}  // namespace gpucomm
