#include <gtest/gtest.h>

#include "gpucomm/core/error.hpp"

namespace gpucomm {

TEST(Error, MessageCarriesCallRankAndCode) {
  set_process_rank(3, 8);
  try {
    raise_arg("put", "pe", "9 is outside the team of 8 PEs");
    FAIL() << "raise_arg returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_EQ(e.rank(), 3);
    std::string what = e.what();
    EXPECT_NE(what.find("rank 3"), std::string::npos) << what;
    EXPECT_NE(what.find("put"), std::string::npos) << what;
    EXPECT_NE(what.find("argument 'pe'"), std::string::npos) << what;
  }
  set_process_rank(-1, 0);
}

TEST(Error, ErrnoIsExplained) {
  try {
    raise_errno("connect", ECONNREFUSED, "127.0.0.1:1");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::system);
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
  }
}

}  // namespace gpucomm
