// Topology of the GPU machine: sane GPU properties and consistent links. With
// GPUCOMM_TEST_EXPECT_NVLINKS=n (18 on the 2x H200 machine) every pair must have n NVLinks.
#include <gtest/gtest.h>

#include <regex>

#include "gpucomm/core/env.hpp"
#include "gpucomm/topology/topology.hpp"
#include "test_support.hpp"

namespace gpucomm::topology {
namespace {

TEST(TopologyGpu, GpusHaveSaneProperties) {
  GPUCOMM_REQUIRE_GPUS(1);
  Topology t = detect();
  EXPECT_EQ(t.cuda_status, "ok");
  EXPECT_GT(t.driver_version, 0);
  ASSERT_EQ(t.gpus.size(), static_cast<size_t>(gpucomm::testing::gpu_count()));
  const std::regex bus_id("[0-9a-f]{4,8}:[0-9a-f]{2}:[0-1][0-9a-f]\\.[0-7]");
  const std::regex uuid("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const Gpu& g = t.gpus[i];
    SCOPED_TRACE("GPU " + std::to_string(i) + " " + g.name);
    EXPECT_EQ(g.index, static_cast<int>(i));
    EXPECT_FALSE(g.name.empty());
    EXPECT_GT(g.sm_count, 0);
    EXPECT_GT(g.memory_bytes, 0u);
    EXPECT_GT(g.l2_bytes, 0u);
    EXPECT_GE(g.cc_major, 7);
    EXPECT_TRUE(std::regex_match(g.pci_bus_id, bus_id)) << g.pci_bus_id;
    EXPECT_TRUE(std::regex_match(g.uuid, uuid)) << g.uuid;
    EXPECT_GE(g.numa_node, -1);
  }
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    for (size_t j = i + 1; j < t.gpus.size(); ++j) {
      EXPECT_NE(t.gpus[i].pci_bus_id, t.gpus[j].pci_bus_id);
      EXPECT_NE(t.gpus[i].uuid, t.gpus[j].uuid);
    }
  }
}

TEST(TopologyGpu, PeerLinksAreSymmetric) {
  GPUCOMM_REQUIRE_GPUS(2);
  Topology t = detect();
  int n = static_cast<int>(t.gpus.size());
  ASSERT_EQ(t.links.size(), static_cast<size_t>(n * (n - 1)));
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const Link* ab = t.link(a, b);
      const Link* ba = t.link(b, a);
      ASSERT_TRUE(ab && ba);
      SCOPED_TRACE("GPU" + std::to_string(a) + " <-> GPU" + std::to_string(b));
      EXPECT_EQ(ab->src, a);
      EXPECT_EQ(ab->dst, b);
      EXPECT_EQ(ab->peer_access, ba->peer_access);
      EXPECT_EQ(ab->type, ba->type);
      EXPECT_EQ(ab->nvlinks, ba->nvlinks);
      EXPECT_EQ(ab->label, ba->label);
      if (!ab->peer_access) {
        EXPECT_EQ(ab->type, LinkType::none);
      }
    }
  }
}

TEST(TopologyGpu, NvlinkCountsAgreeWithPeerAccess) {
  GPUCOMM_REQUIRE_GPUS(2);
  Topology t = detect();
  if (!t.nvml_available) GTEST_SKIP() << "NVML not available: " << t.nvml_note;
  for (const Link& l : t.links) {
    SCOPED_TRACE("GPU" + std::to_string(l.src) + " -> GPU" + std::to_string(l.dst));
    EXPECT_EQ(l.source, "nvml");
    if (l.nvlinks > 0) {
      EXPECT_TRUE(l.peer_access) << "NVLinks without peer access";
      EXPECT_EQ(l.type, LinkType::nvlink);
      EXPECT_EQ(l.label, "NV" + std::to_string(l.nvlinks));
    } else {
      EXPECT_NE(l.type, LinkType::nvlink);
    }
  }
}

TEST(TopologyGpu, ExpectedNvlinkCount) {
  GPUCOMM_REQUIRE_GPUS(2);
  int64_t expect = env::get_int("GPUCOMM_TEST_EXPECT_NVLINKS", -1);
  if (expect < 0) GTEST_SKIP() << "GPUCOMM_TEST_EXPECT_NVLINKS not set";
  Topology t = detect();
  if (!t.nvml_available) GTEST_SKIP() << "NVML not available, NVLink counts unknown: " << t.nvml_note;
  for (const Link& l : t.links) {
    SCOPED_TRACE("GPU" + std::to_string(l.src) + " (" + t.gpus[l.src].name + ") -> GPU" + std::to_string(l.dst) + " (" +
                 t.gpus[l.dst].name + ")");
    EXPECT_EQ(l.nvlinks, expect);
    if (expect > 0) {
      EXPECT_EQ(l.type, LinkType::nvlink);
      EXPECT_EQ(l.label, "NV" + std::to_string(expect));
      EXPECT_TRUE(l.peer_access);
      EXPECT_TRUE(l.native_atomics);
    }
  }
}

}  // namespace
}  // namespace gpucomm::topology
