"""gpucomm.messaging.Endpoints (the fast lane) from Python on 1, 2 and 3 host-memory PEs under
``gpucomm run`` (numpy arrays): a ring exchange, wildcards and per-sender order, probes, truncation,
cancel, a reopen that keeps unexpected messages, and bad arguments."""
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
        with M.Endpoints(rt, endpoints=2, slots=8, max_bytes=64) as eps:
            me, n = rt.rank, rt.size
            right, left = (me + 1) % n, (me - 1) % n
            assert (eps.endpoints, eps.slots, eps.max_bytes) == (2, 8, 64)
            with eps.own(0) as owner:
                assert owner.endpoint == 0
                # A ring: every PE sends to endpoint 0 of its right neighbour.
                for k in range(40):  # five rings' worth through one 8-slot ring
                    eps.send(np.full(4, me * 100 + k, dtype=np.int32), right, 0, k % 3)
                    buf = np.zeros(4, dtype=np.int32)
                    st = owner.recv(buf, left, M.ANY_TAG)
                    assert (st.source, st.tag, st.bytes, st.error) == (left, k % 3, 16, "none"), st
                    assert (buf == left * 100 + k).all(), (k, buf)
                rt.barrier_all()
                # Posted ahead, completed out of order; ANY_SOURCE.
                ids = [owner.irecv(np.zeros(2, dtype=np.int64), M.ANY_SOURCE, t) for t in (7, 8)]
                eps.send(np.array([1, 2], dtype=np.int64), right, 0, 8)
                eps.send(np.array([3, 4], dtype=np.int64), right, 0, 7)
                st8 = owner.wait(ids[1])
                st7 = owner.wait(ids[0])
                assert st8.tag == 8 and st7.tag == 7 and st7.source == left, (st7, st8)
                # waitall: statuses in the order of the ids; a request named twice is refused.
                bufs = [np.zeros(1, dtype=np.int64) for _ in range(3)]
                ids = [owner.irecv(bufs[t], left, 20 + t) for t in range(3)]
                for t in (2, 0, 1):
                    eps.send(np.array([t], dtype=np.int64), right, 0, 20 + t)
                sts = owner.waitall(ids[::-1])
                assert [s.tag for s in sts] == [22, 21, 20] and [int(b[0]) for b in bufs] == [0, 1, 2], sts
                r = owner.irecv(np.zeros(1), left, 30)
                try:
                    owner.waitall([r, r])
                    raise AssertionError("waitall took the same request twice")
                except gpucomm.InvalidArgumentError as e:
                    assert "ids[1]" in str(e) and "named before" in str(e), e
                owner.cancel(r)
                assert owner.wait(r).error == "cancelled"
                # Probe, then truncation into a short buffer.
                eps.send(np.arange(8, dtype=np.int64), right, 0, 5)
                st = owner.probe(left, 5)
                assert st.bytes == 64 and owner.iprobe(left, 6) is None, st
                small = np.zeros(2, dtype=np.int64)
                st = owner.recv(small, left, 5)
                assert st.error == "truncated" and st.bytes == 64 and list(small) == [0, 1], (st, small)
                # cancel and test.
                r = owner.irecv(np.zeros(1), left, 99)
                assert owner.test(r) is None
                owner.cancel(r)
                assert owner.wait(r).error == "cancelled"
                rt.barrier_all()
            # A reopen keeps unexpected messages, in order.
            for t in (1, 2, 3):
                eps.send(np.array([t], dtype=np.int32), right, 1, t)
            with eps.own(1) as o:
                b = np.zeros(1, dtype=np.int32)
                assert o.recv(b, left, 2).tag == 2 and b[0] == 2
            with eps.own(1) as o:
                assert o.recv(b, left).tag == 1 and b[0] == 1
                assert o.recv(b, left).tag == 3 and b[0] == 3
            rt.barrier_all()
            # Bad arguments name what is wrong.
            for call, needle in ((lambda: eps.send(np.zeros(1), n, 0, 1), "pe"),
                                 (lambda: eps.send(np.zeros(1), 0, 5, 1), "ep 5"),
                                 (lambda: eps.send(np.zeros(1), 0, 0, -4), "tag -4"),
                                 (lambda: eps.send(np.zeros(9), 0, 0, 1), "max_bytes"),
                                 (lambda: eps.own(2), "ep 2")):
                try:
                    call()
                except gpucomm.Error as e:
                    assert needle in str(e), (needle, str(e))
                else:
                    raise AssertionError("no error for " + needle)
            with eps.own(0) as o:
                try:
                    eps.own(0)
                except gpucomm.Error as e:
                    assert "already owned" in str(e), str(e)
                else:
                    raise AssertionError("owned twice")
            rt.barrier_all()
    print("PE OK", me)
""")


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_endpoints_on_host_pes(gpucomm_env, tmp_path, np_):
    pytest.importorskip("numpy")
    script = tmp_path / "endpoints.py"
    script.write_text(SCRIPT)
    env = {**gpucomm_env, "GPUCOMM_DEVICE": "host", "GPUCOMM_TIMEOUT": "30"}
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", str(np_), "--", sys.executable, str(script)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PE OK") == np_, r.stdout
