// A PE of the partitioned point-to-point tests across processes (host-memory PEs in CI; docs/
// MESSAGING.md, "Partitioned communication"): `gpucomm_test_part_pe SCENARIO [--rounds N]
// [--node-per-pe]` under `gpucomm run -n N`.
//   random     random programs from one seed per job (printed on failure; GPUCOMM_TEST_SEED
//              replays): pairs between any PEs (a PE with itself too) on two communicators, some
//              with the same source, destination and tag (matched in init order), different
//              partition counts on both sides, heap and non-heap buffers (staged receives), init
//              calls and starts in random order, partitions marked ready in random order by pready,
//              pready_range and pready_list, parrived polled at random, several rounds; every byte
//              checked when parrived says so and after wait or test
//   bad-input  bad arguments and calls out of order raise Errc::invalid_argument naming the
//              argument, sizes that differ refuse the match on both sides, a full pool says so,
//              and the job goes on
//   timeout    a send whose receiver has not started: wait fails at GPUCOMM_TIMEOUT naming rank,
//              peer, tag, round and what is missing, then completes once the receiver starts
// Prints "PE OK" and exits 0 on success; on failure prints what failed (and the seed) and exits 1.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpucomm/core/error.hpp"
#include "gpucomm/messaging/partitioned.hpp"
#include "msg_pe_common.hpp"
#include "pe_main.hpp"

using namespace gpucomm;

