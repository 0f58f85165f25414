#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/json.hpp"
#include "json_check.hpp"

namespace gpucomm {
namespace {

using gpucomm::testing::JsonParser;
using gpucomm::testing::JsonValue;
using gpucomm::testing::parse_json;

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonWriter::quote("plain"), "\"plain\"");
  EXPECT_EQ(JsonWriter::quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonWriter::quote("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(JsonWriter::quote(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\x7f\"");
  EXPECT_EQ(JsonWriter::quote(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(JsonWriter::quote("/"), "\"/\"");
}

TEST(JsonWriter, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(JsonWriter::quote("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
  EXPECT_EQ(JsonWriter::quote("a\xff"
                              "b"),
            "\"a\\ufffdb\"");
  EXPECT_EQ(JsonWriter::quote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");             // overlong '/'
  EXPECT_EQ(JsonWriter::quote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // a UTF-16 surrogate
  EXPECT_EQ(JsonWriter::quote("\xe2\x82"), "\"\\ufffd\\ufffd\"");             // truncated sequence
}

TEST(JsonWriter, PlacesCommasAndNestsContainers) {
  JsonWriter w;
  w.begin_object();
  w.key("a").value(1);
  w.key("b").begin_array().value(true).value(false).null().value("x").end_array();
  w.key("c").begin_object().end_object();
  w.key("d").begin_array().begin_array().end_array().begin_object().key("e").value(-2).end_object().end_array();
  w.end_object();
  EXPECT_EQ(w.str(), R"({"a":1,"b":[true,false,null,"x"],"c":{},"d":[[],{"e":-2}]})");
}

TEST(JsonWriter, WritesIntegersOfEveryWidth) {
  JsonWriter w;
  w.begin_array()
      .value(std::numeric_limits<int64_t>::min())
      .value(std::numeric_limits<uint64_t>::max())
      .value(static_cast<unsigned char>(7))
      .value(0)
      .end_array();
  EXPECT_EQ(w.str(), "[-9223372036854775808,18446744073709551615,7,0]");
}

TEST(JsonWriter, RejectsMalformedSequences) {
  {
    JsonWriter w;
    w.begin_object();
    EXPECT_THROW(w.value(1), Error);  // no key
  }
  {
    JsonWriter w;
    w.begin_object();
    EXPECT_THROW(w.end_array(), Error);
  }
  {
    JsonWriter w;
    w.begin_array();
    EXPECT_THROW(w.key("k"), Error);
  }
  {
    JsonWriter w;
    w.value(1);
    EXPECT_THROW(w.value(2), Error);  // a second top-level value
  }
}

TEST(JsonWriter, OutputParsesBackToTheSameStrings) {
  const std::string tricky = std::string("quote \" back \\ nl \n tab \t nul ") + '\0' + " bell \a \xc3\xa9 \xff";
  JsonWriter w;
  w.begin_object().key(tricky).value(tricky).key("n").value(42).end_object();
  JsonValue v;
  ASSERT_TRUE(parse_json(w.str(), &v));
  ASSERT_TRUE(v.has(tricky.substr(0, tricky.size() - 1) + "\xef\xbf\xbd"));
  const JsonValue& s = v.at(tricky.substr(0, tricky.size() - 1) + "\xef\xbf\xbd");
  EXPECT_EQ(s.kind, JsonValue::string);
  EXPECT_EQ(s.text, tricky.substr(0, tricky.size() - 1) + "\xef\xbf\xbd");  // 0xff became U+FFFD
  EXPECT_EQ(v.at("n").text, "42");
}

TEST(JsonCheck, RejectsInvalidText) {
  for (const char* bad : {"{", "[1,]", "{\"a\" 1}", "\"raw\nnewline\"", "01", "{\"a\":1,\"a\":2}", "tru", "[1] x"}) {
    JsonValue v;
    EXPECT_FALSE(gpucomm::testing::JsonParser(bad).parse(&v)) << bad;
  }
}

TEST(JsonWriter, DoublesReadBackExactlyAndNonFiniteIsNull) {
  JsonWriter w;
  w.begin_array().value(0.1).value(1.0 / 3.0).value(1e300).value(-0.0).value(std::numeric_limits<double>::quiet_NaN());
  w.value(std::numeric_limits<double>::infinity()).end_array();
  JsonValue v;
  ASSERT_TRUE(JsonParser(w.str()).parse(&v)) << w.str();
  ASSERT_EQ(v.items.size(), 6u);
  EXPECT_EQ(std::strtod(v.items[0].text.c_str(), nullptr), 0.1);
  EXPECT_EQ(std::strtod(v.items[1].text.c_str(), nullptr), 1.0 / 3.0);
  EXPECT_EQ(std::strtod(v.items[2].text.c_str(), nullptr), 1e300);
  EXPECT_EQ(v.items[4].kind, JsonValue::null);
  EXPECT_EQ(v.items[5].kind, JsonValue::null);
  EXPECT_EQ(w.str().substr(0, 5), "[0.1,");
}

TEST(JsonWriter, FieldAndKeyedContainers) {
  JsonWriter w;
  w.begin_object().field("a", 1).field("b", "x").null_field("c").begin_array("d").value(true).end_array().end_object();
  EXPECT_EQ(w.str(), R"({"a":1,"b":"x","c":null,"d":[true]})");
}

}  // namespace
}  // namespace gpucomm
