#pragma once
// The one JSON writer of gpucomm (reports, benchmark results, topology): streaming, compact
// output, commas placed automatically, strings escaped per RFC 8259 (invalid UTF-8 bytes become
// U+FFFD so that the output is always valid JSON), non-finite numbers written as null. Misuse
// (a value without a key inside an object, unbalanced brackets) raises Errc::internal.
#include <concepts>
#include <string>
#include <string_view>
#include <vector>

namespace gpucomm {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // Inside an object, every value is preceded by key().
  JsonWriter& key(std::string_view k);
  JsonWriter& begin_object(std::string_view k) { return key(k).begin_object(); }
  JsonWriter& begin_array(std::string_view k) { return key(k).begin_array(); }

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(double d);  // shortest text that reads back exactly; NaN and infinities: null
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  JsonWriter& value(T v) {
    return raw(std::to_string(v));
  }
  JsonWriter& null();
  // key(k).value(v) and key(k).null().
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    return key(k).value(v);
  }
  JsonWriter& null_field(std::string_view k) { return key(k).null(); }

  // The text written so far; complete once every object and array is closed.
  const std::string& str() const { return out_; }

  // `s` as a quoted, escaped JSON string.
  static std::string quote(std::string_view s);

 private:
  JsonWriter& raw(std::string_view text);
  void before_value();
  struct Frame {
    bool object;       // an object (values need a key) or an array
    bool has_element;  // a comma goes before the next element
  };
  void open(bool object, char bracket);
  void close(bool object, char bracket);

  std::string out_;
  std::vector<Frame> open_;  // the objects and arrays not yet closed, innermost last
  bool after_key_ = false;
};

}  // namespace gpucomm
