// A PE of the endpoint tests across processes (host-memory PEs in CI; docs/MESSAGING.md,
// "Endpoints"): `gpucomm_test_ep_pe SCENARIO [--rounds N] [--endpoints E] [--slots S]
// [--max-bytes B]` under `gpucomm run -n N`.
//   random     random programs from one seed per job (printed on failure; GPUCOMM_TEST_SEED
//              replays): every PE sends messages of 8..max_bytes bytes to random endpoints of
//              random PEs (itself included) from two sender threads, while one owner thread per
//              endpoint receives them with exact, (src, ANY), (ANY, tag) or (ANY, ANY) receives,
//              posted ahead or one by one, with probes; every byte, every status, each message
//              once, and MPI's non-overtaking order are checked
//   api        truncation, probes, test, ownership rules, a reopen that keeps unexpected messages,
//              a ring refilled many times by a slow receiver, and bad arguments (each an error
//              naming the argument, the job going on)
//   timeout    a receive no message matches fails at GPUCOMM_TIMEOUT naming rank, endpoint,
//              source and tag
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/endpoints.hpp"
#include "pe_main.hpp"

using namespace gpucomm;
namespace ep = gpucomm::msg::ep;

namespace {

uint64_t g_seed = 0;

// PE_CHECK from several threads: the failure count and the output under one lock.
std::mutex g_check_mu;
#define EP_CHECK(cond, ...)                                \
  do {                                                     \
    if (!(cond)) {                                         \
      std::lock_guard<std::mutex> check_lock_(g_check_mu); \
      PE_CHECK(cond, __VA_ARGS__);                         \
    }                                                      \
  } while (0)

uint64_t job_seed(Runtime& rt) {
  if (rt.rank() == 0) {
    const char* env = std::getenv("GPUCOMM_TEST_SEED");
    rt.bootstrap().set("eptest/seed", std::to_string(env ? std::strtoull(env, nullptr, 0) : testing::pe_seed(0)));
  }
  return g_seed = std::strtoull(rt.bootstrap().get("eptest/seed").c_str(), nullptr, 10);
}

int64_t option(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return testing::arg_int(argv[i + 1], name);
  return fallback;
}

uint8_t pattern(uint64_t key, uint64_t i) {
  uint64_t x = (key + i) * 0x9e3779b97f4a7c15ULL;
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17) ^ i);
}

// Message `idx` of round `round`: 4 bytes of its index, then the pattern.
void fill(unsigned char* b, uint32_t n, uint32_t idx, uint64_t round) {
  std::memcpy(b, &idx, 4);
  for (uint32_t i = 4; i < n; ++i) b[i] = pattern(round * 1000003u + idx, i);
}

template <class F>
void expect_error(const char* what, Errc code, const std::string& needle, F&& f) {
  try {
    f();
    EP_CHECK(false, "%s: no error raised (wanted %s mentioning \"%s\")", what, errc_name(code), needle.c_str());
  } catch (const Error& e) {
    EP_CHECK(e.code() == code && std::string(e.what()).find(needle) != std::string::npos,
             "%s: wanted %s mentioning \"%s\", got %s: %s", what, errc_name(code), needle.c_str(), errc_name(e.code()),
             e.what());
  }
}

// Runs a thread's body; an exception fails the PE with its text instead of terminating it.
template <class F>
void guarded(const char* who, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    EP_CHECK(false, "%s thread: %s", who, e.what());
  }
}

struct Message {
  int src, dst, ep, tag;
  uint32_t bytes;
};

// ---- random programs ----

enum Style { kExact, kSrcAnyTag, kAnySrcTag, kAnyAny, kStyles };

