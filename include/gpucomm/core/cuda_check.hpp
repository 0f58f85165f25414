#pragma once
// The one CUDA error check of gpucomm: a failed CUDA runtime call raises gpucomm::Error
// (Errc::cuda) naming the call, what it was for, and CUDA's error name and text. The header does
// not include CUDA's: it works from host-only translation units too.
#include <string>

namespace gpucomm {

// "cudaErrorName (text)" for a cudaError_t value.
std::string cuda_error_text(int err);
// Raises Errc::cuda when `err` (a cudaError_t) is not cudaSuccess; also clears CUDA's sticky
// last error of non-fatal failures.
void check_cuda(int err, const char* call, const std::string& detail = "");
// After a kernel launch: raises on a launch error (bad configuration, too many resources).
void check_last_launch(const std::string& what);

}  // namespace gpucomm

// Checks a CUDA runtime call by its text.
#define GPUCOMM_CUDA_CHECK(call) ::gpucomm::check_cuda(static_cast<int>(call), #call)
// After a kernel launch, naming what was launched.
#define GPUCOMM_CUDA_CHECK_LAUNCH(what) ::gpucomm::check_last_launch(what)
