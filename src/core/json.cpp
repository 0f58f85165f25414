#include "gpucomm/core/json.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gpucomm/core/error.hpp"
#include "gpucomm/core/format.hpp"

namespace gpucomm {

std::string JsonWriter::quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
      continue;
    }
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\\ufffd";  // replacement character for a byte that is not UTF-8
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  out += '"';
  return out;
}

void JsonWriter::before_value() {
  if (open_.empty()) {
    if (!out_.empty()) raise(Errc::internal, "JsonWriter", "a second top-level value");
    return;
  }
  if (open_.back().object) {
    if (!after_key_) raise(Errc::internal, "JsonWriter", "a value inside an object without a key");
    after_key_ = false;
    return;
  }
  if (open_.back().has_element) out_ += ',';
  open_.back().has_element = true;
}

JsonWriter& JsonWriter::raw(std::string_view text) {
  before_value();
  out_ += text;
  return *this;
}

void JsonWriter::open(bool object, char bracket) {
  before_value();
  out_ += bracket;
  open_.push_back({object, false});
}

void JsonWriter::close(bool object, char bracket) {
  if (open_.empty() || open_.back().object != object || after_key_)
    raise(Errc::internal, "JsonWriter", std::string("unbalanced '") + bracket + "'");
  open_.pop_back();
  out_ += bracket;
}

JsonWriter& JsonWriter::begin_object() {
  open(true, '{');
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  close(true, '}');
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  open(false, '[');
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  close(false, ']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  if (open_.empty() || !open_.back().object || after_key_)
    raise(Errc::internal, "JsonWriter", "a key outside an object or after another key");
  if (open_.back().has_element) out_ += ',';
  open_.back().has_element = true;
  out_ += quote(k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  return raw(quote(s));
}
JsonWriter& JsonWriter::value(bool b) {
  return raw(b ? "true" : "false");
}
JsonWriter& JsonWriter::null() {
  return raw("null");
}

JsonWriter& JsonWriter::value(double d) {
  if (!std::isfinite(d)) return null();
  // The shortest of %.15g, %.16g, %.17g that reads back as the same double.
  char buf[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return raw(buf);
}

}  // namespace gpucomm
