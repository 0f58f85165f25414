#pragma once
// A tiny strict JSON parser for tests: parses text into a tree, or fails with the offset.
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gpucomm::testing {

struct JsonValue {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  bool b = false;
  std::string text;                          // string contents (unescaped) or number text
  std::vector<JsonValue> items;              // array elements
  std::map<std::string, JsonValue> members;  // object members

  bool has(const std::string& k) const { return kind == object && members.count(k) != 0; }
  const JsonValue& at(const std::string& k) const { return members.at(k); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  // True when the whole text is one JSON value (surrounding whitespace allowed).
  bool parse(JsonValue* out) {
    pos_ = 0;
    skip_ws();
    if (!value(out)) return false;
    skip_ws();
    return pos_ == s_.size();
  }
  size_t error_offset() const { return pos_; }

 private:
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  bool literal(const char* word) {
    std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool hex4(unsigned* cp) {
    if (pos_ + 4 > s_.size()) return false;
    *cp = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      unsigned d;
      if (c >= '0' && c <= '9') {
        d = static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<unsigned>(c - 'A' + 10);
      } else {
        return false;
      }
      *cp = *cp * 16 + d;
    }
    return true;
  }
  bool string(std::string* out) {
    if (pos_ >= s_.size() || s_[pos_] != '"') return false;
    ++pos_;
    while (pos_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;  // raw control characters are not allowed
      if (c != '\\') {
        *out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= s_.size()) return false;
      char e = s_[pos_++];
      switch (e) {
        case '"':
          *out += '"';
          break;
        case '\\':
          *out += '\\';
          break;
        case '/':
          *out += '/';
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          unsigned cp;
          if (!hex4(&cp)) return false;
          append_utf8(*out, cp);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  bool number(std::string* out) {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      size_t b = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ > b;
    };
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (!digits()) {
      return false;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digits()) return false;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) return false;
    }
    *out = s_.substr(start, pos_ - start);
    return true;
  }
  bool value(JsonValue* v) {
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') {
      v->kind = JsonValue::object;
      ++pos_;
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      for (;;) {
        skip_ws();
        std::string k;
        if (!string(&k)) return false;
        skip_ws();
        if (pos_ >= s_.size()) return false;
        const char colon = s_[pos_++];
        if (colon != ':') return false;
        skip_ws();
        JsonValue child;
        if (!value(&child)) return false;
        if (!v->members.emplace(k, std::move(child)).second) return false;  // duplicate key
        skip_ws();
        if (pos_ >= s_.size()) return false;
        if (s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (s_[pos_] == '}') {
          ++pos_;
          return true;
        }
        return false;
      }
    }
    if (c == '[') {
      v->kind = JsonValue::array;
      ++pos_;
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      for (;;) {
        skip_ws();
        JsonValue child;
        if (!value(&child)) return false;
        v->items.push_back(std::move(child));
        skip_ws();
        if (pos_ >= s_.size()) return false;
        if (s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (s_[pos_] == ']') {
          ++pos_;
          return true;
        }
        return false;
      }
    }
    if (c == '"') {
      v->kind = JsonValue::string;
      return string(&v->text);
    }
    if (literal("true")) {
      v->kind = JsonValue::boolean;
      v->b = true;
      return true;
    }
    if (literal("false")) {
      v->kind = JsonValue::boolean;
      return true;
    }
    if (literal("null")) {
      v->kind = JsonValue::null;
      return true;
    }
    v->kind = JsonValue::number;
    return number(&v->text);
  }

  const std::string& s_;
  size_t pos_ = 0;
};

// Parses `text` or records a test failure with the offset; returns whether it parsed.
inline bool parse_json(const std::string& text, JsonValue* out) {
  JsonParser p(text);
  if (p.parse(out)) return true;
  ADD_FAILURE() << "invalid JSON at offset " << p.error_offset() << ": " << text;
  return false;
}

}  // namespace gpucomm::testing
