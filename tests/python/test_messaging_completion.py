"""gpucomm.messaging's completion and communicator calls from Python on 1, 2 and 3 host-memory PEs
under ``gpucomm run``: sendrecv around a ring in both directions at once, testany, testall,
waitsome, imrecv, Comm.dup and Comm.split (and the error when the 64 context ids are used up), and
the Status a truncated receive leaves on an errors_return communicator (source, tag, received count)
with the communicator still usable afterwards; a no_unexpected communicator: pre-posted receives
work, a message that finds no receive ends the job with the documented error."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from gpus import gpu_count

SCRIPT = textwrap.dedent("""
    import numpy as np
    import gpucomm

    M = gpucomm.messaging
    with gpucomm.Runtime() as rt:
        with M.Messenger(rt) as m:
            w = m.world()
            me, n = w.rank, w.size
            right, left = (me + 1) % n, (me - 1) % n

            # sendrecv: every rank sends right and receives from the left at once, eager and rendezvous.
            for count in (0, 5, 50000):
                out = np.arange(count, dtype=np.int64) + 1000 * me
                inp = np.full(count, -1, dtype=np.int64)
                st = w.sendrecv(out, right, 11, inp, left, 11)
                assert (st.source, st.tag, st.bytes, st.error) == (left, 11, 8 * count, "none"), st
                assert (inp == np.arange(count, dtype=np.int64) + 1000 * left).all(), count
            st = w.sendrecv(np.zeros(1), M.PROC_NULL, 1, np.zeros(1), M.PROC_NULL, 1)
            assert st.source == M.PROC_NULL, st

            # testany / testall / waitsome on receives that complete in a known order.
            bufs = [np.zeros(1, dtype=np.int32) for _ in range(3)]
            rs = [w.irecv(b, left, 30 + i) for i, b in enumerate(bufs)]
            assert m.testany(rs) is None and m.testall(rs) is None
            rt.barrier_all()  # no PE sends before every PE looked
            w.send(np.array([1], dtype=np.int32), right, 31)
            got = None
            while got is None:
                got = m.testany(rs)
            assert got[0] == 1 and got[1].tag == 31 and bufs[1][0] == 1 and rs[1].null, got
            rt.barrier_all()  # the other tags only after every PE found this one
            for i in (0, 2):
                w.send(np.array([i], dtype=np.int32), right, 30 + i)
            done = {}
            while len(done) < 2:
                for i, st in m.waitsome(rs):
                    assert st.tag == 30 + i and st.source == left, (i, st)
                    done[i] = st
            assert sorted(done) == [0, 2] and all(r.null for r in rs)
            assert m.waitsome(rs) == [] and m.testany(rs)[0] == -1 and len(m.testall(rs)) == 3

            # imrecv of a matched-probed message.
            s = w.isend(np.arange(6, dtype=np.float32), right, 40)
            msg, st = w.mprobe(left, 40)
            into = np.zeros(6, dtype=np.float32)
            r = w.imrecv(into, msg)
            assert m.wait(r).bytes == 24 and (into == np.arange(6)).all()
            m.wait(s)

            # dup keeps the options and separates the traffic; split by parity, ordered by key.
            er = m.world(mode="no_any_source", errors_return=True)
            d = er.dup()
            assert d.context_id != er.context_id and d.mode == "no_any_source" and d.size == n
            s1 = d.isend(np.array([7], dtype=np.int8), right, 1)
            s2 = er.isend(np.array([8], dtype=np.int8), right, 1)
            a, b = np.zeros(1, dtype=np.int8), np.zeros(1, dtype=np.int8)
            er.recv(a, left, 1)
            d.recv(b, left, 1)
            assert (a[0], b[0]) == (8, 7), (a, b)
            m.waitall([s1, s2])
            half = w.split(me % 2, -me)  # reversed key: the highest world rank first
            members = [r for r in range(n) if r % 2 == me % 2]
            assert half.size == len(members) and half.rank == sorted(members, reverse=True).index(me)
            one = np.array([me], dtype=np.int64)
            got = np.zeros(1, dtype=np.int64)
            half.sendrecv(one, (half.rank + 1) % half.size, 2, got, (half.rank - 1) % half.size, 2)
            assert got[0] in members
            assert w.split(-1, 0) is None

            # Truncation on the errors_return communicator: the Status says what arrived, and the
            # communicator goes on working.
            s = er.isend(np.arange(16, dtype=np.uint8), right, 5)
            small = np.zeros(8, dtype=np.uint8)
            st = er.recv(small, left, 5)
            assert (st.source, st.tag, st.bytes, st.error) == (left, 5, 8, "truncated"), st
            assert (small == np.arange(8)).all()
            m.wait(s)
            st = er.sendrecv(np.array([me], dtype=np.int64), right, 6, got, left, 6)
            assert st.error == "none" and got[0] == left

            # Context ids run out: a clear error naming the limit, then the communicator still works.
            made = []
            try:
                for _ in range(70):
                    made.append(w.dup())
            except (RuntimeError, MemoryError, ValueError) as exc:
                assert "64" in str(exc) and "context" in str(exc), str(exc)
            else:
                raise AssertionError("70 dups succeeded")
            assert len(made) >= 50, len(made)
            del made
            rt.barrier_all()
        print(f"PY OK rank {me}")
