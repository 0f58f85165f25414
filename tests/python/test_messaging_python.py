"""gpucomm.messaging from Python on 1, 2 and 3 host-memory PEs under ``gpucomm run`` (numpy arrays):
blocking and non-blocking calls, wildcards and per-sender order, probes, matched probes, cancel,
PROC_NULL, events, team communicators, counters and bad arguments."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import numpy as np
    import gpucomm

    M = gpucomm.messaging
    with gpucomm.Runtime() as rt:
        with M.Messenger(rt) as m:
            w = m.world()
            me, n = w.rank, w.size
            right, left = (me + 1) % n, (me - 1) % n
            assert w.mode == "mpi" and w.context_id >= 0

            # Blocking and non-blocking, eager and rendezvous sizes; every byte checked.
            for count in (0, 3, 200, 100000):
                out = (np.arange(count, dtype=np.int64) * 7 + me)
                inp = np.zeros(count, dtype=np.int64)
                r = w.irecv(inp, left, 5)
                s = w.isend(out, right, 5)
                st = m.wait(r)
                m.wait(s)
                assert r.null and s.null
                assert (st.source, st.tag, st.bytes, st.error) == (left, 5, 8 * count, "none"), st
                assert (inp == np.arange(count, dtype=np.int64) * 7 + left).all(), count

            # Per-sender order with wildcards: ANY_TAG receives see the sends in order.
            reqs = [w.isend(np.full(4, k, dtype=np.int32), right, k % 3) for k in range(20)]
            for k in range(20):
                buf = np.zeros(4, dtype=np.int32)
                st = w.recv(buf, left, M.ANY_TAG)
                assert buf[0] == k and st.tag == k % 3, (k, buf, st)
            assert len(m.waitall(reqs)) == 20

            # Probes, matched probes, cancel, PROC_NULL.
            s = w.isend(np.arange(10, dtype=np.float64), right, 9)
            st = w.probe(left, 9)
            assert st.bytes == 80 and st.source == left, st
            msg, st2 = w.mprobe(M.ANY_SOURCE, 9)
            assert st2.bytes == 80
            assert w.iprobe(left, 9) is None
            got = np.zeros(10)
            assert w.mrecv(got, msg).bytes == 80 and (got == np.arange(10)).all()
            m.wait(s)
            never = w.irecv(np.zeros(2), left, 77)
            m.cancel(never)
            assert m.wait(never).error == "cancelled"
            assert w.recv(np.zeros(1), M.PROC_NULL, 1).source == M.PROC_NULL

            # Events and waitany.
            ev = m.make_event()
            bufs = [np.zeros(2, dtype=np.int64) for _ in range(4)]
            rs = [w.irecv(b, left, 20 + i, event=ev) for i, b in enumerate(bufs)]
            for i in range(4):
                w.send(np.array([i, me], dtype=np.int64), right, 20 + i)
            m.event_wait(ev, 4)
            assert m.event_value(ev) == 4
            seen = set()
            while True:
                i, st = m.waitany(rs)
                if i < 0:
                    break
                seen.add(i)
                assert bufs[i][0] == i and bufs[i][1] == left
            assert seen == {0, 1, 2, 3}

            # Truncation returned in Status on an error-returning communicator; a team communicator.
            er = m.world(errors_return=True)
            s = er.isend(np.ones(16, dtype=np.uint8), right, 1)
            st = er.recv(np.zeros(8, dtype=np.uint8), left, 1)
            assert st.error == "truncated" and st.bytes == 8, st
            m.wait(s)
            t = rt.split(rt.world, me % 2, me)
            tc = m.create(t, mode="no_any_source")
            tr = tc.rank
            tc.send(np.array([tr], dtype=np.int32), (tr + 1) % tc.size, 3)
            back = np.zeros(1, dtype=np.int32)
            assert tc.recv(back, (tr - 1) % tc.size, 3).error == "none" and back[0] == (tr - 1) % tc.size

            k = w.counters()
            assert k["sent"] > 0 and k["received"] > 0 and k["rendezvous"] > 0, k

            # Active messages: a request to the right neighbour, answered by its handler.
            m.register_am([4, 6])
            got_asks, got_answers = [], []

            def handler(a):
                if a.id == 4:
                    got_asks.append((a.source, bytes(a.payload)))
                    assert a.wants_reply
                    w.am_reply(a, 6, np.frombuffer(a.payload, dtype=np.uint8)[::-1].copy())
                else:
                    got_answers.append((a.source, bytes(a.payload)))

            w.am_request(right, 4, np.array([me, 1, 2], dtype=np.uint8), poll=handler)
            while not got_asks or not got_answers:
                m.am_poll(handler)
            assert got_asks == [(left, bytes([left, 1, 2]))], got_asks
            assert got_answers == [(right, bytes([2, 1, me]))], got_answers
            rt.barrier_all()
            assert w.counters()["active"] == 2

            # Bad arguments name what is wrong.
            for call, want in ((lambda: w.send(np.zeros(1), n, 0), "dest"),
                               (lambda: w.send(np.zeros(1), right, -5), "tag"),
                               (lambda: tc.recv(np.zeros(1), M.ANY_SOURCE, 0), "ANY_SOURCE"),
                               (lambda: m.world(mode="fast"), "mode")):
                try:
                    call()
                except (ValueError, RuntimeError) as exc:
                    assert want in str(exc), (want, str(exc))
                else:
                    raise AssertionError("no error for " + want)
            rt.barrier_all()
        print(f"PY OK rank {me}")
""")


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_messaging_on_host_pes(gpucomm_env, tmp_path, np_):
    script = tmp_path / "messaging_script.py"
    script.write_text(SCRIPT)
    env = dict(gpucomm_env, GPUCOMM_DEVICE="host", GPUCOMM_HEAP_SIZE="32M", GPUCOMM_TIMEOUT="60")
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", str(np_), "--", sys.executable, str(script)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PY OK") == np_, r.stdout + r.stderr


CLOSED_SCRIPT = textwrap.dedent("""
    import numpy as np
    import gpucomm

    rt = gpucomm.Runtime()
    m = gpucomm.messaging.Messenger(rt)
    w = m.world()
    rt.close()  # before the Messenger: its calls raise instead of touching a finalized Runtime
    for call in (lambda: w.send(np.zeros(2), 0, 1), lambda: m.progress()):
        try:
            call()
        except ValueError as exc:
            assert "was closed" in str(exc), exc
        else:
            raise AssertionError("no error after Runtime.close")
    m.close()
    print("PY OK")
""")


def test_messaging_after_runtime_close_raises(gpucomm_env, tmp_path):
    script = tmp_path / "closed_script.py"
    script.write_text(CLOSED_SCRIPT)
    env = dict(gpucomm_env, GPUCOMM_DEVICE="host", GPUCOMM_TIMEOUT="30")
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", "1", "--", sys.executable, str(script)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "PY OK" in r.stdout, r.stdout + r.stderr