namespace {

uint64_t g_seed = 0;

// One seed for the job (rank 0 draws it or takes GPUCOMM_TEST_SEED), so every PE builds the same program.
uint64_t job_seed(Runtime& rt) {
  if (rt.rank() == 0) {
    const char* env = std::getenv("GPUCOMM_TEST_SEED");
    rt.bootstrap().set("parttest/seed", std::to_string(env ? std::strtoull(env, nullptr, 0) : testing::pe_seed(0)));
  }
  return g_seed = std::strtoull(rt.bootstrap().get("parttest/seed").c_str(), nullptr, 10);
}

int64_t option(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return testing::arg_int(argv[i + 1], name);
  return fallback;
}

// Runs `f`, which must raise `code` with `needle` in its message.
template <class F>
void expect_error(const char* what, Errc code, const std::string& needle, F&& f) {
  try {
    f();
    PE_CHECK(false, "%s: no error raised (wanted %s mentioning \"%s\")", what, errc_name(code), needle.c_str());
  } catch (const Error& e) {
    PE_CHECK(e.code() == code && std::string(e.what()).find(needle) != std::string::npos,
             "%s: wanted %s mentioning \"%s\", got %s: %s", what, errc_name(code), needle.c_str(), errc_name(e.code()),
             e.what());
  }
}

// ---- random programs ----

struct Pair {
  int src, dst, tag, comm;
  int sparts, rparts;
  size_t total;
  bool send_heap, recv_heap;
  size_t send_at = 0, recv_at = 0;  // offsets in the symmetric arena
};

struct Op {
  int pair;
  bool send;
  msg::PartitionedRequest req;
  char* buf = nullptr;
  std::vector<char> own;  // a buffer outside the heap
};

uint64_t round_key(int pair, uint64_t round) {
  return msgtest::msg_key(pair, static_cast<int>(round), 77, round * 131 + static_cast<uint64_t>(pair));
}

std::vector<Pair> make_program(std::mt19937_64& rng, int n) {
  std::vector<Pair> pairs(static_cast<size_t>(n) * (2 + rng() % 3));
  for (Pair& p : pairs) {
    p.src = static_cast<int>(rng() % n);
    p.dst = static_cast<int>(rng() % n);
    p.tag = static_cast<int>(rng() % 3);  // few tags: pairs with the same envelope are matched in init order
    p.comm = static_cast<int>(rng() % 2);
    p.sparts = 1 + static_cast<int>(rng() % 12);
    p.rparts = 1 + static_cast<int>(rng() % 12);
    const size_t unit = rng() % 8 == 0 ? 200 + rng() % 1800 : 1 + rng() % 40;
    p.total = static_cast<size_t>(p.sparts) * static_cast<size_t>(p.rparts) * unit;
    p.send_heap = rng() % 2 == 0;
    p.recv_heap = rng() % 3 != 0;
  }
  return pairs;
}

// This PE's init calls in random order, except that calls of one envelope (communicator, source,
// destination, tag) keep the program's order on both sides: MPI matches them in init order.
std::vector<std::pair<int, bool>> init_order(std::mt19937_64& rng, const std::vector<Pair>& pairs, int me) {
  std::vector<std::pair<int, bool>> ops;
  for (int i = 0; i < static_cast<int>(pairs.size()); ++i) {
    if (pairs[i].src == me) ops.emplace_back(i, true);
    if (pairs[i].dst == me) ops.emplace_back(i, false);
  }
  std::shuffle(ops.begin(), ops.end(), rng);
  std::map<std::tuple<bool, int, int, int, int>, std::vector<size_t>> groups;  // envelope -> positions
  for (size_t k = 0; k < ops.size(); ++k) {
    const Pair& p = pairs[ops[k].first];
    groups[{ops[k].second, p.comm, p.src, p.dst, p.tag}].push_back(k);
  }
  for (auto& [env, pos] : groups) {
    std::vector<std::pair<int, bool>> members;
    for (size_t k : pos) members.push_back(ops[k]);
    std::sort(members.begin(), members.end());
    for (size_t i = 0; i < pos.size(); ++i) ops[pos[i]] = members[i];
  }
  return ops;
}

void check_partition(const Op& op, const Pair& p, uint64_t round, size_t lo, size_t hi, const char* when) {
  const auto* b = reinterpret_cast<const uint8_t*>(op.buf);
  const uint64_t key = round_key(op.pair, round);
  for (size_t i = lo; i < hi; ++i) {
    if (b[i] == msgtest::pattern(key, i)) continue;
    PE_CHECK(false, "%s: pair %d (rank %d -> %d, tag %d, %d -> %d partitions, %zu bytes) round %llu: byte %zu is %u",
             when, op.pair, p.src, p.dst, p.tag, p.sparts, p.rparts, p.total, static_cast<unsigned long long>(round), i,
             static_cast<unsigned>(b[i]));
    return;
  }
}

void scenario_random(Runtime& rt, int rounds) {
  const int n = rt.size(), me = rt.rank();
  const uint64_t seed = job_seed(rt);
  std::mt19937_64 rng(seed);
  const std::vector<Pair> pairs = make_program(rng, n);
  std::mt19937_64 mine(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(me + 1)));
  std::vector<Pair> placed = pairs;
  size_t arena = 0;
  for (Pair& p : placed) {
    if (p.send_heap) p.send_at = std::exchange(arena, arena + (p.total + 63) / 64 * 64);
    if (p.recv_heap) p.recv_at = std::exchange(arena, arena + (p.total + 63) / 64 * 64);
  }
  char* heap = static_cast<char*>(rt.malloc(std::max<size_t>(arena, 64)));  // the same size on every PE
  {
    msg::Messenger m(rt);
    msg::Partitioned part(m, msg::PartitionedOptions{size_t(32) << 20});
    const size_t idle = part.pool_in_use();
    const msg::Comm comms[2] = {m.world(), m.world()};
    std::vector<Op> ops;
    for (auto [i, send] : init_order(mine, placed, me)) {
      const Pair& p = placed[static_cast<size_t>(i)];
      Op op{i, send, {}, nullptr, {}};
      if (send ? p.send_heap : p.recv_heap) {
        op.buf = heap + (send ? p.send_at : p.recv_at);
      } else {
        op.own.resize(p.total);
        op.buf = op.own.data();
      }
      const msg::Comm& c = comms[p.comm];
      op.req = send ? part.psend_init(c, op.buf, p.sparts, p.total / p.sparts, p.dst, p.tag)
                    : part.precv_init(c, op.buf, p.rparts, p.total / p.rparts, p.src, p.tag);
      PE_CHECK(op.req.staged() == (!send && !p.recv_heap), "pair %d: staged() is %d", i, op.req.staged());
      ops.push_back(std::move(op));
    }
    for (int r = 1; r <= rounds; ++r) {
      const auto round = static_cast<uint64_t>(r);
      for (Op& op : ops) {
        const Pair& p = placed[static_cast<size_t>(op.pair)];
        if (op.send) {
          msgtest::fill(op.buf, p.total, round_key(op.pair, round));
        } else {
          std::memset(op.buf, 0xa5, p.total);
        }
      }
      std::shuffle(ops.begin(), ops.end(), mine);
      for (Op& op : ops) op.req.start();
      // Actions in random order: each send's partitions in random groups, and parrived polls.
      struct Action {
        size_t op;
        std::vector<int> parts;
        int how;  // 0 pready each, 1 pready_list, 2 pready_range (a contiguous run), 3 parrived
      };
      std::vector<Action> actions;
      for (size_t k = 0; k < ops.size(); ++k) {
        const Pair& p = placed[static_cast<size_t>(ops[k].pair)];
        if (!ops[k].send) {
          for (int j = 0; j < 3; ++j) actions.push_back({k, {static_cast<int>(mine() % p.rparts)}, 3});
          continue;
        }
        std::vector<int> order(static_cast<size_t>(p.sparts));
        std::iota(order.begin(), order.end(), 0);
        if (mine() % 2) {
          // contiguous runs for pready_range
          for (size_t lo = 0; lo < order.size();) {
            const size_t len = 1 + mine() % (order.size() - lo);
            actions.push_back({k, std::vector<int>(order.begin() + lo, order.begin() + lo + len), 2});
            lo += len;
          }
        } else {
          std::shuffle(order.begin(), order.end(), mine);
          for (size_t lo = 0; lo < order.size();) {
            const size_t len = 1 + mine() % (order.size() - lo);
            actions.push_back(
                {k, std::vector<int>(order.begin() + lo, order.begin() + lo + len), static_cast<int>(mine() % 2)});
            lo += len;
          }
        }
      }
      std::shuffle(actions.begin(), actions.end(), mine);
      for (const Action& a : actions) {
        Op& op = ops[a.op];
        const Pair& p = placed[static_cast<size_t>(op.pair)];
        if (a.how == 3) {
          const int j = a.parts[0];
          if (op.req.parrived(j)) {
            const size_t each = p.total / p.rparts;
            check_partition(op, p, round, static_cast<size_t>(j) * each, static_cast<size_t>(j + 1) * each,
                            "after parrived");
          }
        } else if (a.how == 2) {
          op.req.pready_range(a.parts.front(), a.parts.back());
        } else if (a.how == 1) {
          op.req.pready_list(a.parts);
        } else {
          for (int i : a.parts) op.req.pready(i);
        }
      }
      std::shuffle(ops.begin(), ops.end(), mine);
      for (Op& op : ops) {
        if (mine() % 3 == 0) {
          while (!op.req.test()) part.progress();
        } else {
          op.req.wait();
        }
        PE_CHECK(!op.req.active(), "pair %d still active after its round completed", op.pair);
        const Pair& p = placed[static_cast<size_t>(op.pair)];
        if (!op.send) {
          check_partition(op, p, round, 0, p.total, "after wait");
          PE_CHECK(op.req.parrived(static_cast<int>(mine() % p.rparts)), "pair %d: parrived false after wait", op.pair);
        }
        PE_CHECK(op.req.round() == round, "pair %d: round %llu", op.pair,
                 static_cast<unsigned long long>(op.req.round()));
      }
    }
    std::shuffle(ops.begin(), ops.end(), mine);
    for (Op& op : ops) op.req.free();
    part.progress();  // the last announcements' blocks come back once their sends completed
    PE_CHECK(part.pool_in_use() == idle, "pool in use %zu after every request was freed (%zu before)",
             part.pool_in_use(), idle);
    if (me == 0) {
      std::printf("random: %zu pairs on %d PEs, %d rounds (seed %llu)\n", pairs.size(), n, rounds,
                  static_cast<unsigned long long>(seed));
    }
  }
  rt.free(heap);
}