// The owner of endpoint e on this PE for one round: receives every message addressed to it with
// receives of one style (a style mixing wildcards with exact receives could let a wildcard take a
// message an exact receive needs: not MPI-safe), then checks what came.
void own_round(msg::Endpoints& eps, const std::vector<Message>& prog, int me, int e, uint64_t round, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> mine;  // indices of the messages to (me, e), in program order
  for (uint32_t i = 0; i < prog.size(); ++i)
    if (prog[i].dst == me && prog[i].ep == e) mine.push_back(i);
  // The receives: one per message, each naming what its style keeps of the message's envelope.
  // Receives posted ahead come in any order. Exact receives waited for one by one follow the send
  // order but for neighbours swapped: waiting for a message far behind others of its ring would
  // need the ring to buffer them all (an unsafe program in MPI's terms).
  // Wildcard receives are posted ahead: waited for one by one, a wildcard may take a message that
  // another receive was meant for while the one it was meant for sits behind a blocked send.
  const auto style = static_cast<Style>(rng() % kStyles);
  const bool ahead = style != kExact || rng() % 2 == 0;
  std::vector<uint32_t> order = mine;
  if (ahead) {
    std::shuffle(order.begin(), order.end(), rng);
  } else {
    for (size_t k = 1; k < order.size(); k += 2)
      if (rng() % 2) std::swap(order[k - 1], order[k]);
  }
  auto owner = eps.own(e);
  const uint32_t cap = eps.layout().max_bytes;
  std::vector<std::vector<unsigned char>> bufs(order.size(), std::vector<unsigned char>(cap));
  std::vector<uint16_t> ids(order.size());
  std::vector<ep::Status> got(order.size());
  std::vector<std::pair<int, int>> env(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const Message& m = prog[order[k]];
    int src = m.src, tag = m.tag;
    if (style == kSrcAnyTag || style == kAnyAny) tag = ep::kAnyTag;
    if (style == kAnySrcTag || style == kAnyAny) src = ep::kAnySource;
    env[k] = {src, tag};
  }
  for (size_t k = 0; k < order.size(); ++k) {
    if (rng() % 4 == 0) {
      ep::Status ps{};
      if (owner->iprobe(env[k].first, env[k].second, &ps)) {
        EP_CHECK(ps.bytes >= 8 && ps.bytes <= cap, "probe: %u bytes", ps.bytes);
      }
    }
    ids[k] = owner->irecv(bufs[k].data(), cap, env[k].first, env[k].second);
    if (!ahead) got[k] = owner->wait(ids[k]);
  }
  if (ahead) {
    // Wait in random order, some by testing.
    std::vector<size_t> w(order.size());
    for (size_t k = 0; k < w.size(); ++k) w[k] = k;
    std::shuffle(w.begin(), w.end(), rng);
    for (size_t k : w) {
      if (rng() % 3 == 0) {
        while (!owner->test(ids[k], &got[k])) {
        }
      } else {
        got[k] = owner->wait(ids[k]);
      }
    }
  }
  owner->close();
  // Each message once, whole, with its envelope; receives of one key get its messages in order.
  std::vector<int> seen(prog.size(), 0);
  std::map<std::pair<int, int>, int64_t> last;  // (src, tag or -1 for per-source order) -> last index
  for (size_t k = 0; k < order.size(); ++k) {
    uint32_t idx = 0;
    std::memcpy(&idx, bufs[k].data(), 4);
    if (idx >= prog.size() || prog[idx].dst != me || prog[idx].ep != e) {
      EP_CHECK(false, "round %llu ep %d receive %zu: message index %u is not one of this endpoint's",
               static_cast<unsigned long long>(round), e, k, idx);
      continue;
    }
    const Message& m = prog[idx];
    ++seen[idx];
    EP_CHECK(
        got[k].source == m.src && got[k].tag == m.tag && got[k].bytes == m.bytes && got[k].error == 0,
        "round %llu ep %d message %u: status (src %d, tag %d, %u bytes, error %u), sent (src %d, tag %d, %u bytes)",
        static_cast<unsigned long long>(round), e, idx, got[k].source, got[k].tag, got[k].bytes, got[k].error, m.src,
        m.tag, m.bytes);
    EP_CHECK(env[k].first == ep::kAnySource || env[k].first == m.src, "receive %zu got a message of another source", k);
    EP_CHECK(env[k].second == ep::kAnyTag || env[k].second == m.tag, "receive %zu got a message of another tag", k);
    for (uint32_t i = 4; i < m.bytes; ++i) {
      if (bufs[k][i] != pattern(round * 1000003u + idx, i)) {
        EP_CHECK(false, "round %llu ep %d message %u (%u bytes from %d): byte %u wrong",
                 static_cast<unsigned long long>(round), e, idx, m.bytes, m.src, i);
        break;
      }
    }
    // Non-overtaking: the receives are in post order here.
    const std::pair<int, int> key{m.src, env[k].second == ep::kAnyTag ? -1 : m.tag};
    auto it = last.find(key);
    EP_CHECK(it == last.end() || it->second < static_cast<int64_t>(idx),
             "round %llu ep %d: message %u (src %d, tag %d) matched after message %lld of the same key (style %d)",
             static_cast<unsigned long long>(round), e, idx, m.src, m.tag,
             it == last.end() ? -1LL : static_cast<long long>(it->second), static_cast<int>(style));
    last[key] = idx;
  }
  for (uint32_t i : mine) {
    EP_CHECK(seen[i] == 1, "round %llu: message %u received %d times", static_cast<unsigned long long>(round), i,
             seen[i]);
  }
}

