#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "pci_path.hpp"

namespace gpucomm::topology::detail {
namespace {

namespace fs = std::filesystem;

TEST(PciPath, NormalizesBusIds) {
  EXPECT_EQ(normalize_bus_id("0000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalize_bus_id("00000000:1B:00.0"), "0000:1b:00.0");  // NVML's 8-digit domain
  EXPECT_EQ(normalize_bus_id("1b:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalize_bus_id("0001E4F2:00:1f.7"), "1e4f2:00:1f.7");
  EXPECT_EQ(normalize_bus_id(""), "");
  EXPECT_EQ(normalize_bus_id("0000:1b:00"), "");
  EXPECT_EQ(normalize_bus_id("0000:1g:00.0"), "");
  EXPECT_EQ(normalize_bus_id("0000:1b:20.0"), "");  // device is 0..31
  EXPECT_EQ(normalize_bus_id("0000:1b:00.8"), "");  // function is 0..7
  EXPECT_EQ(normalize_bus_id("pci0000:00"), "");
}

TEST(PciPath, ClassifiesPcieRelations) {
  const std::string root = "/sys/devices/pci0000:00/0000:00:01.0";
  const std::string sw = root + "/0000:01:00.0";  // upstream port of a switch
  // Two GPUs on downstream ports of the same switch.
  EXPECT_EQ(classify_pcie_path(sw + "/0000:02:08.0/0000:03:00.0", sw + "/0000:02:10.0/0000:04:00.0", 0, 0), "PIX");
  // Behind two levels of switches.
  EXPECT_EQ(classify_pcie_path(sw + "/0000:02:08.0/0000:03:00.0/0000:04:00.0/0000:05:00.0",
                               sw + "/0000:02:10.0/0000:06:00.0/0000:07:00.0/0000:08:00.0", 0, 0),
            "PXB");
  // Different root ports of one host bridge.
  EXPECT_EQ(classify_pcie_path("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                               "/sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0", 0, 0),
            "PHB");
  // Different host bridges.
  EXPECT_EQ(classify_pcie_path("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                               "/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", 0, 0),
            "NODE");
  EXPECT_EQ(classify_pcie_path("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                               "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", 0, 1),
            "SYS");
  EXPECT_EQ(classify_pcie_path("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                               "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", -1, -1),
            "SYS");
  // Not a PCI device folder.
  EXPECT_EQ(classify_pcie_path("", "/sys/devices/pci0000:00/0000:00:01.0", 0, 0), "");
  EXPECT_EQ(classify_pcie_path("/sys/devices/virtual/net/lo", "/sys/devices/pci0000:00/0000:00:01.0", 0, 0), "");
}

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpucomm-sysfs-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    // sysfs keeps devices under /devices and links to them from /bus/pci/devices.
    dev_ = root_ + "/devices/pci0000:00/0000:00:01.0/0000:1b:00.0";
    fs::create_directories(dev_);
    fs::create_directories(root_ + "/bus/pci/devices");
    fs::create_directory_symlink(dev_, root_ + "/bus/pci/devices/0000:1b:00.0");
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dev_ + "/" + name) << text; }

  std::string root_, dev_;
};

TEST_F(FakeSysfs, ReadsNumaNodeAndCpuList) {
  write("numa_node", "1\n");
  write("local_cpulist", "48-95,144-191\n");
  EXPECT_EQ(read_numa_node(root_, "0000:1b:00.0"), 1);
  EXPECT_EQ(read_cpu_list(root_, "0000:1b:00.0"), "48-95,144-191");
  EXPECT_EQ(device_path(root_, "0000:1b:00.0"), fs::canonical(dev_).string());
}

TEST_F(FakeSysfs, UnknownValuesReadAsMissing) {
  write("numa_node", "-1\n");
  EXPECT_EQ(read_numa_node(root_, "0000:1b:00.0"), -1);
  write("numa_node", "garbage");
  EXPECT_EQ(read_numa_node(root_, "0000:1b:00.0"), -1);
  EXPECT_EQ(read_numa_node(root_, "0000:99:00.0"), -1);
  EXPECT_EQ(read_cpu_list(root_, "0000:99:00.0"), "");
  EXPECT_EQ(device_path(root_, "0000:99:00.0"), "");
}

}  // namespace
}  // namespace gpucomm::topology::detail
