#pragma once
// Internal: a small streaming JSON writer (objects, arrays, strings, numbers; NaN/inf -> null).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace gpucomm::trace::detail {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& os) : os_(os) {}
  JsonWriter& begin_object() { open('{'); return *this; }
  JsonWriter& end_object() { close('}'); return *this; }
  JsonWriter& begin_array() { open('['); return *this; }
  JsonWriter& end_array() { close(']'); return *this; }
  JsonWriter& key(std::string_view k) {
    comma();
    string(k);
    os_ << ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) { comma(); string(s); return *this; }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) { comma(); os_ << (b ? "true" : "false"); return *this; }
  JsonWriter& value(double d) {
    comma();
    if (!std::isfinite(d)) {
      os_ << "null";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.12g", d);
      os_ << buf;
    }
    return *this;
  }
  template <typename T>
    requires std::is_integral_v<T>
  JsonWriter& value(T v) {
    comma();
    os_ << +v;
    return *this;
  }
  JsonWriter& null() { comma(); os_ << "null"; return *this; }
  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

 private:
  void open(char c) {
    comma();
    os_ << c;
    first_.push_back(true);
  }
  void close(char c) {
    first_.pop_back();
    os_ << c;
  }
  void comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) os_ << ',';
      first_.back() = false;
    }
  }
  void string(std::string_view s) {
    os_ << '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': os_ << "\\\""; break;
        case '\\': os_ << "\\\\"; break;
        case '\n': os_ << "\\n"; break;
        case '\r': os_ << "\\r"; break;
        case '\t': os_ << "\\t"; break;
        default:
          if (c < 0x20 || c >= 0x7f) {  // bytes outside printable ASCII as code points
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            os_ << buf;
          } else {
            os_ << c;
          }
      }
    }
    os_ << '"';
  }
  std::ostream& os_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace gpucomm::trace::detail
