// Stress and failure scenarios across processes: floods into one PE, rings, all-to-all, messages
// larger than the staging pool (run them with one credit and a one-slot inbox too); an unsafe
// program that must fail at the timeout with a diagnostic that says so; bad input.
#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gpucomm/core/error.hpp"
#include "msg_pe_common.hpp"

namespace gpucomm::msgtest {

namespace {

msg::MessengerOptions options_of(const Options& o) {
  msg::MessengerOptions mo;
  mo.slots = static_cast<uint32_t>(o.get("--slots", 0));
  mo.pool_slots = static_cast<int32_t>(o.get("--pool", -1));
  mo.eager_max = static_cast<uint32_t>(o.get("--eager", 0));
  mo.chunk_bytes = static_cast<uint64_t>(o.get("--chunk", 0));
  mo.staging_pairs = static_cast<uint32_t>(o.get("--staging", 0));
  return mo;
}

// Everyone floods PE 0 with `count` messages; PE 0 posts its receives late (the messages are
// unexpected), with ANY_SOURCE, and checks every source's order and bytes.
void all_to_one(Runtime& rt, msg::Messenger& m, msg::Comm& w, int count, std::mt19937_64& rng) {
  const int me = rt.rank(), n = rt.size();
  const size_t max_bytes = 3000;
  if (me != 0) {
    std::vector<std::vector<uint8_t>> out(static_cast<size_t>(count));
    std::vector<msg::Request> rs;
    for (int k = 0; k < count; ++k) {
      auto& b = out[static_cast<size_t>(k)];
      b.resize(8 + rng() % (max_bytes - 8));
      fill(b.data(), b.size(), msg_key(me, 0, 1, static_cast<uint64_t>(k)));
      const uint64_t seq = static_cast<uint64_t>(k);
      std::memcpy(b.data(), &seq, 8);
      rs.push_back(w.isend(b.data(), b.size(), 0, 1));
    }
    m.waitall(rs);
  } else {
    std::vector<uint64_t> next(static_cast<size_t>(n), 0);
    std::vector<uint8_t> in(max_bytes);
    for (int k = 0; k < count * (n - 1); ++k) {
      const msg::Status st = w.recv(in.data(), in.size(), msg::kAnySource, 1);
      uint64_t seq = 0;
      std::memcpy(&seq, in.data(), 8);
      PE_CHECK(
          st.source > 0 && st.source < n && seq == next[static_cast<size_t>(st.source)],
          "flood: from %d message %llu, expected %llu", st.source, static_cast<unsigned long long>(seq),
          static_cast<unsigned long long>(st.source > 0 && st.source < n ? next[static_cast<size_t>(st.source)] : 0));
      if (st.source <= 0 || st.source >= n) continue;
      next[static_cast<size_t>(st.source)] = seq + 1;
      // The pattern after the sequence number.
      bool ok = true;
      const uint64_t key = msg_key(st.source, 0, 1, seq);
      for (size_t i = 8; i < st.bytes; ++i) ok = ok && in[i] == pattern(key, i);
      PE_CHECK(ok, "flood: from %d message %llu: bytes", st.source, static_cast<unsigned long long>(seq));
    }
  }
  rt.barrier_all();
}

// A ring of blocking calls, safe by parity (even PEs send first, odd PEs receive first).
void ring(Runtime& rt, msg::Comm& w, int count) {
  const int me = rt.rank(), n = rt.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<uint8_t> out(4096), in(4096);
  for (int k = 0; k < count; ++k) {
    const size_t bytes = static_cast<size_t>(k * 97) % out.size();
    fill(out.data(), bytes, msg_key(me, right, 2, static_cast<uint64_t>(k)));
    msg::Status st{};
    if (me % 2 == 0 || n == 1) {
      if (n == 1) {
        msg::Request r = w.irecv(in.data(), in.size(), left, 2);
        w.send(out.data(), bytes, right, 2);
        st = w.messenger().wait(r);
      } else {
        w.send(out.data(), bytes, right, 2);
        st = w.recv(in.data(), in.size(), left, 2);
      }
    } else {
      st = w.recv(in.data(), in.size(), left, 2);
      w.send(out.data(), bytes, right, 2);
    }
    const size_t want = static_cast<size_t>(k * 97) % out.size();
    PE_CHECK(st.bytes == want && first_bad(in.data(), want, msg_key(left, me, 2, static_cast<uint64_t>(k))) < 0,
             "ring message %d: %llu bytes", k, static_cast<unsigned long long>(st.bytes));
  }
}

// Rounds of all-to-all with non-blocking calls.
void all_to_all(Runtime& rt, msg::Messenger& m, msg::Comm& w, int rounds, size_t bytes) {
  const int me = rt.rank(), n = rt.size();
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(n), std::vector<uint8_t>(bytes)),
      in(static_cast<size_t>(n), std::vector<uint8_t>(bytes));
  for (int r = 0; r < rounds; ++r) {
    std::vector<msg::Request> rs;
    rs.reserve(static_cast<size_t>(n));
    for (int s = 0; s < n; ++s) rs.push_back(w.irecv(in[static_cast<size_t>(s)].data(), bytes, s, 3));
    for (int d = 0; d < n; ++d) {
      fill(out[static_cast<size_t>(d)].data(), bytes, msg_key(me, d, 3, static_cast<uint64_t>(r)));
      rs.push_back(w.isend(out[static_cast<size_t>(d)].data(), bytes, d, 3));
    }
    m.waitall(rs);
    for (int s = 0; s < n; ++s) {
      PE_CHECK(first_bad(in[static_cast<size_t>(s)].data(), bytes, msg_key(s, me, 3, static_cast<uint64_t>(r))) < 0,
               "all-to-all round %d from %d: bytes", r, s);
    }
  }
  rt.barrier_all();
}

template <class F>
void expect_error(const char* what, Errc code, const std::string& needle, F f) {
  try {
    f();
    PE_CHECK(false, "%s: no error", what);
  } catch (const Error& e) {
    PE_CHECK(e.code() == code, "%s: code %s, expected %s (%s)", what, errc_name(e.code()), errc_name(code), e.what());
    PE_CHECK(std::string(e.what()).find(needle) != std::string::npos, "%s: message '%s' lacks '%s'", what, e.what(),
             needle.c_str());
  }
}

}  // namespace