// ---- bad input ----

void scenario_bad_input(Runtime& rt) {
  const int me = rt.rank(), n = rt.size(), right = (me + 1) % n, left = (me + n - 1) % n;
  msg::Messenger m(rt);
  msg::Partitioned part(m);
  const msg::Comm w = m.world();
  std::vector<char> out(4096), in(4096);
  const Errc arg = Errc::invalid_argument;
  expect_error("partitions 0", arg, "'partitions'", [&] { part.psend_init(w, out.data(), 0, 16, right, 1); });
  expect_error("partition_bytes 0", arg, "'partition_bytes'", [&] { part.precv_init(w, in.data(), 4, 0, left, 1); });
  expect_error("dest outside", arg, "'dest'", [&] { part.psend_init(w, out.data(), 4, 16, n, 1); });
  expect_error("PROC_NULL", arg, "'dest'", [&] { part.psend_init(w, out.data(), 4, 16, msg::kProcNull, 1); });
  expect_error("ANY_SOURCE", arg, "'source'", [&] { part.precv_init(w, in.data(), 4, 16, msg::kAnySource, 1); });
  expect_error("ANY_TAG", arg, "'tag'", [&] { part.precv_init(w, in.data(), 4, 16, left, msg::kAnyTag); });
  expect_error("null buffer", arg, "'buf'", [&] { part.psend_init(w, nullptr, 4, 16, right, 1); });
  expect_error("too large", arg, "'partition_bytes'",
               [&] { part.psend_init(w, out.data(), 1 << 20, size_t(1) << 40, right, 1); });
  expect_error("no communicator", arg, "'comm'", [&] { part.psend_init(msg::Comm(), out.data(), 4, 16, right, 1); });

  // Calls out of order, bad partitions; then a correct round on the same requests.
  msg::PartitionedRequest s = part.psend_init(w, out.data(), 8, 512, right, 2);
  msg::PartitionedRequest r = part.precv_init(w, in.data(), 4, 1024, left, 2);
  expect_error("pready before start", arg, "not active", [&] { s.pready(0); });
  expect_error("parrived before start", arg, "never started", [&] { r.parrived(0); });
  expect_error("pready on a receive", arg, "is a receive request", [&] { r.pready(0); });
  r.start();
  s.start();
  expect_error("start twice", arg, "still active", [&] { s.start(); });
  expect_error("parrived on a send", arg, "is a send request", [&] { s.parrived(0); });
  expect_error("partition -1", arg, "'partition'", [&] { s.pready(-1); });
  expect_error("partition 8", arg, "'partition'", [&] { s.pready(8); });
  expect_error("range past the end", arg, "'partition'", [&] { s.pready_range(6, 8); });
  expect_error("range reversed", arg, "'low'", [&] { s.pready_range(5, 4); });
  expect_error("list with a bad index", arg, "'partition'", [&] {
    const int bad[] = {1, 9};
    s.pready_list(bad);
  });
  expect_error("parrived 4", arg, "'partition'", [&] { r.parrived(4); });
  expect_error("free while active", arg, "still active: complete it with wait or test before freeing",
               [&] { s.free(); });
  msgtest::fill(out.data(), out.size(), 42 + static_cast<uint64_t>(me));
  s.pready_range(0, 3);
  expect_error("pready twice", arg, "already marked ready", [&] { s.pready(2); });
  s.pready_list(std::vector<int>{7, 5, 4, 6});
  s.wait();
  r.wait();
  PE_CHECK(msgtest::first_bad(in.data(), in.size(), 42 + static_cast<uint64_t>(left)) < 0, "round after bad input");
  expect_error("pready after wait", arg, "completed", [&] { s.pready(0); });
  PE_CHECK(r.parrived(3), "parrived after the round completed");
  s.free();
  r.free();
  expect_error("call after free", arg, "'request'", [&] { s.start(); });

  // Totals that differ: the receiver refuses the match; both sides say so.
  msg::PartitionedRequest s2 = part.psend_init(w, out.data(), 4, 100, right, 3);
  msg::PartitionedRequest r2 = part.precv_init(w, in.data(), 4, 101, left, 3);
  expect_error("sizes differ (receiver)", arg, "totals must be equal", [&] {
    r2.start();
    r2.wait();
  });
  expect_error("sizes differ (sender)", arg, "totals must be equal", [&] {
    s2.start();
    s2.pready_range(0, 3);
    s2.wait();
  });

  // A pool too small for the request.
  {
    msg::Partitioned tiny(m, msg::PartitionedOptions{4096});
    expect_error("pool full", Errc::out_of_memory, "pool_bytes",
                 [&] { tiny.precv_init(w, in.data(), 1, in.size(), left, 4); });
  }
  // Kernel handles exist on GPU PEs only.
  if (rt.pe_kind() == PeKind::host) {
    msg::PartitionedRequest s3 = part.psend_init(w, out.data(), 1, 16, right, 5);
    expect_error("device handle on a host PE", Errc::unsupported, "GPU PEs", [&] { (void)s3.device(); });
    msg::PartitionedRequest r3 = part.precv_init(w, in.data(), 1, 16, left, 5);
    r3.start();
    s3.start();
    s3.pready(0);
    s3.wait();
    r3.wait();
  }
  rt.barrier_all();
}

