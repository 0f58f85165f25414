// The generator and checker of random MPI-safe programs (random_program.hpp).
#include "random_program.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "gpucomm/matching/oracle.hpp"

namespace gpucomm::msgtest {

namespace {

// Sizes across every threshold of the default configuration: LL, inline eager, one slot, chunked
// eager, header-only rendezvous sizes, and (rarely) several rendezvous chunks.
size_t pick_size(std::mt19937_64& rng, const GenOptions& g) {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  if (u < g.big_share) return g.big_bytes + rng() % 1000;
  switch (rng() % 8) {
    case 0:
      return rng() % 8;
    case 1:
      return 8 + rng() % 13;  // LL
    case 2:
      return 21 + rng() % 4;  // inline eager
    case 3:
      return 25 + rng() % 168;  // one slot
    case 4:
      return 193 + rng() % 1856;  // chunked eager
    case 5:
      return 2049 + rng() % 8000;  // rendezvous, one chunk
    default:
      return 8 + rng() % 64;
  }
}

bool fits(const RecvSpec& q, const MsgSpec& m) {
  return q.comm == m.comm && (q.src == msg::kAnySource || q.src == m.src) && (q.tag == msg::kAnyTag || q.tag == m.tag);
}

}  // namespace

Round make_round(std::mt19937_64& rng, int npes, const std::vector<CommSpec>& comms, const GenOptions& g) {
  Round r;
  // Messages.
  for (int pe = 0; pe < npes; ++pe) {
    const int n = static_cast<int>(rng() % static_cast<uint64_t>(g.max_msgs_per_pe + 1));
    std::vector<int> mine;
    for (int c = 0; c < static_cast<int>(comms.size()); ++c)
      if (std::find(comms[c].members.begin(), comms[c].members.end(), pe) != comms[c].members.end()) mine.push_back(c);
    for (int k = 0; k < n && !mine.empty(); ++k) {
      MsgSpec m{};
      m.id = static_cast<int>(r.msgs.size());
      m.comm = mine[rng() % mine.size()];
      const auto& mem = comms[static_cast<size_t>(m.comm)].members;
      m.src = static_cast<int>(std::find(mem.begin(), mem.end(), pe) - mem.begin());
      m.dst = static_cast<int>(rng() % mem.size());
      m.src_pe = pe;
      m.dst_pe = mem[static_cast<size_t>(m.dst)];
      m.tag = static_cast<int>(rng() % static_cast<uint64_t>(g.tags));
      m.bytes = pick_size(rng, g);
      m.heap = (rng() & 1) != 0;
      r.msgs.push_back(m);
    }
  }
  // Receives, per (destination, communicator), with wildcards that keep the program safe.
  std::map<std::pair<int, int>, std::vector<int>> inbox;
  for (const auto& m : r.msgs) inbox[{m.dst_pe, m.comm}].push_back(m.id);
  for (auto& [key, ids] : inbox) {
    const msg::Mode mode = comms[static_cast<size_t>(key.second)].mode;
    const bool any_src_ok = mode == msg::Mode::mpi || mode == msg::Mode::no_unexpected;
    const bool any_tag_ok = mode != msg::Mode::unordered;
    int style = static_cast<int>(rng() % 4);  // 0 exact, 1 ANY_TAG per source, 2 ANY_SOURCE per tag, 3 both
    bool all_long = true;
    for (int id : ids) all_long = all_long && r.msgs[static_cast<size_t>(id)].bytes >= 8;
    if (style == 3 && (!any_src_ok || !any_tag_ok || !all_long)) style = 1;
    if (style == 2 && !any_src_ok) style = 1;
    if (style == 1 && !any_tag_ok) style = 0;
    std::map<int, bool> wild;  // per source (style 1) or per tag (style 2)
    for (int id : ids) {
      const MsgSpec& m = r.msgs[static_cast<size_t>(id)];
      if (style == 1 && !wild.count(m.src)) wild[m.src] = (rng() & 1) != 0;
      if (style == 2 && !wild.count(m.tag)) {
        bool ok = true;  // ANY_SOURCE receives identify their message by its payload: 8 bytes at least
        for (int j : ids) {
          const MsgSpec& o = r.msgs[static_cast<size_t>(j)];
          if (o.tag == m.tag && o.bytes < 8) ok = false;
        }
        wild[m.tag] = ok && (rng() & 1) != 0;
      }
    }
    const size_t first = r.recvs.size();
    for (int id : ids) {
      const MsgSpec& m = r.msgs[static_cast<size_t>(id)];
      RecvSpec q{};
      q.id = static_cast<int>(r.recvs.size());
      q.comm = m.comm;
      q.dst_pe = m.dst_pe;
      q.src = m.src;
      q.tag = m.tag;
      if (style == 3 || (style == 1 && wild[m.src])) q.tag = msg::kAnyTag;
      if (style == 3 || (style == 2 && wild[m.tag])) q.src = msg::kAnySource;
      q.expect = -1;
      r.recvs.push_back(q);
    }
    // Capacity: the largest message the receive may take, and sometimes some slack.
    for (size_t i = first; i < r.recvs.size(); ++i) {
      size_t cap = 0;
      for (int id : ids) {
        if (fits(r.recvs[i], r.msgs[static_cast<size_t>(id)]))
          cap = std::max(cap, r.msgs[static_cast<size_t>(id)].bytes);
      }
      r.recvs[i].cap = cap + ((rng() & 3) == 0 ? rng() % 100 : 0);
    }
  }
  // Program order per PE: sends and receives interleaved at random; receives after the PE's last
  // send may be blocking.
  r.ops.assign(static_cast<size_t>(npes), {});
  r.wait_style.assign(static_cast<size_t>(npes), 0);
  for (const auto& m : r.msgs) r.ops[static_cast<size_t>(m.src_pe)].push_back(Op{Op::isend, m.id});
  for (const auto& q : r.recvs) r.ops[static_cast<size_t>(q.dst_pe)].push_back(Op{Op::irecv, q.id});
  std::map<std::pair<int, int>, int> seq;
  for (int pe = 0; pe < npes; ++pe) {
    auto& ops = r.ops[static_cast<size_t>(pe)];
    std::shuffle(ops.begin(), ops.end(), rng);
    size_t last_send = 0;
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].kind == Op::isend) last_send = i + 1;
    for (size_t i = last_send; i < ops.size(); ++i)
      if ((rng() % 3) == 0) ops[i].kind = Op::recv;
    for (const Op& op : ops) {
      if (op.kind != Op::isend) continue;
      MsgSpec& m = r.msgs[static_cast<size_t>(op.index)];
      m.seq = seq[{m.src_pe, m.dst_pe}]++;
    }
    r.wait_style[static_cast<size_t>(pe)] = static_cast<int>(rng() % 3);
  }
  // The oracle's outcome per destination: every message "arrived" before any receive (arrival
  // order: per-source send order); receives in post order. Without ANY_SOURCE, every arrival
  // order gives this outcome.
  for (int pe = 0; pe < npes; ++pe) {
    matching::Batch b;
    std::vector<const MsgSpec*> in;
    for (const auto& m : r.msgs)
      if (m.dst_pe == pe) in.push_back(&m);
    std::sort(in.begin(), in.end(), [](const MsgSpec* a, const MsgSpec* c) {
      return a->seq != c->seq ? a->seq < c->seq : a->src_pe < c->src_pe;
    });
    for (const MsgSpec* m : in)
      b.msgs.push_back(matching::Envelope{m->comm, m->src, m->tag, static_cast<uint32_t>(m->id)});
    for (const Op& op : r.ops[static_cast<size_t>(pe)]) {
      if (op.kind == Op::isend) continue;
      const RecvSpec& q = r.recvs[static_cast<size_t>(op.index)];
      b.recvs.push_back(matching::Envelope{q.comm, q.src, q.tag, static_cast<uint32_t>(q.id)});
    }
    const matching::Outcome out = matching::match_reference(b);
    if (!out.umq.empty() || !out.prq.empty())
      throw std::logic_error("random program generator: an unmatched message or receive (unsafe program)");
    for (const auto& mt : out.matches) {
      RecvSpec& q = r.recvs[mt.recv];
      if (q.src != msg::kAnySource) q.expect = static_cast<int>(mt.msg);
    }
  }
  return r;
}