void scenario_stress(Runtime& rt, const Options& o) {
  msg::Messenger m(rt, options_of(o));
  msg::Comm w = m.world();
  std::mt19937_64 rng(shared_seed(rt) + static_cast<uint64_t>(rt.rank()));
  const int count = static_cast<int>(o.get("--count", 300));
  all_to_one(rt, m, w, count, rng);
  ring(rt, w, count);
  rt.barrier_all();
  all_to_all(rt, m, w, count / 30 + 1, 1000);
  // Messages several times larger than the whole staging pool (private buffers stream through it).
  const size_t pool_bytes = size_t{2} * m.config().staging_pairs * m.config().chunk_bytes;
  all_to_all(rt, m, w, 1, pool_bytes * 3 + 123);
}

// Every PE sends blocking rendezvous-sized messages to its right neighbour before receiving: with
// no buffering this deadlocks (an unsafe program); the wait must fail at the timeout saying so.
void scenario_unsafe(Runtime& rt, const Options& o) {
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  const int right = (rt.rank() + 1) % rt.size();
  std::vector<uint8_t> big(static_cast<size_t>(o.get("--bytes", 100000)));
  expect_error("unsafe send", Errc::timeout, "The receiver has not posted a matching receive",
               [&] { w.send(big.data(), big.size(), right, 1); });
  std::printf("rank %d: the unsafe program failed as expected\n", rt.rank());
  rt.barrier_all();  // every PE saw its timeout before anyone leaves
}

void scenario_bad_input(Runtime& rt, const Options&) {
  msg::MessengerOptions mo;
  mo.requests = 64;
  msg::Messenger m(rt, mo);
  msg::Comm w = m.world();
  const int n = rt.size();
  uint8_t buf[64] = {};
  expect_error("dest too large", Errc::invalid_argument, "dest", [&] { w.send(buf, 8, n, 0); });
  expect_error("negative dest", Errc::invalid_argument, "dest", [&] { w.isend(buf, 8, -7, 0); });
  expect_error("source too large", Errc::invalid_argument, "source", [&] { w.irecv(buf, 8, n + 3, 0); });
  expect_error("negative tag", Errc::invalid_argument, "tag", [&] { w.send(buf, 8, 0, -3); });
  expect_error("huge tag", Errc::invalid_argument, "tag", [&] { w.isend(buf, 8, 0, msg::kTagUpperBound + 1); });
  expect_error("ANY_TAG send", Errc::invalid_argument, "tag", [&] { w.isend(buf, 8, 0, msg::kAnyTag); });
  expect_error("null buffer", Errc::invalid_argument, "buf", [&] { w.isend(nullptr, 8, 0, 0); });
  expect_error("null receive buffer", Errc::invalid_argument, "buf", [&] { w.irecv(nullptr, 8, 0, 0); });
  expect_error("no communicator", Errc::invalid_argument, "comm", [&] { msg::Comm().isend(buf, 8, 0, 0); });
  expect_error("bad message", Errc::invalid_argument, "msg", [&] {
    msg::Message bad{12345678};
    w.imrecv(buf, 8, bad);
  });
  msg::CommOptions nas;
  nas.mode = msg::Mode::no_any_source;
  msg::Comm c1 = m.world(nas);
  expect_error("ANY_SOURCE on no_any_source", Errc::invalid_argument, "ANY_SOURCE",
               [&] { c1.irecv(buf, 8, msg::kAnySource, 0); });
  expect_error("unordered without allow_overtaking", Errc::invalid_argument, "allow_overtaking", [&] {
    msg::CommOptions u;
    u.mode = msg::Mode::unordered;
    m.world(u);
  });
  msg::CommOptions uo;
  uo.mode = msg::Mode::unordered;
  uo.allow_overtaking = true;
  msg::Comm c2 = m.world(uo);
  expect_error("ANY_TAG on unordered", Errc::invalid_argument, "ANY_TAG", [&] { c2.irecv(buf, 8, 0, msg::kAnyTag); });
  // A receive too small on a communicator without errors_return ends the job: an error here.
  const int right = (rt.rank() + 1) % n, left = (rt.rank() + n - 1) % n;
  msg::Request s = w.isend(buf, 64, right, 11);
  expect_error("receive too small", Errc::invalid_argument, "has 64 bytes, more than the 16-byte receive buffer",
               [&] { w.recv(buf, 16, left, 11); });
  m.wait(s);
  // The request table (64 entries here) is a stated limit, reported when exceeded.
  std::vector<msg::Request> many;
  expect_error("request table full", Errc::out_of_memory, "GPUCOMM_MSG_REQUESTS", [&] {
    for (int i = 0; i < 65; ++i) many.push_back(w.irecv(buf, 8, 0, 1000 + i));
  });
  for (auto& r : many) m.cancel(r);
  m.waitall(many);
  rt.barrier_all();
}

}  // namespace gpucomm::msgtest
