// The differential test across processes: random MPI-safe programs (random_program.hpp) run on the
// PEs with every byte, status and match checked against the matching oracle and MPI's rules.
// Many programs (rounds) per launch; every PE generates the same program from a shared seed.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "msg_pe_common.hpp"
#include "random_program.hpp"

namespace gpucomm::msgtest {

namespace {

msg::MessengerOptions messenger_options(const Options& o) {
  msg::MessengerOptions mo;
  mo.slots = static_cast<uint32_t>(o.get("--slots", 0));
  mo.slot_bytes = static_cast<uint32_t>(o.get("--slot-bytes", 0));
  mo.pool_slots = static_cast<int32_t>(o.get("--pool", -1));
  mo.eager_max = static_cast<uint32_t>(o.get("--eager", 0));
  mo.chunk_bytes = static_cast<uint64_t>(o.get("--chunk", 0));
  mo.staging_pairs = static_cast<uint32_t>(o.get("--staging", 0));
  mo.queue = static_cast<uint32_t>(o.get("--queue", 0));
  return mo;
}

// The payload of message `id`: its id in the first 8 bytes (when it has them), the pattern after.
void make_payload(uint8_t* b, size_t n, int id) {
  fill(b, n, msg_key(id, 0, 0, 0));
  const auto v = static_cast<uint64_t>(id);
  if (n >= 8) std::memcpy(b, &v, 8);
}
long long payload_bad(const uint8_t* b, size_t n, int id) {
  const uint64_t key = msg_key(id, 0, 0, 0);
  size_t i = 0;
  if (n >= 8) {
    uint64_t v = 0;
    std::memcpy(&v, b, 8);
    if (v != static_cast<uint64_t>(id)) return 0;
    i = 8;
  }
  for (; i < n; ++i)
    if (b[i] != pattern(key, i)) return static_cast<long long>(i);
  return -1;
}

constexpr size_t kGuard = 16;
constexpr uint8_t kGuardByte = 0xab;

}  // namespace

void scenario_random(Runtime& rt, const Options& o) {
  const int me = rt.rank(), n = rt.size();
  msg::Messenger m(rt, messenger_options(o));
  // Communicators: the world (mpi), each half of the world by parity (mpi), the world asserting no
  // ANY_SOURCE, and the world unordered (allow_overtaking, no wildcards).
  std::vector<CommSpec> specs;
  std::vector<msg::Comm> comms;
  std::vector<int> all(static_cast<size_t>(n)), halves[2];
  for (int r = 0; r < n; ++r) {
    all[static_cast<size_t>(r)] = r;
    halves[r % 2].push_back(r);
  }
  specs.push_back({msg::Mode::mpi, all});
  comms.push_back(m.world());
  const Team half = rt.split(rt.world(), me % 2, me);
  msg::Comm half_comm = m.create(half);
  for (int k = 0; k < 2; ++k) {
    if (halves[k].empty()) continue;
    specs.push_back({msg::Mode::mpi, halves[k]});
    comms.push_back(me % 2 == k ? half_comm : msg::Comm());
  }
  msg::CommOptions nas;
  nas.mode = msg::Mode::no_any_source;
  specs.push_back({nas.mode, all});
  comms.push_back(m.world(nas));
  msg::CommOptions uo;
  uo.mode = msg::Mode::unordered;
  uo.allow_overtaking = true;
  specs.push_back({uo.mode, all});
  comms.push_back(m.world(uo));

  GenOptions g;
  g.max_msgs_per_pe = static_cast<int>(o.get("--msgs", 6));
  g.big_share = static_cast<double>(o.get("--big-permille", 20)) / 1000.0;
  g.big_bytes = static_cast<size_t>(o.get("--big-bytes", 600000));
  const int rounds = static_cast<int>(o.get("--rounds", 40));
  const uint64_t seed = shared_seed(rt);
  std::mt19937_64 rng(seed);
  std::mt19937_64 jitter(seed ^ (0x51ed27ull * static_cast<uint64_t>(me + 1)));
  // Heap buffers of one round come from an arena (allocated once: allocation is collective).
  const size_t arena_bytes = size_t(16) << 20;
  auto* arena = static_cast<uint8_t*>(rt.malloc(arena_bytes));
  int reported = 0;
  for (int round = 0; round < rounds; ++round) {
    const Round r = make_round(rng, n, specs, g);
    const auto& ops = r.ops[static_cast<size_t>(me)];
    std::vector<std::vector<uint8_t>> priv(r.msgs.size()), rbuf(r.recvs.size());
    std::vector<msg::Request> reqs;
    std::vector<int> req_recv;  // receive id of each request (-1: a send)
    std::vector<msg::Status> status(r.recvs.size());
    size_t arena_used = 0;
    for (const Op& op : ops) {
      if (op.kind == Op::isend) {
        const MsgSpec& s = r.msgs[static_cast<size_t>(op.index)];
        uint8_t* b = nullptr;
        if (s.heap && arena_used + s.bytes <= arena_bytes) {
          b = arena + arena_used;
          arena_used += (s.bytes + 15) / 16 * 16;
        } else {
          priv[static_cast<size_t>(s.id)].resize(std::max<size_t>(s.bytes, 1));
          b = priv[static_cast<size_t>(s.id)].data();
        }
        make_payload(b, s.bytes, s.id);
        reqs.push_back(comms[static_cast<size_t>(s.comm)].isend(b, s.bytes, s.dst, s.tag));
        req_recv.push_back(-1);
      } else {
        const RecvSpec& q = r.recvs[static_cast<size_t>(op.index)];
        auto& buf = rbuf[static_cast<size_t>(q.id)];
        buf.assign(q.cap + kGuard, kGuardByte);
        msg::Comm& c = comms[static_cast<size_t>(q.comm)];
        if (op.kind == Op::recv) {
          status[static_cast<size_t>(q.id)] = c.recv(buf.data(), q.cap, q.src, q.tag);
        } else {
          reqs.push_back(c.irecv(buf.data(), q.cap, q.src, q.tag));
          req_recv.push_back(q.id);
        }
      }
      switch (jitter() % 16) {
        case 0:
          usleep(static_cast<useconds_t>(jitter() % 50));
          break;
        case 1:
          m.progress();
          break;
        default:
          break;
      }
    }
    // Completion in the PE's style.
    const int style = r.wait_style[static_cast<size_t>(me)];
    std::vector<msg::Status> st(reqs.size());
    if (style == 0) {
      m.waitall(reqs, st);
    } else if (style == 1) {
      for (;;) {
        msg::Status s{};
        const int i = m.waitany(reqs, &s);
        if (i < 0) break;
        st[static_cast<size_t>(i)] = s;
      }
    } else {
      size_t open = reqs.size();
      while (open > 0) {
        for (size_t i = 0; i < reqs.size(); ++i)
          if (!reqs[i].null() && m.test(reqs[i], &st[i])) --open;
      }
    }
    for (size_t i = 0; i < reqs.size(); ++i)
      if (req_recv[i] >= 0) status[static_cast<size_t>(req_recv[i])] = st[i];
    // Which message each receive took, and its bytes.
    std::vector<int> got(r.recvs.size(), -1);
    for (const auto& q : r.recvs) {
      if (q.dst_pe != me) continue;
      const auto& buf = rbuf[static_cast<size_t>(q.id)];
      const msg::Status& s = status[static_cast<size_t>(q.id)];
      int id = q.expect;
      if (s.bytes >= 8) {
        uint64_t v = 0;
        std::memcpy(&v, buf.data(), 8);
        id = v < r.msgs.size() ? static_cast<int>(v) : -1;
      }
      got[static_cast<size_t>(q.id)] = id;
      if (id >= 0) {
        const long long bad = payload_bad(buf.data(), std::min<size_t>(s.bytes, q.cap), id);
        PE_CHECK(bad < 0, "round %d receive %d (message %d, %zu bytes): byte %lld wrong", round, q.id, id,
                 static_cast<size_t>(s.bytes), bad);
      }
      bool guard_ok = true;
      for (size_t i = q.cap; i < q.cap + kGuard; ++i) guard_ok = guard_ok && buf[i] == kGuardByte;
      PE_CHECK(guard_ok, "round %d receive %d: bytes written past the %zu-byte buffer", round, q.id, q.cap);
    }
    for (const std::string& p : check_round(r, me, got, status)) {
      if (reported++ < 20) PE_CHECK(false, "round %d: %s", round, p.c_str());
    }
    rt.barrier_all();  // no message of this round is in flight when the next begins
  }
  rt.free(arena);
  std::printf("rank %d: %d random rounds, seed %llu\n", me, rounds, static_cast<unsigned long long>(seed));
}

}  // namespace gpucomm::msgtest
