// NVLink counting against a stand-in NVML library: it is loaded first, by path, under the
// soname libnvidia-ml.so.1, so gpucomm's dlopen of that name finds it.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "nvml_links.hpp"

#ifndef GPUCOMM_FAKE_NVML
#error "GPUCOMM_FAKE_NVML must name the stand-in library"
#endif

namespace gpucomm::topology::detail {
namespace {

TEST(FakeNvml, CountsDirectAndSwitchedLinks) {
  ASSERT_NE(::dlopen(GPUCOMM_FAKE_NVML, RTLD_NOW | RTLD_GLOBAL), nullptr) << ::dlerror();
  NvlinkTable t = query_nvlinks({"0000:1b:00.0", "0000:43:00.0", "0000:9a:00.0"});
  ASSERT_TRUE(t.available) << t.note;
  ASSERT_EQ(t.links.size(), 3u);
  EXPECT_EQ(t.direct(0, 1), 18);
  EXPECT_EQ(t.direct(1, 0), 18);
  EXPECT_EQ(t.direct(0, 2), 0);
  EXPECT_EQ(t.direct(2, 0), 0);
  // GPU 2's links to the hidden GPU count for nobody; its switch links for switched paths.
  EXPECT_EQ(t.switch_links, (std::vector<int>{0, 0, 4}));
  EXPECT_EQ(t.via_switch(0, 2), 0);
  // The GPU the caller does not list is still found by bus id, never mistaken for a peer.
  NvlinkTable one = query_nvlinks({"0000:9a:00.0"});
  ASSERT_TRUE(one.available);
  EXPECT_EQ(one.links, (std::vector<std::vector<int>>{{0}}));
  EXPECT_EQ(one.switch_links, (std::vector<int>{4}));
}

}  // namespace
}  // namespace gpucomm::topology::detail