// ---- a wait that times out (GPUCOMM_TIMEOUT=2) ----

void scenario_timeout(Runtime& rt) {
  const int me = rt.rank();
  msg::Messenger m(rt);
  msg::Partitioned part(m);
  msg::Comm w = m.world();
  std::vector<char> buf(1024);
  uint64_t word = 0;
  if (me == 0) {
    msgtest::fill(buf.data(), buf.size(), 9);
    msg::PartitionedRequest s = part.psend_init(w, buf.data(), 4, 256, 1, 11);
    s.start();
    s.pready_range(0, 3);
    try {
      s.wait();
      PE_CHECK(false, "the send completed although its receiver never started");
    } catch (const Error& e) {
      const std::string text = e.what();
      for (const char* needle : {"rank 0 (communicator rank 0) partitioned send to rank 1 (world 1)", "tag 11",
                                 "round 1", "0 of 4 partitions sent", "has not started round 1", "GPUCOMM_TIMEOUT"}) {
        PE_CHECK(e.code() == Errc::timeout && text.find(needle) != std::string::npos,
                 "the timeout's diagnostic lacks \"%s\": %s: %s", needle, errc_name(e.code()), e.what());
      }
    }
    w.send(&word, sizeof word, 1, 99);  // the receiver starts now
    rt.barrier_all();                   // a failed wait is forgiven by a barrier of every PE after it
    s.wait();
  } else if (me == 1) {
    msg::PartitionedRequest r = part.precv_init(w, buf.data(), 2, 512, 0, 11);
    for (int i = 0; !w.iprobe(0, 99); ++i) {  // no blocking wait: those end at the 2 s timeout too
      PE_CHECK(i < 60000, "no word from rank 0 after its timeout");
      if (i >= 60000) return;
      usleep(1000);
    }
    (void)w.recv(&word, sizeof word, 0, 99);
    rt.barrier_all();
    r.start();
    r.wait();
    PE_CHECK(msgtest::first_bad(buf.data(), buf.size(), 9) < 0, "bytes after the timed-out wait completed");
  } else {
    rt.barrier_all();
  }
  rt.barrier_all();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: gpucomm_test_part_pe random|bad-input|timeout [--rounds N] [--node-per-pe]\n");
    return argc < 2 ? 2 : 0;
  }
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--node-per-pe") == 0) {
      const char* r = std::getenv("GPUCOMM_RANK");
      setenv("GPUCOMM_HOSTNAME", ("node" + std::string(r ? r : "0")).c_str(), 1);
    }
  }
  const int rounds = static_cast<int>(option(argc, argv, "--rounds", 4));
  return testing::run_scenario(argv[1],
                               {{"random", [&](Runtime& rt) { scenario_random(rt, rounds); }},
                                {"bad-input", scenario_bad_input},
                                {"timeout", scenario_timeout}},
                               [] { return "GPUCOMM_TEST_SEED=" + std::to_string(g_seed) + " replays"; });
}
