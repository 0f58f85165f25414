#include "json_writer.hpp"

#include <cmath>
#include <cstdio>

namespace gpucomm::bench {

std::string json_escape(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

void JsonWriter::comma() {
  if (!first_.back()) out_ += ",";
  first_.back() = false;
}
void JsonWriter::key(const char* k) {
  comma();
  if (k) out_ += json_escape(k) + ":";
}
JsonWriter& JsonWriter::begin_object(const char* k) {
  key(k);
  out_ += "{";
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  first_.pop_back();
  out_ += "}";
  return *this;
}
JsonWriter& JsonWriter::begin_array(const char* k) {
  key(k);
  out_ += "[";
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  first_.pop_back();
  out_ += "]";
  return *this;
}
JsonWriter& JsonWriter::field(const char* k, const std::string& v) {
  key(k);
  out_ += json_escape(v);
  return *this;
}
JsonWriter& JsonWriter::field(const char* k, double v) {
  key(k);
  if (!std::isfinite(v)) {
    out_ += "null";
  } else {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    out_ += buf;
  }
  return *this;
}
JsonWriter& JsonWriter::field(const char* k, long long v) {
  key(k);
  out_ += std::to_string(v);
  return *this;
}
JsonWriter& JsonWriter::field(const char* k, bool v) {
  key(k);
  out_ += v ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::null_field(const char* k) {
  key(k);
  out_ += "null";
  return *this;
}
JsonWriter& JsonWriter::value(double v) { return field(nullptr, v); }

}  // namespace gpucomm::bench
