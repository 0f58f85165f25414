// printable(): file data quoted in messages is always valid text.
#include <gtest/gtest.h>

#include <string>

#include "gpucomm/core/format.hpp"

namespace gpucomm {
namespace {

TEST(Printable, KeepsTextAndEscapesOtherBytes) {
  EXPECT_EQ(printable("MPI_Send entering"), "MPI_Send entering");
  EXPECT_EQ(printable("trac\xc3\xa9"), "trac\xc3\xa9");  // valid UTF-8 stays
  EXPECT_EQ(printable(std::string("a\xff\xfe\x00z", 5)), "a\\xff\\xfe\\x00z");
  EXPECT_EQ(printable("tab\there\x7f"), "tab\\x09here\\x7f");
  EXPECT_EQ(printable("\xe2\x82"), "\\xe2\\x82");  // a cut-off sequence
}

TEST(Printable, CutsLongInput) {
  std::string s(300, 'x');
  EXPECT_EQ(printable(s, 10), "xxxxxxxxxx...");
  EXPECT_EQ(printable(s).size(), 123u);  // 120 bytes and "..."
}

TEST(Utf8SequenceLength, AcceptsValidAndRefusesInvalidForms) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length("\xc3\xa9", 0), 2u);
  EXPECT_EQ(utf8_sequence_length("\xe2\x82\xac", 0), 3u);
  EXPECT_EQ(utf8_sequence_length("\xf0\x9f\x98\x80", 0), 4u);
  EXPECT_EQ(utf8_sequence_length("\xc0\x80", 0), 0u);      // overlong
  EXPECT_EQ(utf8_sequence_length("\xed\xa0\x80", 0), 0u);  // surrogate
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);          // stray continuation byte
}

}  // namespace
}  // namespace gpucomm