""")


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_completion_calls_on_host_pes(gpucomm_env, tmp_path, np_):
    script = tmp_path / "completion_script.py"
    script.write_text(SCRIPT)
    env = dict(gpucomm_env, GPUCOMM_DEVICE="host", GPUCOMM_HEAP_SIZE="32M", GPUCOMM_TIMEOUT="60")
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", str(np_), "--", sys.executable, str(script)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PY OK") == np_, r.stdout + r.stderr


NO_UNEXPECTED_SCRIPT = textwrap.dedent("""
    import sys
    import time
    import numpy as np
    import gpucomm

    M = gpucomm.messaging
    violate = sys.argv[1] == "violate"
    with gpucomm.Runtime() as rt, M.Messenger(rt) as m:
        w = m.world(mode="no_unexpected")
        if not violate:  # receives posted before the sends (the barrier orders them): no error
            got = np.zeros(4)
            r = w.irecv(got, 1 - w.rank, 3)
            rt.barrier_all()
            w.send(np.arange(4.0) + w.rank, 1 - w.rank, 3)
            assert m.wait(r).error == "none" and (got == np.arange(4.0) + 1 - w.rank).all()
        elif w.rank == 0:
            w.send(np.arange(4.0), 1, 3)
        else:
            time.sleep(0.5)
            m.progress()  # the message with no receive: the documented error
        rt.barrier_all()
        print(f"PY OK rank {w.rank}")
""")


@pytest.mark.parametrize("case", ["keep", "violate"])
def test_no_unexpected_mode_on_host_pes(gpucomm_env, tmp_path, case):
    script = tmp_path / "no_unexpected_script.py"
    script.write_text(NO_UNEXPECTED_SCRIPT)
    env = dict(gpucomm_env, GPUCOMM_DEVICE="host", GPUCOMM_TIMEOUT="30")
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", "2", "--", sys.executable, str(script), case],
                       env=env, capture_output=True, text=True, timeout=120)
    if case == "keep":
        assert r.returncode == 0 and r.stdout.count("PY OK") == 2, r.stdout + r.stderr
    else:
        assert r.returncode != 0 and "PY OK" not in r.stdout, r.stdout + r.stderr
        assert "found no posted receive" in r.stderr and "no_unexpected" in r.stderr, r.stderr
        assert "tag 3" in r.stderr and "from rank 0" in r.stderr, r.stderr


GPU_SCRIPT = textwrap.dedent("""
    import numpy as np
    import torch
    import gpucomm

    M = gpucomm.messaging
    with gpucomm.Runtime() as rt, M.Messenger(rt) as m:
        w = m.world(errors_return=True)
        me, n = w.rank, w.size
        right, left = (me + 1) % n, (me - 1) % n
        # A truncated receive into device memory: the Status says what arrived; the job goes on.
        a = torch.arange(16, dtype=torch.uint8, device="cuda")
        b = torch.zeros(8, dtype=torch.uint8, device="cuda")
        s = w.isend(a, right, 5)
        st = w.recv(b, left, 5)
        assert (st.source, st.tag, st.bytes, st.error) == (left, 5, 8, "truncated"), st
        assert (b.cpu() == torch.arange(8, dtype=torch.uint8)).all()
        m.wait(s)
        # sendrecv on host arrays (staged) and on device arrays.
        got = np.zeros(4)
        st = w.sendrecv(np.full(4, 1000.0 + me), right, 7, got, left, 7)
        assert st.error == "none" and (got == 1000 + left).all(), (st, got)
        out = torch.full((4,), float(me), dtype=torch.float64, device="cuda")
        inp = torch.zeros(4, dtype=torch.float64, device="cuda")
        st = w.sendrecv(out, right, 8, inp, left, 8)
        assert st.bytes == 32 and (inp.cpu() == left).all(), (st, inp)
        # testany, waitsome, testall on device buffers; dup and split.
        bufs = [torch.zeros(1, dtype=torch.int32, device="cuda") for _ in range(3)]
        rs = [w.irecv(x, left, 30 + i) for i, x in enumerate(bufs)]
        rt.barrier_all()
        for i in range(3):
            w.send(torch.full((1,), i, dtype=torch.int32, device="cuda"), right, 30 + i)
        done = set()
        while len(done) < 3:
            for i, st in m.waitsome(rs):
                assert st.tag == 30 + i and bufs[i].item() == i, (i, st)
                done.add(i)
        assert m.testany(rs)[0] == -1 and len(m.testall(rs)) == 3
        d = w.dup()
        h = w.split(me % 2, 0)
        assert d.context_id != w.context_id and h.size == len(range(me % 2, n, 2))
        rt.barrier_all()
    print(f"PY OK rank {me}")
""")


@pytest.mark.parametrize("np_", [1, 2])
def test_completion_calls_on_gpu_pes(gpucomm_env, tmp_path, np_):
    """GPU PEs (two PEs share GPU 0 when there is one: a functional test): truncation into device
    memory on an errors_return communicator, sendrecv on host and device arrays, waitsome, testany,
    testall, dup and split."""
    if gpu_count() < 1:
        pytest.skip("SKIPPED: needs a GPU (no GPU here)")
    pytest.importorskip("torch")
    script = tmp_path / "completion_gpu_script.py"
    script.write_text(GPU_SCRIPT)
    env = dict(gpucomm_env, GPUCOMM_DEVICE="gpu", GPUCOMM_HEAP_SIZE="64M", GPUCOMM_TIMEOUT="60",
               CUDA_VISIBLE_DEVICES="0")
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", str(np_), "--", sys.executable, str(script)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PY OK") == np_, r.stdout + r.stderr
