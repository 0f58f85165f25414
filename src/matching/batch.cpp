#include "gpucomm/matching/batch.hpp"

#include <sstream>

namespace gpucomm::matching {
namespace {
void put(std::ostringstream& os, const Envelope& e) {
  os << "(" << e.comm << "," << e.src << "," << e.tag << " #" << e.handle << ")";
}
void put_queue(std::ostringstream& os, const char* name, const std::vector<Envelope>& q, size_t limit) {
  os << name << "[" << q.size() << "]:";
  for (size_t i = 0; i < q.size() && i < limit; ++i) {
    os << " ";
    put(os, q[i]);
  }
  if (q.size() > limit) os << " ...";
  os << "\n";
}
bool same(const Envelope& a, const Envelope& b) {
  return same_key(a, b) && a.handle == b.handle;
}

void diff_queue(std::ostringstream& os, const char* name, const std::vector<Envelope>& e,
                const std::vector<Envelope>& a) {
  if (os.tellp() > 0) return;
  size_t n = e.size() < a.size() ? e.size() : a.size();
  for (size_t i = 0; i < n; ++i) {
    if (!same(e[i], a[i])) {
      os << name << " differs at " << i << ": expected ";
      put(os, e[i]);
      os << ", got ";
      put(os, a[i]);
      return;
    }
  }
  if (e.size() != a.size()) os << name << " length: expected " << e.size() << ", got " << a.size();
}
}  // namespace

std::string describe_difference(const Outcome& expected, const Outcome& actual) {
  std::ostringstream os;
  size_t n = expected.matches.size() < actual.matches.size() ? expected.matches.size() : actual.matches.size();
  for (size_t i = 0; i < n; ++i) {
    const Match& e = expected.matches[i];
    const Match& a = actual.matches[i];
    if (e.msg != a.msg || e.recv != a.recv) {
      os << "match " << i << ": expected msg #" << e.msg << " with recv #" << e.recv << ", got msg #" << a.msg
         << " with recv #" << a.recv;
      return os.str();
    }
  }
  if (expected.matches.size() != actual.matches.size()) {
    os << "number of matches: expected " << expected.matches.size() << ", got " << actual.matches.size();
    return os.str();
  }
  diff_queue(os, "UMQ", expected.umq, actual.umq);
  diff_queue(os, "PRQ", expected.prq, actual.prq);
  return os.str();
}

std::string describe(const Batch& b, size_t limit) {
  std::ostringstream os;
  put_queue(os, "umq", b.umq, limit);
  put_queue(os, "prq", b.prq, limit);
  put_queue(os, "msgs", b.msgs, limit);
  put_queue(os, "recvs", b.recvs, limit);
  return os.str();
}

}  // namespace gpucomm::matching
