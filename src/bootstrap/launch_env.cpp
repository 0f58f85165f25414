#include "gpucomm/bootstrap/launch_env.hpp"

#include <charconv>
#include <cstdlib>

#include "gpucomm/core/env.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::bootstrap {
namespace {

std::optional<int> int_var(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end || x < 0 || x > (1 << 30))
    raise_arg("launch environment", name, std::string("'") + v + "' is not a non-negative integer");
  return static_cast<int>(x);
}

std::string str_var(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// SLURM_TASKS_PER_NODE looks like "4(x2),3": the local size of node `node` is needed only for
// the common uniform case; -1 when it cannot be told.
int slurm_local_size() {
  if (auto n = int_var("SLURM_NTASKS_PER_NODE")) return *n;
  std::string t = str_var("SLURM_TASKS_PER_NODE");
  if (t.empty()) return -1;
  size_t paren = t.find('(');
  if (t.find(',') != std::string::npos) return -1;
  const char* first = t.data();
  const char* last = first + (paren == std::string::npos ? t.size() : paren);
  int n = 0;
  if (auto [end, ec] = std::from_chars(first, last, n); ec != std::errc() || end != last || n < 0)
    raise_arg("launch environment", "SLURM_TASKS_PER_NODE", "'" + t + "' does not start with a task count");
  return n;
}

}  // namespace

LaunchInfo detect_launch() {
  LaunchInfo info;
  if (auto r = int_var("GPUCOMM_RANK")) {
    info.launcher = "gpucomm";
    info.rank = *r;
    auto s = int_var("GPUCOMM_SIZE");
    if (!s) raise_arg("launch environment", "GPUCOMM_SIZE", "must be set together with GPUCOMM_RANK");
    info.size = *s;
    info.local_rank = int_var("GPUCOMM_LOCAL_RANK").value_or(-1);
    info.local_size = int_var("GPUCOMM_LOCAL_SIZE").value_or(-1);
  } else if (auto r = int_var("OMPI_COMM_WORLD_RANK")) {
    info.launcher = "openmpi";
    info.rank = *r;
    info.size = int_var("OMPI_COMM_WORLD_SIZE").value_or(1);
    info.local_rank = int_var("OMPI_COMM_WORLD_LOCAL_RANK").value_or(-1);
    info.local_size = int_var("OMPI_COMM_WORLD_LOCAL_SIZE").value_or(-1);
    info.job_id = str_var("OMPI_MCA_ess_base_jobid");
    if (info.job_id.empty()) info.job_id = str_var("PMIX_NAMESPACE");
  } else if (auto r = int_var("PMI_RANK")) {
    info.launcher = "pmi";
    info.rank = *r;
    info.size = int_var("PMI_SIZE").value_or(1);
    info.local_rank = int_var("MPI_LOCALRANKID").value_or(int_var("PMI_LOCAL_RANK").value_or(-1));
    info.local_size = int_var("MPI_LOCALNRANKS").value_or(int_var("PMI_LOCAL_SIZE").value_or(-1));
    info.job_id = str_var("PMI_KVSNAME");
  } else if (auto r = int_var("SLURM_PROCID")) {
    info.launcher = "slurm";
    info.rank = *r;
    info.size = int_var("SLURM_NTASKS").value_or(int_var("SLURM_NPROCS").value_or(1));
    info.local_rank = int_var("SLURM_LOCALID").value_or(-1);
    info.local_size = slurm_local_size();
    if (auto nn = int_var("SLURM_NNODES"); nn && *nn == 1) info.local_size = info.size;
    info.job_id = str_var("SLURM_JOB_ID") + "." + str_var("SLURM_STEP_ID");
  } else if (auto r = int_var("RANK"); r && std::getenv("WORLD_SIZE")) {
    info.launcher = "torchrun";
    info.rank = *r;
    info.size = int_var("WORLD_SIZE").value_or(1);
    info.local_rank = int_var("LOCAL_RANK").value_or(-1);
    info.local_size = int_var("LOCAL_WORLD_SIZE").value_or(-1);
    std::string addr = str_var("MASTER_ADDR");
    auto port = int_var("MASTER_PORT");
    if (!addr.empty() && port) {
      // torchrun's own store listens on MASTER_PORT; gpucomm's store takes the next port.
      info.store_addr = addr + ":" + std::to_string(*port + 1);
    }
    info.job_id = str_var("TORCHELASTIC_RUN_ID");
  } else {
    info.launcher = "singleton";
  }
  info.unique_id = str_var("GPUCOMM_UNIQUE_ID");
  if (std::string a = str_var("GPUCOMM_BOOTSTRAP_ADDR"); !a.empty()) info.store_addr = a;
  if (std::string j = str_var("GPUCOMM_JOB_ID"); !j.empty()) info.job_id = j;
  if (info.size < 1) raise_arg("launch environment", "size", "the launcher reports a job of 0 PEs");
  if (info.rank >= info.size) {
    raise_arg("launch environment", "rank",
              "rank " + std::to_string(info.rank) + " is not below the job size " + std::to_string(info.size) + " (" +
                  info.launcher + " variables)");
  }
  if (info.local_size > 0 && info.local_rank >= info.local_size) {
    raise_arg("launch environment", "local rank",
              "local rank " + std::to_string(info.local_rank) + " is not below the local size " +
                  std::to_string(info.local_size));
  }
  info.token_seed = info.launcher + "|" + info.job_id + "|" + info.store_addr + "|" + std::to_string(info.size);
  return info;
}

}  // namespace gpucomm::bootstrap
