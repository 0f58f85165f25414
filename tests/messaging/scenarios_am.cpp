// Active messages across processes: every PE sends `--count` asks (handler 2) of random sizes up
// to am_max to every PE (itself included), every other one a request that wants an answer; the
// ask handler checks every byte and the per-sender order, and answers the requests (handler 5),
// whose handler counts the answers. Sends poll with the handler while they wait for credits. The
// PEs poll until all asks and replies arrived. Then bad input: an unregistered id, a payload over
// the eager limit. A fresh seed per run (GPUCOMM_TEST_SEED replays).
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpucomm/core/error.hpp"
#include "msg_pe_common.hpp"

namespace gpucomm::msgtest {

namespace {

constexpr uint32_t kAsk = 2, kReply = 5;

// An ask's payload: its sequence number per (sender, receiver), then the pattern.
struct AskHeader {
  uint64_t seq;
};

template <class F>
void expect_arg_error(const char* what, const std::string& needle, F f) {
  try {
    f();
    PE_CHECK(false, "%s: no error", what);
  } catch (const Error& e) {
    PE_CHECK(e.code() == Errc::invalid_argument, "%s: code %s (%s)", what, errc_name(e.code()), e.what());
    PE_CHECK(std::string(e.what()).find(needle) != std::string::npos, "%s: message '%s' lacks '%s'", what, e.what(),
             needle.c_str());
  }
}

}  // namespace

void scenario_am(Runtime& rt, const Options& o) {
  msg::MessengerOptions mo;
  mo.am_per_sender = static_cast<uint32_t>(o.get("--am-per-sender", 0));
  msg::Messenger m(rt, mo);
  msg::Comm w = m.world();
  const uint32_t ids[] = {kAsk, kReply};
  m.register_am(ids);
  const int me = w.rank(), n = w.size();
  const int count = static_cast<int>(o.get("--count", 50));
  const uint64_t seed = shared_seed(rt);
  std::mt19937_64 rng(seed ^ (0x9e37ull * static_cast<uint64_t>(me + 1)));
  const uint64_t max_bytes = m.config().am_max;
  std::vector<uint64_t> next_seq(static_cast<size_t>(n), 0);  // next ask expected from each sender
  long long asks = 0, replies = 0;
  auto handler = [&](const msg::AmMessage& a) {
    if (a.id == kAsk) {
      PE_CHECK(a.bytes >= sizeof(AskHeader), "ask from %d: %llu bytes", a.source,
               static_cast<unsigned long long>(a.bytes));
      AskHeader h{};
      std::memcpy(&h, a.payload, sizeof h);
      uint64_t& want = next_seq[static_cast<size_t>(a.source)];
      PE_CHECK(h.seq == want, "ask from %d: sequence %llu, expected %llu (per-sender order)", a.source,
               static_cast<unsigned long long>(h.seq), static_cast<unsigned long long>(want));
      want = h.seq + 1;
      const auto* bytes = static_cast<const char*>(a.payload) + sizeof h;
      const long long bad = first_bad(bytes, a.bytes - sizeof h, msg_key(a.source, me, static_cast<int>(kAsk), h.seq));
      PE_CHECK(bad < 0, "ask %llu from %d: byte %lld differs", static_cast<unsigned long long>(h.seq), a.source, bad);
      ++asks;
      PE_CHECK((a.flags & msg::kAmWantsReply) != 0 || h.seq % 2 == 1, "ask %llu from %d: flags %u",
               static_cast<unsigned long long>(h.seq), a.source, a.flags);
      if (a.flags & msg::kAmWantsReply) w.am_reply(a, kReply, &h.seq, sizeof h.seq);
    } else {
      PE_CHECK(a.id == kReply && a.bytes == sizeof(uint64_t), "reply: id %u, %llu bytes", a.id,
               static_cast<unsigned long long>(a.bytes));
      ++replies;
    }
  };
  std::vector<char> buf(max_bytes);
  std::uniform_int_distribution<uint64_t> size(sizeof(AskHeader), max_bytes);
  for (int k = 0; k < count; ++k) {
    for (int d = 0; d < n; ++d) {
      const int dest = (me + d) % n;
      const AskHeader h{static_cast<uint64_t>(k)};
      const uint64_t bytes = k % 3 == 0 ? sizeof h + rng() % 13 : size(rng);  // LL-sized ones too
      std::memcpy(buf.data(), &h, sizeof h);
      fill(buf.data() + sizeof h, bytes - sizeof h, msg_key(me, dest, static_cast<int>(kAsk), h.seq));
      // Even asks want an answer (am_request), odd ones are one-way.
      if (k % 2 == 0) {
        w.am_request(dest, kAsk, buf.data(), bytes, handler);
      } else {
        w.am_send(dest, kAsk, buf.data(), bytes, handler);
      }
      (void)m.am_poll(handler);
    }
  }
  const long long want = static_cast<long long>(count) * n;
  const long long want_replies = static_cast<long long>((count + 1) / 2) * n;
  while (asks < want || replies < want_replies) (void)m.am_poll(handler);
  PE_CHECK(asks == want && replies == want_replies, "asks %lld (expected %lld), replies %lld (expected %lld)", asks,
           want, replies, want_replies);
  rt.barrier_all();  // every PE's handlers ran: the counters are final
  const msg::Counters c = w.counters();
  PE_CHECK(c.active == static_cast<uint64_t>(want + want_replies), "counter active = %llu, expected %lld",
           static_cast<unsigned long long>(c.active), want + want_replies);
  expect_arg_error("unregistered id", "id", [&] { w.am_send(0, 9, buf.data(), 8); });
  expect_arg_error("id beyond the table", "id", [&] { w.am_send(0, msg::kMaxAmHandlers, buf.data(), 8); });
  expect_arg_error("payload over am_max", "bytes", [&] { w.am_send(0, kAsk, buf.data(), max_bytes + 1); });
  const msg::AmMessage one_way{0, kAsk, w.context_id(), 0, buf.data(), 8, 0, 0};
  expect_arg_error("reply to a one-way message", "msg", [&] { w.am_reply(one_way, kReply, buf.data(), 8); });
  expect_arg_error("handler id out of range", "ids", [&] {
    const uint32_t bad[] = {msg::kMaxAmHandlers};
    m.register_am(bad);
  });
  if (testing::g_pe_failures) std::printf("rank %d: seed %llu\n", me, static_cast<unsigned long long>(seed));
  rt.barrier_all();
}

}  // namespace gpucomm::msgtest
