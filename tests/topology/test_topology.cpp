// Topology detection and reports that run anywhere: on a machine without GPU the detection
// must give zero GPUs; synthetic topologies pin the report formats.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <climits>

#include "gpucomm/topology/topology.hpp"
#include "json_check.hpp"
#include "test_support.hpp"

namespace gpucomm::topology {
namespace {

using gpucomm::testing::JsonValue;
using gpucomm::testing::parse_json;

std::string system_host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// Two H200-like GPUs joined by 18 NVLinks.
Topology two_gpus() {
  Topology t;
  t.host = "node\"1";
  t.driver_version = 13000;
  t.runtime_version = 13000;
  t.cuda_status = "ok";
  t.nvml_available = true;
  t.nvml_note = "NVLink counts from NVML";
  for (int i = 0; i < 2; ++i) {
    Gpu g;
    g.index = i;
    g.name = "NVIDIA H200";
    g.pci_bus_id = i == 0 ? "0000:1b:00.0" : "0000:43:00.0";
    g.uuid = "GPU-0000000" + std::to_string(i) + "-0000-0000-0000-000000000000";
    g.cc_major = 9;
    g.sm_count = 132;
    g.memory_bytes = 150ULL << 30;
    g.l2_bytes = 60ULL << 20;
    g.numa_node = i;
    g.cpu_affinity = i == 0 ? "0-47" : "";
    t.gpus.push_back(g);
  }
  for (int s = 0; s < 2; ++s) {
    Link l;
    l.src = s;
    l.dst = 1 - s;
    l.peer_access = l.native_atomics = true;
    l.performance_rank = 0;
    l.type = LinkType::nvlink;
    l.nvlinks = 18;
    l.label = "NV18";
    l.source = "nvml";
    t.links.push_back(l);
  }
  return t;
}

TEST(Topology, DetectSeesTheRuntimeGpuCountAndHostName) {
  unsetenv("GPUCOMM_HOSTNAME");
  Topology t = detect();
  EXPECT_EQ(t.host, system_host_name());
  EXPECT_GT(t.runtime_version, 0);
  const size_t n = static_cast<size_t>(gpucomm::testing::gpu_count());
  EXPECT_EQ(t.gpus.size(), n);
  EXPECT_EQ(t.links.size(), n * (n > 0 ? n - 1 : 0));
  EXPECT_EQ(t.cuda_status == "ok", n > 0) << t.cuda_status;
}

TEST(Topology, NoGpuGivesEmptyTopologyNotAnError) {
  if (gpucomm::testing::gpu_count() > 0) GTEST_SKIP() << "this machine has GPUs";
  Topology t;
  ASSERT_NO_THROW(t = detect());
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_TRUE(t.links.empty());
  EXPECT_FALSE(t.nvml_available);
  EXPECT_NE(t.cuda_status, "ok");
  if (t.driver_version == 0) {
    EXPECT_EQ(t.cuda_status, "no driver");
  }
  std::string text = to_text(t);
  EXPECT_NE(text.find("GPUs: none"), std::string::npos) << text;
  EXPECT_NE(text.find("Host: " + t.host), std::string::npos) << text;
}

TEST(Topology, HostNameOverride) {
  setenv("GPUCOMM_HOSTNAME", "node-7", 1);
  EXPECT_EQ(detect().host, "node-7");
  unsetenv("GPUCOMM_HOSTNAME");
}

TEST(Topology, DetectedJsonParses) {
  Topology t = detect();
  JsonValue v;
  ASSERT_TRUE(parse_json(to_json(t), &v));
  for (const char* k : {"host", "cuda", "nvml", "gpus", "links"}) EXPECT_TRUE(v.has(k)) << k;
  EXPECT_EQ(v.at("host").text, t.host);
  EXPECT_EQ(v.at("gpus").items.size(), t.gpus.size());
  EXPECT_EQ(v.at("links").items.size(), t.links.size());
  EXPECT_EQ(v.at("cuda").at("status").text, t.cuda_status);
  EXPECT_EQ(v.at("cuda").at("driver").text, cuda_version_string(t.driver_version));
}

TEST(Topology, JsonFormatIsStable) {
  Topology t = two_gpus();
  t.gpus.pop_back();
  t.links.clear();
  EXPECT_EQ(to_json(t), R"({"host":"node\"1","cuda":{"status":"ok","driver_version":13000,"driver":"13.0",)"
                        R"("runtime_version":13000,"runtime":"13.0"},"nvml":{"available":true,)"
                        R"("note":"NVLink counts from NVML"},"gpus":[{"index":0,"name":"NVIDIA H200",)"
                        R"("pci_bus_id":"0000:1b:00.0","uuid":"GPU-00000000-0000-0000-0000-000000000000",)"
                        R"("compute_capability":"9.0","sm_count":132,"memory_bytes":161061273600,)"
                        R"("l2_bytes":62914560,"numa_node":0,"cpu_affinity":"0-47"}],"links":[]})");
}

TEST(Topology, JsonOfLinksParses) {
  JsonValue v;
  ASSERT_TRUE(parse_json(to_json(two_gpus()), &v));
  const auto& links = v.at("links").items;
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[0].at("type").text, "nvlink");
  EXPECT_EQ(links[0].at("nvlinks").text, "18");
  EXPECT_EQ(links[0].at("label").text, "NV18");
  EXPECT_TRUE(links[1].at("peer_access").b);
  EXPECT_EQ(links[1].at("src").text, "1");
}

TEST(Topology, TextReportShowsTableAndMatrix) {
  std::string text = to_text(two_gpus());
  EXPECT_NE(text.find("GPUs: 2"), std::string::npos) << text;
  EXPECT_NE(text.find("NVIDIA H200"), std::string::npos) << text;
  EXPECT_NE(text.find("0000:43:00.0"), std::string::npos) << text;
  EXPECT_NE(text.find("150.0 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU0  X     NV18"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU1  NV18  X"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU0 -> GPU1"), std::string::npos) << text;
  EXPECT_NE(text.find("nvlink x18"), std::string::npos) << text;
  EXPECT_NE(text.find("N/A"), std::string::npos) << text;  // GPU1's CPU affinity
}

TEST(Topology, LinkLooksUpOrderedPairs) {
  Topology t;
  t.gpus.resize(3);
  for (int s = 0; s < 3; ++s) {
    for (int d = 0; d < 3; ++d) {
      if (s != d) {
        Link l;
        l.src = s;
        l.dst = d;
        t.links.push_back(l);
      }
    }
  }
  for (int s = 0; s < 3; ++s) {
    for (int d = 0; d < 3; ++d) {
      const Link* l = t.link(s, d);
      if (s == d) {
        EXPECT_EQ(l, nullptr);
      } else {
        ASSERT_NE(l, nullptr);
        EXPECT_EQ(l->src, s);
        EXPECT_EQ(l->dst, d);
      }
    }
  }
  EXPECT_EQ(t.link(-1, 0), nullptr);
  EXPECT_EQ(t.link(0, 3), nullptr);
}

TEST(Topology, CudaVersionStrings) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
  EXPECT_EQ(cuda_version_string(0), "no driver");
}

}  // namespace
}  // namespace gpucomm::topology