std::vector<std::string> check_round(const Round& r, int me, const std::vector<int>& got,
                                     const std::vector<msg::Status>& status) {
  std::vector<std::string> bad;
  auto say = [&](const RecvSpec& q, const std::string& what) {
    bad.push_back("receive " + std::to_string(q.id) + " (comm " + std::to_string(q.comm) + ", source " +
                  std::to_string(q.src) + ", tag " + std::to_string(q.tag) + ", cap " + std::to_string(q.cap) +
                  "): " + what);
  };
  std::vector<int> taken(r.msgs.size(), 0);
  std::vector<int> post(r.recvs.size(), -1);  // post order of my receives
  int order = 0;
  for (const Op& op : r.ops[static_cast<size_t>(me)])
    if (op.kind != Op::isend) post[static_cast<size_t>(op.index)] = order++;
  for (const auto& q : r.recvs) {
    if (q.dst_pe != me) continue;
    const int id = got[static_cast<size_t>(q.id)];
    const msg::Status& st = status[static_cast<size_t>(q.id)];
    if (id < 0 || id >= static_cast<int>(r.msgs.size())) {
      say(q, "took no identifiable message (id " + std::to_string(id) + ")");
      continue;
    }
    const MsgSpec& m = r.msgs[static_cast<size_t>(id)];
    if (m.dst_pe != me || !fits(q, m)) say(q, "took message " + std::to_string(id) + ", which it does not fit");
    if (q.expect >= 0 && id != q.expect)
      say(q, "took message " + std::to_string(id) + ", the oracle gives message " + std::to_string(q.expect));
    if (st.source != m.src || st.tag != m.tag || st.bytes != m.bytes || st.error != 0) {
      say(q, "status source " + std::to_string(st.source) + " tag " + std::to_string(st.tag) + " bytes " +
                 std::to_string(st.bytes) + " error " + std::to_string(st.error) + " for message " +
                 std::to_string(id) + " (source " + std::to_string(m.src) + " tag " + std::to_string(m.tag) +
                 " bytes " + std::to_string(m.bytes) + ")");
    }
    if (++taken[static_cast<size_t>(id)] > 1) say(q, "took message " + std::to_string(id) + " a second time");
  }
  for (const auto& m : r.msgs) {
    if (m.dst_pe == me && taken[static_cast<size_t>(m.id)] != 1) {
      bad.push_back("message " + std::to_string(m.id) + " was received " +
                    std::to_string(taken[static_cast<size_t>(m.id)]) + " times");
    }
  }
  // Non-overtaking: receives a < b (post order) took messages of one source in the opposite send
  // order while the earlier message also fit receive a.
  for (const auto& qa : r.recvs) {
    if (qa.dst_pe != me) continue;
    const int ja = got[static_cast<size_t>(qa.id)];
    if (ja < 0) continue;
    for (const auto& qb : r.recvs) {
      if (qb.dst_pe != me || post[static_cast<size_t>(qb.id)] <= post[static_cast<size_t>(qa.id)]) continue;
      const int ib = got[static_cast<size_t>(qb.id)];
      if (ib < 0) continue;
      const MsgSpec& mj = r.msgs[static_cast<size_t>(ja)];
      const MsgSpec& mi = r.msgs[static_cast<size_t>(ib)];
      if (mi.src_pe == mj.src_pe && mi.comm == mj.comm && mi.seq < mj.seq && fits(qa, mi)) {
        say(qa, "took message " + std::to_string(ja) + " although the earlier message " + std::to_string(ib) +
                    " of the same source fits it (it went to the later receive " + std::to_string(qb.id) +
                    "): overtaking");
      }
    }
  }
  return bad;
}

}  // namespace gpucomm::msgtest
