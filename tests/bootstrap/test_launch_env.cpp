#include <gtest/gtest.h>
#include <stdlib.h>

#include "gpucomm/bootstrap/launch_env.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::bootstrap {
namespace {
const char* kVars[] = {"GPUCOMM_RANK",
                       "GPUCOMM_SIZE",
                       "GPUCOMM_LOCAL_RANK",
                       "GPUCOMM_LOCAL_SIZE",
                       "GPUCOMM_UNIQUE_ID",
                       "OMPI_COMM_WORLD_RANK",
                       "OMPI_COMM_WORLD_SIZE",
                       "OMPI_COMM_WORLD_LOCAL_RANK",
                       "OMPI_COMM_WORLD_LOCAL_SIZE",
                       "OMPI_MCA_ess_base_jobid",
                       "PMIX_NAMESPACE",
                       "PMI_RANK",
                       "PMI_SIZE",
                       "SLURM_PROCID",
                       "SLURM_NTASKS",
                       "SLURM_LOCALID",
                       "SLURM_NTASKS_PER_NODE",
                       "SLURM_TASKS_PER_NODE",
                       "SLURM_JOB_ID",
                       "SLURM_STEP_ID",
                       "SLURM_NNODES",
                       "RANK",
                       "WORLD_SIZE",
                       "LOCAL_RANK",
                       "LOCAL_WORLD_SIZE",
                       "MASTER_ADDR",
                       "MASTER_PORT",
                       "GPUCOMM_BOOTSTRAP_ADDR",
                       "GPUCOMM_JOB_ID"};
class LaunchEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto v : kVars) unsetenv(v);
  }
  void TearDown() override {
    for (auto v : kVars) unsetenv(v);
  }
};
}  // namespace

TEST_F(LaunchEnv, Singleton) {
  auto i = detect_launch();
  EXPECT_EQ(i.launcher, "singleton");
  EXPECT_EQ(i.rank, 0);
  EXPECT_EQ(i.size, 1);
}

TEST_F(LaunchEnv, OpenMpi) {
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
  setenv("OMPI_MCA_ess_base_jobid", "1234", 1);
  auto i = detect_launch();
  EXPECT_EQ(i.launcher, "openmpi");
  EXPECT_EQ(i.rank, 3);
  EXPECT_EQ(i.size, 8);
  EXPECT_EQ(i.local_rank, 1);
  EXPECT_EQ(i.local_size, 4);
  EXPECT_FALSE(i.single_node());
  EXPECT_EQ(i.job_id, "1234");
}

TEST_F(LaunchEnv, Slurm) {
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_NTASKS", "6", 1);
  setenv("SLURM_LOCALID", "2", 1);
  setenv("SLURM_NNODES", "1", 1);
  setenv("SLURM_JOB_ID", "77", 1);
  setenv("SLURM_STEP_ID", "0", 1);
  auto i = detect_launch();
  EXPECT_EQ(i.launcher, "slurm");
  EXPECT_EQ(i.rank, 5);
  EXPECT_EQ(i.size, 6);
  EXPECT_TRUE(i.single_node());
  EXPECT_EQ(i.job_id, "77.0");
}

TEST_F(LaunchEnv, SlurmTasksPerNode) {
  setenv("SLURM_PROCID", "1", 1);
  setenv("SLURM_NTASKS", "8", 1);
  setenv("SLURM_LOCALID", "1", 1);
  setenv("SLURM_TASKS_PER_NODE", "4(x2)", 1);
  EXPECT_EQ(detect_launch().local_size, 4);
  setenv("SLURM_TASKS_PER_NODE", "4(x1),3", 1);  // not uniform: unknown
  EXPECT_EQ(detect_launch().local_size, -1);
  setenv("SLURM_TASKS_PER_NODE", "four(x2)", 1);
  try {
    detect_launch();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("SLURM_TASKS_PER_NODE"), std::string::npos) << e.what();
  }
}

TEST_F(LaunchEnv, Torchrun) {
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "10.1.2.3", 1);
  setenv("MASTER_PORT", "29500", 1);
  auto i = detect_launch();
  EXPECT_EQ(i.launcher, "torchrun");
  EXPECT_EQ(i.store_addr, "10.1.2.3:29501");
}

TEST_F(LaunchEnv, InconsistentValuesNameTheVariable) {
  setenv("GPUCOMM_RANK", "4", 1);
  setenv("GPUCOMM_SIZE", "4", 1);
  EXPECT_THROW(detect_launch(), Error);
  setenv("GPUCOMM_RANK", "x", 1);
  try {
    detect_launch();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPUCOMM_RANK"), std::string::npos) << e.what();
  }
}

}  // namespace gpucomm::bootstrap
