#include "gpucomm/matching/snapshot.hpp"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "gpucomm/core/error.hpp"
#include "gpucomm/trace/queue_snapshot.hpp"

namespace gpucomm::matching {
namespace {
// A small JSON reader: enough for the snapshot format (objects, arrays, numbers, strings,
// true/false/null), with positions in its error messages.
struct Value {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  double num = 0;
  std::string str;
  std::vector<Value> items;
  std::map<std::string, Value> fields;
};

class Reader {
 public:
  Reader(const std::string& text, const std::string& origin) : s_(text), origin_(origin) {}
  Value document() {
    Value v = value();
    skip();
    if (i_ != s_.size()) fail("unexpected text after the document");
    return v;
  }
  [[noreturn]] void fail(const std::string& why) const {
    raise_arg("read_snapshots", origin_, why + " at offset " + std::to_string(i_));
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  Value value() {
    if (++depth_ > 64) fail("nesting too deep");
    skip();
    if (i_ >= s_.size()) fail("unexpected end");
    Value v;
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.kind = Value::object;
      if (!eat('}')) {
        do {
          skip();
          std::string k = string_literal();
          expect(':');
          v.fields[k] = value();
        } while (eat(','));
        expect('}');
      }
    } else if (c == '[') {
      ++i_;
      v.kind = Value::array;
      if (!eat(']')) {
        do v.items.push_back(value());
        while (eat(','));
        expect(']');
      }
    } else if (c == '"') {
      v.kind = Value::string;
      v.str = string_literal();
    } else if (s_.compare(i_, 4, "true") == 0 || s_.compare(i_, 5, "false") == 0) {
      v.kind = Value::boolean;
      v.num = s_[i_] == 't';
      i_ += s_[i_] == 't' ? 4 : 5;
    } else if (s_.compare(i_, 4, "null") == 0) {
      i_ += 4;
    } else {
      const char* begin = s_.c_str() + i_;
      char* end = nullptr;
      v.num = std::strtod(begin, &end);
      if (end == begin) fail("expected a value");
      v.kind = Value::number;
      i_ += static_cast<size_t>(end - begin);
    }
    --depth_;
    return v;
  }
  std::string string_literal() {
    if (i_ >= s_.size() || s_[i_] != '"') fail("expected a string");
    std::string out;
    for (++i_; i_ < s_.size() && s_[i_] != '"'; ++i_) {
      if (s_[i_] == '\\') {
        if (++i_ >= s_.size()) break;
        char e = s_[i_];
        if (e == 'u') {  // keep \uXXXX as '?': names only
          i_ += 4;
          out += '?';
        } else {
          out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        }
      } else {
        out += s_[i_];
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }

  const std::string& s_;
  std::string origin_;
  size_t i_ = 0;
  int depth_ = 0;
};

std::vector<Envelope> queue(const Value& v, bool receives, const std::string& where, const Reader& r) {
  std::vector<Envelope> out;
  if (v.kind != Value::array) r.fail(where + " is not an array");
  for (size_t i = 0; i < v.items.size(); ++i) {
    const Value& e = v.items[i];
    std::string at = where + "[" + std::to_string(i) + "]";
    if (e.kind != Value::array || e.items.size() != 3) r.fail(at + " is not [comm, src, tag]");
    int32_t f[3];
    for (int k = 0; k < 3; ++k) {
      const Value& x = e.items[static_cast<size_t>(k)];
      if (x.kind != Value::number || x.num != static_cast<double>(static_cast<int32_t>(x.num)))
        r.fail(at + " holds a value that is not a 32-bit integer");
      f[k] = static_cast<int32_t>(x.num);
    }
    if (f[0] < 0) r.fail(at + " has a negative communicator");
    if ((f[1] < 0 && !(receives && f[1] == kAnySource)) || (f[2] < 0 && !(receives && f[2] == kAnyTag)))
      r.fail(at + (receives ? " has a negative source or tag other than -1" : " has a negative source or tag"));
    out.push_back({f[0], f[1], f[2], static_cast<uint32_t>(i)});
  }
  return out;
}
}  // namespace

std::vector<Snapshot> parse_snapshots(const std::string& text, const std::string& origin) {
  Reader r(text, origin);
  Value doc = r.document();
  if (doc.kind != Value::object || !doc.fields.count("snapshots") || doc.fields["snapshots"].kind != Value::array)
    r.fail("the document is not an object with a \"snapshots\" array");
  std::vector<Snapshot> out;
  const auto& list = doc.fields["snapshots"].items;
  for (size_t i = 0; i < list.size(); ++i) {
    const Value& s = list[i];
    std::string at = "snapshots[" + std::to_string(i) + "]";
    if (s.kind != Value::object) r.fail(at + " is not an object");
    Snapshot snap;
    if (auto it = s.fields.find("app"); it != s.fields.end()) {
      if (it->second.kind == Value::string) {
        snap.app = it->second.str;
      } else if (it->second.kind == Value::number) {
        snap.app = std::to_string(static_cast<long long>(it->second.num));
      }
    }
    if (auto it = s.fields.find("rank"); it != s.fields.end() && it->second.kind == Value::number)
      snap.rank = static_cast<int64_t>(it->second.num);
    static const Value empty{Value::array, 0, {}, {}, {}};
    auto u = s.fields.find("umq");
    auto p = s.fields.find("prq");
    snap.umq = queue(u == s.fields.end() ? empty : u->second, false, at + ".umq", r);
    snap.prq = queue(p == s.fields.end() ? empty : p->second, true, at + ".prq", r);
    out.push_back(std::move(snap));
  }
  return out;
}

namespace {
// The trace toolkit's binary snapshot files (gpucomm trace analyze --export-queues).
std::vector<Snapshot> from_trace_snapshots(const std::string& path) {
  std::string app = path.substr(path.find_last_of('/') + 1);
  app = app.substr(0, app.find('.'));
  std::vector<Snapshot> out;
  for (const auto& t : trace::read_queue_snapshots(path)) {
    Snapshot s;
    s.app = app;
    s.rank = t.rank;
    uint32_t h = 0;
    for (const auto& e : t.umq) s.umq.push_back({e.comm, e.source, e.tag, h++});
    h = 0;
    for (const auto& e : t.prq) s.prq.push_back({e.comm, e.source, e.tag, h++});
    out.push_back(std::move(s));
  }
  return out;
}
}  // namespace

std::vector<Snapshot> read_snapshots(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) raise_arg("read_snapshots", path, "cannot open the file");
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  if (text.compare(0, 8, "GCQSNAP1") == 0) return from_trace_snapshots(path);
  return parse_snapshots(text, path);
}

Batch drain_umq(const Snapshot& s) {
  Batch b;
  b.umq = s.umq;
  uint32_t h = 0;
  for (const auto& m : s.umq) b.recvs.push_back({m.comm, m.src, m.tag, h++});
  return b;
}

Batch drain_prq(const Snapshot& s) {
  Batch b;
  b.prq = s.prq;
  uint32_t h = 0;
  for (const auto& r : s.prq)
    b.msgs.push_back({r.comm, r.src == kAnySource ? 0 : r.src, r.tag == kAnyTag ? 0 : r.tag, h++});
  return b;
}

}  // namespace gpucomm::matching
