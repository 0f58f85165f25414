#include "gpucomm/core/json.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gpucomm/core/error.hpp"

namespace gpucomm {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

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