void scenario_random(Runtime& rt, int rounds, const msg::EndpointsOptions& o) {
  msg::Endpoints eps(rt, o);
  const uint64_t seed = job_seed(rt);
  const int n = rt.size(), me = rt.rank();
  for (int round = 0; round < rounds; ++round) {
    std::mt19937_64 rng(seed + static_cast<uint64_t>(round) * 7919u);
    std::vector<Message> prog(static_cast<size_t>(n) * (20 + rng() % 60));
    const int tags = 1 + static_cast<int>(rng() % 5);
    for (Message& m : prog) {
      m.src = static_cast<int>(rng() % n);
      m.dst = static_cast<int>(rng() % n);
      m.ep = static_cast<int>(rng() % o.endpoints);
      m.tag = static_cast<int>(rng() % tags);
      m.bytes = 8 + static_cast<uint32_t>(rng() % (o.max_bytes - 7));
    }
    std::vector<std::thread> owners;
    owners.reserve(static_cast<size_t>(o.endpoints));
    for (int e = 0; e < o.endpoints; ++e) {
      owners.emplace_back([&, e] {
        guarded("owner", [&] {
          own_round(eps, prog, me, e, static_cast<uint64_t>(round),
                    seed ^ (static_cast<uint64_t>(me) << 20) ^ (static_cast<uint64_t>(e) << 40) ^ round);
        });
      });
    }
    // Two sender threads; the messages to one endpoint go through one of them, in program order.
    auto sender = [&](int which) {
      guarded("sender", [&] {
        std::vector<unsigned char> b(o.max_bytes);
        for (uint32_t i = 0; i < prog.size(); ++i) {
          const Message& m = prog[i];
          if (m.src != me || (m.dst * 31 + m.ep) % 2 != which) continue;
          fill(b.data(), m.bytes, i, static_cast<uint64_t>(round));
          eps.send(m.dst, m.ep, m.tag, b.data(), m.bytes);
        }
      });
    };
    std::thread s0(sender, 0), s1(sender, 1);
    s0.join();
    s1.join();
    for (auto& t : owners) t.join();
    rt.barrier_all();
  }
}

// ---- the API call by call ----

