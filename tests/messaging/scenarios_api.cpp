// The host API across processes, call by call: groups (every PE sends rendezvous-sized messages
// to every PE before it receives: no deadlock), the stream-ordered forms outside a group, probes,
// matched probes, cancel, PROC_NULL, events, error-returning truncation, team communicators, the
// counters, sendrecv, testany, waitsome, dup and split.
#include <cstring>
#include <string>
#include <vector>

#include "msg_pe_common.hpp"

namespace gpucomm::msgtest {

namespace {

void check_groups(Runtime& rt, msg::Messenger& m, msg::Comm& w) {
  const int me = rt.rank(), n = rt.size();
  const size_t big = 300000;  // rendezvous through staging: needs both sides' progress
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(n)), in(static_cast<size_t>(n));
  std::vector<msg::Status> st(static_cast<size_t>(n));
  m.group_start();
  for (int d = 0; d < n; ++d) {
    out[static_cast<size_t>(d)].resize(big);
    fill(out[static_cast<size_t>(d)].data(), big, msg_key(me, d, 7, 1));
    w.send_on_stream(out[static_cast<size_t>(d)].data(), big, d, 7, nullptr);
  }
  for (int s = 0; s < n; ++s) {
    in[static_cast<size_t>(s)].assign(big, 0);
    w.recv_on_stream(in[static_cast<size_t>(s)].data(), big, s, 7, nullptr, &st[static_cast<size_t>(s)]);
  }
  m.group_end();
  for (int s = 0; s < n; ++s) {
    PE_CHECK(st[static_cast<size_t>(s)].source == s && st[static_cast<size_t>(s)].bytes == big, "group from %d: status",
             s);
    PE_CHECK(first_bad(in[static_cast<size_t>(s)].data(), big, msg_key(s, me, 7, 1)) < 0, "group from %d: bytes", s);
  }
  // Outside a group the stream-ordered forms run at once on host-memory PEs.
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  uint64_t v = static_cast<uint64_t>(me) * 1000, got = 0;
  msg::Request r = w.irecv(&got, 8, left, 8);
  w.send_on_stream(&v, 8, right, 8, nullptr);
  m.wait(r);
  PE_CHECK(got == static_cast<uint64_t>(left) * 1000, "ring over send_on_stream: got %llu",
           static_cast<unsigned long long>(got));
  rt.barrier_all();
}

void check_probes_and_cancel(Runtime& rt, msg::Messenger& m, msg::Comm& w) {
  const int me = rt.rank(), n = rt.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<uint8_t> a(100), b(5000);
  fill(a.data(), a.size(), msg_key(me, right, 3, 0));
  fill(b.data(), b.size(), msg_key(me, right, 4, 0));
  msg::Request s1 = w.isend(a.data(), a.size(), right, 3);
  msg::Request s2 = w.isend(b.data(), b.size(), right, 4);
  // probe leaves the message in place; mprobe takes it off the queue.
  const msg::Status p = w.probe(left, 4);
  PE_CHECK(p.source == left && p.tag == 4 && p.bytes == 5000, "probe: source %d tag %d bytes %llu", p.source, p.tag,
           static_cast<unsigned long long>(p.bytes));
  msg::Status ms{};
  msg::Message msg = w.mprobe(msg::kAnySource, 3, &ms);
  PE_CHECK(ms.source == left && ms.bytes == 100, "mprobe: source %d bytes %llu", ms.source,
           static_cast<unsigned long long>(ms.bytes));
  PE_CHECK(!w.iprobe(left, 3), "iprobe still sees the message mprobe took");
  std::vector<uint8_t> in(5000);
  msg::Status r1 = w.mrecv(in.data(), in.size(), msg);
  PE_CHECK(r1.bytes == 100 && first_bad(in.data(), 100, msg_key(left, me, 3, 0)) < 0, "mrecv: bytes");
  msg::Status r2 = w.recv(in.data(), in.size(), left, 4);
  PE_CHECK(r2.bytes == 5000 && first_bad(in.data(), 5000, msg_key(left, me, 4, 0)) < 0, "recv after probe: bytes");
  m.wait(s1);
  m.wait(s2);
  // A receive nobody sends to: cancel completes it with kErrCancelled.
  msg::Request never = w.irecv(in.data(), 8, left, 99);
  m.cancel(never);
  const msg::Status c = m.wait(never);
  PE_CHECK(c.error == msg::kErrCancelled, "cancel: error %d", c.error);
  // PROC_NULL: at once, nothing queued.
  const msg::Status pn = w.recv(in.data(), 8, msg::kProcNull, 1);
  PE_CHECK(pn.source == msg::kProcNull && pn.bytes == 0, "PROC_NULL recv: source %d", pn.source);
  w.send(in.data(), 8, msg::kProcNull, 1);
  msg::Request pr = w.isend(in.data(), 8, msg::kProcNull, 1);
  PE_CHECK(m.test(pr), "PROC_NULL isend not complete at once");
  rt.barrier_all();
}

void check_events_and_counters(Runtime& rt, msg::Messenger& m, msg::Comm& w) {
  const int me = rt.rank(), n = rt.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const msg::Counters before = w.counters();
  msg::Event ev = m.make_event();
  std::vector<uint64_t> out(10), in(10);
  std::vector<msg::Request> rs;
  for (int i = 0; i < 10; ++i) {
    out[static_cast<size_t>(i)] = static_cast<uint64_t>(i) + static_cast<uint64_t>(me) * 100;
    rs.push_back(w.irecv(&in[static_cast<size_t>(i)], 8, left, i, &ev));
  }
  for (int i = 0; i < 10; ++i) rs.push_back(w.isend(&out[static_cast<size_t>(i)], 8, right, i, &ev));
  m.event_wait(ev, 20);
  PE_CHECK(m.event_value(ev) == 20, "event counted %llu", static_cast<unsigned long long>(m.event_value(ev)));
  m.waitall(rs);
  for (int i = 0; i < 10; ++i)
    PE_CHECK(in[static_cast<size_t>(i)] == static_cast<uint64_t>(i + left * 100), "event round: message %d", i);
  const msg::Counters after = w.counters();
  PE_CHECK(after.sent - before.sent == 10, "counters: sent %llu",
           static_cast<unsigned long long>(after.sent - before.sent));
  PE_CHECK(after.received - before.received == 10, "counters: received %llu",
           static_cast<unsigned long long>(after.received - before.received));
  PE_CHECK(after.matches >= before.matches + 10, "counters: matches");
  rt.barrier_all();
}

void check_truncation_returned(Runtime& rt, msg::Messenger& m) {
  const int me = rt.rank(), n = rt.size();
  msg::CommOptions o;
  o.errors_return = true;
  msg::Comm c = m.world(o);
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  for (size_t bytes : {size_t(16), size_t(1000), size_t(100000)}) {
    std::vector<uint8_t> out(bytes), in(bytes / 2 + 8, 0xee);
    fill(out.data(), bytes, msg_key(me, right, 5, bytes));
    msg::Request s = c.isend(out.data(), bytes, right, 5);
    const msg::Status st = c.recv(in.data(), bytes / 2, left, 5);
    PE_CHECK(st.error == msg::kErrTruncated && st.bytes == bytes / 2, "truncated %zu: error %d bytes %llu", bytes,
             st.error, static_cast<unsigned long long>(st.bytes));
    PE_CHECK(first_bad(in.data(), bytes / 2, msg_key(left, me, 5, bytes)) < 0, "truncated %zu: the start", bytes);
    PE_CHECK(in[bytes / 2] == 0xee, "truncated %zu: wrote past the buffer", bytes);
    m.wait(s);
  }
  rt.barrier_all();
}

// A communicator on a split team: ranks are team ranks; the world communicator's traffic with the
// same tags does not mix with it.
void check_team_comm(Runtime& rt, msg::Messenger& m, msg::Comm& w) {
  const int me = rt.rank();
  const Team half = rt.split(rt.world(), me % 2, -me);  // reversed order inside each half
  msg::Comm c = m.create(half);
  PE_CHECK(c.size() == half.size() && c.rank() == half.rank(), "team communicator rank %d size %d", c.rank(), c.size());
  PE_CHECK(c.context_id() != w.context_id(), "team communicator shares context id %d", c.context_id());
  const int right = (c.rank() + 1) % c.size(), left = (c.rank() + c.size() - 1) % c.size();
  uint64_t v = 1000 + static_cast<uint64_t>(me), got = 0, gotw = 0;
  msg::Request rw = w.irecv(&gotw, 8, msg::kAnySource, 9);
  msg::Request rc = c.irecv(&got, 8, left, 9);
  c.send(&v, 8, right, 9);
  m.wait(rc);
  PE_CHECK(got == 1000 + static_cast<uint64_t>(half.world_rank(left)), "team message from team rank %d: %llu", left,
           static_cast<unsigned long long>(got));
  PE_CHECK(!m.test(rw), "a team message reached the world communicator");
  m.cancel(rw);
  m.wait(rw);
  rt.barrier_all();
}

// sendrecv around the ring (every PE at once: no deadlock), testany and waitsome on receives that
// complete in a known order, dup (same options, own context id) and split (by parity, reversed key).
void check_completion_and_comm_calls(Runtime& rt, msg::Messenger& m, msg::Comm& w) {
  const int me = rt.rank(), n = rt.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  for (const size_t bytes : {size_t{8}, size_t{300000}}) {
    std::vector<uint8_t> out(bytes), in(bytes, 0);
    fill(out.data(), bytes, msg_key(me, right, 12, bytes));
    const msg::Status st = w.sendrecv(out.data(), bytes, right, 12, in.data(), bytes, left, 12);
    PE_CHECK(st.source == left && st.tag == 12 && st.bytes == bytes && st.error == msg::kErrNone,
             "sendrecv %zu: source %d bytes %llu", bytes, st.source, static_cast<unsigned long long>(st.bytes));
    PE_CHECK(first_bad(in.data(), bytes, msg_key(left, me, 12, bytes)) < 0, "sendrecv %zu: bytes", bytes);
  }
  uint64_t got[3] = {}, one = 1;
  msg::Request rs[3];
  for (int i = 0; i < 3; ++i) rs[i] = w.irecv(&got[i], 8, left, 30 + i);
  int index = 0;
  PE_CHECK(!m.testany(rs, &index) && index == -1, "testany before any send: index %d", index);
  rt.barrier_all();  // no PE sends before every PE looked
  w.send(&one, 8, right, 31);
  msg::Status st{};
  while (!m.testany(rs, &index, &st)) {
  }
  PE_CHECK(index == 1 && st.tag == 31 && rs[1].null(), "testany: index %d tag %d", index, st.tag);
  rt.barrier_all();  // the other tags only after every PE found this one
  w.send(&one, 8, right, 30);
  w.send(&one, 8, right, 32);
  int idx[3] = {}, done = 0;
  msg::Status sts[3];
  while (done < 2) {
    const int k = m.waitsome(rs, idx, sts);
    PE_CHECK(k >= 1, "waitsome returned %d", k);
    for (int i = 0; i < k; ++i) PE_CHECK(sts[i].tag == 30 + idx[i], "waitsome: index %d tag %d", idx[i], sts[i].tag);
    done += k;
  }
  PE_CHECK(m.waitsome(rs, idx) == -1 && m.testany(rs, &index) && index == -1, "every request null");

  msg::Comm d = w.dup();
  PE_CHECK(d.context_id() != w.context_id() && d.mode() == w.mode() && d.size() == n, "dup: context %d",
           d.context_id());
  msg::Comm half = w.split(me % 2, -me);
  int members = 0, above = 0;
  for (int r = me % 2; r < n; r += 2) {
    ++members;
    above += r > me ? 1 : 0;
  }
  PE_CHECK(half.valid() && half.size() == members && half.rank() == above, "split: rank %d of %d", half.rank(),
           half.size());
  uint64_t v = static_cast<uint64_t>(me), from = 0;
  half.sendrecv(&v, 8, (half.rank() + 1) % half.size(), 2, &from, 8, (half.rank() + half.size() - 1) % half.size(), 2);
  PE_CHECK(static_cast<int>(from) % 2 == me % 2, "split: a message from world rank %llu",
           static_cast<unsigned long long>(from));
  PE_CHECK(!w.split(-1, 0).valid(), "split with a negative color made a communicator");
  rt.barrier_all();
}

}  // namespace

void scenario_api(Runtime& rt, const Options&) {
  msg::Messenger m(rt);
  msg::Comm w = m.world();
  check_groups(rt, m, w);
  check_probes_and_cancel(rt, m, w);
  check_events_and_counters(rt, m, w);
  check_truncation_returned(rt, m);
  check_team_comm(rt, m, w);
  check_completion_and_comm_calls(rt, m, w);
}

}  // namespace gpucomm::msgtest
