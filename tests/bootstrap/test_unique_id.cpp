#include <gtest/gtest.h>

#include "gpucomm/bootstrap/unique_id.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::bootstrap {

TEST(UniqueId, RoundTrip) {
  UniqueId id = UniqueId::create();
  UniqueId back = UniqueId::parse(id.to_string());
  EXPECT_EQ(back.host, "127.0.0.1");
  EXPECT_EQ(back.port, id.port);
  EXPECT_EQ(back.token, id.token);
  UniqueId other = UniqueId::create();
  EXPECT_NE(other.token, id.token);
  EXPECT_NE(other.port, id.port);
}

TEST(UniqueId, Ipv6) {
  UniqueId id = UniqueId::parse("gpucomm1:[::1]:4000:00112233445566778899aabbccddeeff");
  EXPECT_EQ(id.host, "::1");
  EXPECT_EQ(id.port, 4000);
  EXPECT_EQ(id.to_string(), "gpucomm1:[::1]:4000:00112233445566778899aabbccddeeff");
}

TEST(UniqueId, MalformedIdsAreRejectedByName) {
  const char* bad[] = {"",
                       "garbage",
                       "gpucomm1:127.0.0.1:5000",
                       "gpucomm1:127.0.0.1:5000:abc",
                       "gpucomm1:127.0.0.1:99999:00112233445566778899aabbccddeeff",
                       "gpucomm1:127.0.0.1:0:00112233445566778899aabbccddeeff",
                       "gpucomm1:127.0.0.1:50x0:00112233445566778899aabbccddeeff",
                       "gpucomm1:127.0.0.1:5000:0011223344556677889zaabbccddeeff",
                       "gpucomm1:127.0.0.1:5000:+0112233445566778899aabbccddeeff",
                       "gpucomm2:127.0.0.1:5000:00112233445566778899aabbccddeeff"};
  for (const char* text : bad) {
    try {
      UniqueId::parse(text, "GPUCOMM_UNIQUE_ID");
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("GPUCOMM_UNIQUE_ID"), std::string::npos) << e.what();
    }
  }
}

}  // namespace gpucomm::bootstrap