void scenario_api(Runtime& rt, const msg::EndpointsOptions& o) {
  msg::Endpoints eps(rt, o);
  const int me = rt.rank(), n = rt.size();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  unsigned char out[64], in[64];
  for (int i = 0; i < 64; ++i) out[i] = static_cast<unsigned char>(me * 16 + i);
  {
    auto owner = eps.own(0);
    EP_CHECK(owner->endpoint() == 0, "endpoint() %d", owner->endpoint());
    ep::Status st{};
    EP_CHECK(!owner->iprobe(prev, 5, &st), "a probe before any send found a message");
    rt.barrier_all();
    // Truncation: 16 bytes into a 4-byte receive: the first 4 delivered, the status says so.
    eps.send(next, 0, 5, out, 16);
    st = owner->probe(prev, 5);
    EP_CHECK(st.source == prev && st.tag == 5 && st.bytes == 16, "probe: src %d tag %d bytes %u", st.source, st.tag,
             st.bytes);
    std::memset(in, 0xee, sizeof in);
    st = owner->recv(in, 4, ep::kAnySource, ep::kAnyTag);
    EP_CHECK(st.error == ep::kErrTruncated && st.bytes == 16 && st.source == prev && st.tag == 5,
             "truncated: error %u bytes %u src %d tag %d", st.error, st.bytes, st.source, st.tag);
    EP_CHECK(in[0] == static_cast<unsigned char>(prev * 16) && in[3] == static_cast<unsigned char>(prev * 16 + 3) &&
                 in[4] == 0xee,
             "truncated delivery: %u %u %u", in[0], in[3], in[4]);
    // Sizes 0..max: every byte, including odd lengths.
    for (uint32_t b : {0u, 1u, 3u, 5u, 8u, 9u, 13u, static_cast<uint32_t>(o.max_bytes)}) {
      eps.send(next, 0, 100 + static_cast<int>(b), out, b);
      std::memset(in, 0, sizeof in);
      st = owner->recv(in, sizeof in, prev, 100 + static_cast<int>(b));
      EP_CHECK(st.bytes == b && st.error == 0, "size %u: status bytes %u", b, st.bytes);
      for (uint32_t i = 0; i < b; ++i)
        EP_CHECK(in[i] == static_cast<unsigned char>(prev * 16 + static_cast<int>(i)), "size %u byte %u", b, i);
    }
    // test() on a receive whose message comes later.
    const uint16_t id = owner->irecv(in, sizeof in, prev, 7);
    EP_CHECK(!owner->test(id), "test completed a receive before its send");
    rt.barrier_all();
    eps.send(next, 0, 7, out, 8);
    while (!owner->test(id, &st)) {
    }
    EP_CHECK(st.tag == 7 && st.source == prev, "test: tag %d src %d", st.tag, st.source);
    // cancel: a posted receive completes cancelled; a matched one keeps its message.
    const uint16_t c1 = owner->irecv(in, sizeof in, prev, 77);
    owner->cancel(c1);
    st = owner->wait(c1);
    EP_CHECK(st.error == ep::kErrCancelled && st.bytes == 0, "cancelled: error %u bytes %u", st.error, st.bytes);
    eps.send(next, 0, 78, out, 8);
    owner->probe(prev, 78);                                     // drained: now an unexpected message
    const uint16_t c2 = owner->irecv(in, sizeof in, prev, 78);  // which the receive takes at once
    owner->cancel(c2);
    st = owner->wait(c2);
    EP_CHECK(st.error == 0 && st.bytes == 8 && st.tag == 78, "cancel after match: error %u bytes %u", st.error,
             st.bytes);
    // Ownership: one owner at a time.
    expect_error("own twice", Errc::invalid_argument, "already owned", [&] { eps.own(0); });
    // close with a receive not waited for.
    const uint16_t pending = owner->irecv(in, sizeof in, prev, 8);
    expect_error("close with pending", Errc::invalid_argument, "not waited for", [&] { owner->close(); });
    eps.send(next, 0, 8, out, 8);
    owner->wait(pending);
    expect_error("wait twice", Errc::invalid_argument, "request id", [&] { owner->wait(pending); });
    rt.barrier_all();
  }
  // A reopen keeps unexpected messages: tags 1, 2, 3 sent; 2 taken; closed; the rest in order.
  {
    rt.barrier_all();
    for (int t = 1; t <= 3; ++t) {
      out[0] = static_cast<unsigned char>(t);
      eps.send(next, 1, t, out, 8);
    }
    auto owner = eps.own(1);
    ep::Status st = owner->recv(in, sizeof in, prev, 2);
    EP_CHECK(st.tag == 2 && in[0] == 2, "reopen: first tag %d byte %u", st.tag, in[0]);
    owner->close();
    owner = eps.own(1);
    st = owner->recv(in, sizeof in, prev, ep::kAnyTag);
    EP_CHECK(st.tag == 1 && in[0] == 1, "after reopen: tag %d (want 1) byte %u", st.tag, in[0]);
    st = owner->recv(in, sizeof in, prev, ep::kAnyTag);
    EP_CHECK(st.tag == 3 && in[0] == 3, "after reopen: tag %d (want 3) byte %u", st.tag, in[0]);
    owner->close();
    rt.barrier_all();
  }
  // A slow receiver: 10 rings' worth through one ring, the sender held back by credits.
  {
    const int count = 10 * o.slots;
    std::thread rx([&] {
      auto owner = eps.own(2);
      unsigned char b[64];
      for (int i = 0; i < count; ++i) {
        if (i % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
        const ep::Status st = owner->recv(b, sizeof b, prev, 9);
        int v = 0;
        std::memcpy(&v, b, 4);
        if (v != i || st.bytes != 4) {
          EP_CHECK(false, "slow receiver: message %d carries %d (%u bytes)", i, v, st.bytes);
          break;
        }
      }
    });
    for (int i = 0; i < count; ++i) eps.send(next, 2, 9, &i, 4);
    rx.join();
    rt.barrier_all();
  }
  // Bad arguments: each names what is wrong, and nothing breaks.
  expect_error("pe", Errc::invalid_argument, "pe " + std::to_string(n), [&] { eps.send(n, 0, 1, out, 4); });
  expect_error("negative pe", Errc::invalid_argument, "pe -1", [&] { eps.send(-1, 0, 1, out, 4); });
  expect_error("ep", Errc::invalid_argument, "ep " + std::to_string(o.endpoints),
               [&] { eps.send(next, o.endpoints, 1, out, 4); });
  expect_error("tag", Errc::invalid_argument, "tag -3", [&] { eps.send(next, 0, -3, out, 4); });
  expect_error("bytes", Errc::invalid_argument, "max_bytes", [&] { eps.send(next, 0, 1, out, o.max_bytes + 4u); });
  expect_error("null buf", Errc::invalid_argument, "buf", [&] { eps.send(next, 0, 1, nullptr, 4); });
  expect_error("own ep", Errc::invalid_argument, "ep -1", [&] { eps.own(-1); });
  {
    auto owner = eps.own(3 % o.endpoints);
    expect_error("src", Errc::invalid_argument, "src " + std::to_string(n), [&] { owner->irecv(in, 4, n, 1); });
    expect_error("recv tag", Errc::invalid_argument, "tag -2", [&] { owner->irecv(in, 4, 0, -2); });
    expect_error("bad id", Errc::invalid_argument, "request id", [&] { owner->wait(999); });
  }
  expect_error("options", Errc::invalid_argument, "slots", [&] {
    msg::EndpointsOptions bad = o;
    bad.slots = 3;
    msg::Endpoints x(rt, bad);
  });
  expect_error("device on host", Errc::unsupported, "host-memory PE", [&] { eps.device(); });
  rt.barrier_all();
}

void scenario_timeout(Runtime& rt, const msg::EndpointsOptions& o) {
  msg::Endpoints eps(rt, o);
  {
    auto owner = eps.own(0);
    unsigned char b[8];
    expect_error("timeout", Errc::timeout, "tag 42", [&] { owner->recv(b, sizeof b, 0, 42); });
  }
  rt.barrier_all();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr,
                 "usage: gpucomm_test_ep_pe random|api|timeout [--rounds N] [--endpoints E] [--slots S] "
                 "[--max-bytes B]\n");
    return argc < 2 ? 2 : 0;
  }
  msg::EndpointsOptions o;
  o.endpoints = static_cast<int>(option(argc, argv, "--endpoints", 4));
  o.slots = static_cast<int>(option(argc, argv, "--slots", 32));
  o.max_bytes = static_cast<int>(option(argc, argv, "--max-bytes", 64));
  const int rounds = static_cast<int>(option(argc, argv, "--rounds", 10));
  return testing::run_scenario(argv[1],
                               {{"random", [&](Runtime& rt) { scenario_random(rt, rounds, o); }},
                                {"api", [&](Runtime& rt) { scenario_api(rt, o); }},
                                {"timeout", [&](Runtime& rt) { scenario_timeout(rt, o); }}},
                               [] { return "GPUCOMM_TEST_SEED=" + std::to_string(g_seed) + " replays"; });
}
