"""gpucomm.collectives from Python on 3 PEs under ``gpucomm run``: numpy on host-memory PEs (always),
torch or cupy tensors on GPU PEs where a GPU exists (on torch's current stream, ordered against
torch's own work on it)."""
from __future__ import annotations

import sys
import textwrap

import pytest

from gpus import gpu_count

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import gpucomm
    from gpucomm.collectives import Collectives

    kind = sys.argv[1]
    with gpucomm.Runtime() as rt:
        me, n = rt.rank, rt.size
        with Collectives(rt) as coll:
            if kind == "host":
                xp, host = np, (lambda a: a)
                mk = lambda a: a
            else:
                try:
                    import torch
                    xp = None
                    dev = torch.device("cuda", rt.device_id)
                    mk = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(dev)
                    host = lambda t: t.cpu().numpy()
                except ImportError:
                    import cupy
                    xp = cupy
                    mk = cupy.asarray
                    host = cupy.asnumpy
            base = np.arange(1000, dtype=np.float32)
            # allreduce in place and out of place, every algorithm the model offers
            for algo in ["auto", "oneshot", "twoshot", "ring", "multiring"]:
                x = mk(base + me)
                coll.allreduce(x, algorithm=algo)
                assert (host(x) == n * base + n * (n - 1) / 2).all(), algo
            y = coll.allreduce(mk(np.full(7, me + 1, np.int64)), mk(np.zeros(7, np.int64)), op="max")
            assert (host(y) == n).all()
            g = coll.allgather(mk(np.full(5, me, np.int32)))
            assert (host(g) == np.repeat(np.arange(n), 5)).all(), host(g)
            rs = coll.reduce_scatter(mk(np.ones(4 * n, np.float64) * (me + 1)))
            assert host(rs).shape == (4,) and (host(rs) == n * (n + 1) / 2).all()
            b = mk(np.full(9, me, np.uint64))
            coll.broadcast(b, root=n - 1)
            assert (host(b) == n - 1).all()
            a = coll.alltoall(mk(np.arange(n * 3, dtype=np.int32) + 100 * me))
            want = np.concatenate([np.arange(3 * me, 3 * me + 3) + 100 * j for j in range(n)])
            assert (host(a) == want).all(), host(a)
            counts = [j + 1 for j in range(n)]        # j + 1 elements to rank j
            displs = [sum(counts[:j]) for j in range(n)]
            send = mk(np.arange(sum(counts), dtype=np.float32) + 1000 * me)
            rc = [me + 1] * n
            rd = [i * (me + 1) for i in range(n)]
            recv = mk(np.zeros(n * (me + 1), np.float32))
            coll.alltoallv(send, counts, displs, recv, rc, rd)
            want = np.concatenate([np.arange(displs[me], displs[me] + me + 1) + 1000 * i for i in range(n)])
            assert (host(recv) == want).all(), host(recv)
            coll.barrier()
            # gather, scatter and allgatherv (on alltoallv), and the average.
            gr = coll.gather(mk(np.full(3, me, np.int32)), root=n - 1)
            if me == n - 1:
                assert (host(gr) == np.repeat(np.arange(n), 3)).all(), host(gr)
            else:
                assert gr is None
            sc = coll.scatter(mk(np.arange(2 * n, dtype=np.float64)) if me == 0 else None,
                              mk(np.zeros(2, np.float64)), root=0)
            assert (host(sc) == [2 * me, 2 * me + 1]).all(), host(sc)
            vc = [j + 1 for j in range(n)]
            av = coll.allgatherv(mk(np.full(me + 1, me, np.int64)), vc)
            assert (host(av) == np.repeat(np.arange(n), vc)).all(), host(av)
            mean = coll.allreduce(mk(np.full(5, float(me), np.float32)), op="avg")
            assert np.allclose(host(mean), (n - 1) / 2), host(mean)
            try:
                coll.allreduce(mk(np.zeros(2, np.int32)), op="avg")
                raise AssertionError("an integer average was accepted")
            except gpucomm.InvalidArgumentError as e:
                assert "op" in str(e) and "int32" in str(e), e
            try:
                coll.gather(mk(np.zeros(2, np.int32)), root=n)
                raise AssertionError("a root outside the team was accepted")
            except gpucomm.InvalidArgumentError as e:
                assert "root" in str(e), e
            # A split team: even and odd world ranks, each reduces and gathers on its own members.
            half = rt.split(rt.world, me % 2)
            members = [r for r in range(n) if r % 2 == me % 2]
            z = coll.allreduce(mk(np.full(6, me + 1, np.int64)), mk(np.zeros(6, np.int64)), team=half)
            assert (host(z) == sum(r + 1 for r in members)).all(), (host(z), members)
            gz = coll.allgather(mk(np.full(2, me, np.int32)), team=half)
            assert (host(gz) == np.repeat(np.array(members), 2)).all(), host(gz)
            coll.barrier(team=half)
            try:
                coll.allreduce(mk(np.zeros(2, np.float32)), team=3)
                raise AssertionError("a team that is neither a name nor a Team was accepted")
            except TypeError as e:
                assert "team must be" in str(e), e
            p = coll.plan("allreduce", "float32", 1 << 20)
            assert p["algorithm"] in ("oneshot", "oneshot_ll", "twoshot", "ring", "multiring"), p
            try:
                coll.allreduce(mk(np.zeros(4, np.float32)), op="band")
                raise AssertionError("a bitwise reduction of floats was accepted")
            except Exception as e:
                assert "integer types only" in str(e), e
            # Arrays that are not C-contiguous are refused, never copied behind the caller's back
            # (the result would land in the copy): a Fortran-ordered and a strided numpy array.
            for bad, what in [(np.asfortranarray(np.ones((3, 4), np.float32)), "Fortran"),
                              (np.ones(16, np.float32)[::2], "strided")]:
                try:
                    coll.allreduce(bad)
                    raise AssertionError(f"a {what} array was accepted")
                except gpucomm.Error as e:
                    assert "send" in str(e) and "not C-contiguous" in str(e), e
            # What is not an array at all is refused naming the call and the argument.
            for call, args in [("allgather", (None,)), ("reduce_scatter", ([1, 2],)), ("alltoall", (3,))]:
                try:
                    getattr(coll, call)(*args)
                    raise AssertionError(f"{call} accepted {args[0]!r}")
                except gpucomm.InvalidArgumentError as e:
                    assert f"Collectives.{call}: argument 'send'" in str(e) and "must be an array" in str(e), e
            # A scalar of the wrong type: one line naming the argument, not the extension's signature dump.
            for call, kw, arg, want in [("broadcast", {"root": "x"}, "root", "an int"),
                                        ("allreduce", {"op": 5}, "op", "a str"),
                                        ("allgather", {"max_ctas": 1.5}, "max_ctas", "an int")]:
                try:
                    getattr(coll, call)(mk(np.ones(4, np.float32)), **kw)
                    raise AssertionError(f"{call} accepted {kw}")
                except gpucomm.InvalidArgumentError as e:
                    assert f"Collectives.{call}: argument '{arg}': must be {want}" in str(e), e
            # Displacements whose block would wrap past 2^64 are refused, not written out of bounds.
            try:
                coll.alltoallv(send, counts, [2**64 - 1] + displs[1:], recv, rc, rd)
                raise AssertionError("a wrapping displacement was accepted")
            except gpucomm.Error as e:
                assert "send_displs" in str(e) and "entry 0" in str(e), e
            if kind == "gpu" and xp is None:
                # Ordering against torch's own work on its current stream: the input is produced by
                # a torch kernel right before the call, the result consumed right after.
                s = torch.cuda.Stream(device=dev)
                with torch.cuda.stream(s):
                    for _ in range(20):
                        t = torch.full((1 << 20,), float(me + 1), device=dev)
                        t.mul_(2.0)
                        coll.allreduce(t)
                        t.add_(1.0)
                    s.synchronize()
                assert float(t[0]) == 2.0 * n * (n + 1) / 2 + 1, float(t[0])
        rt.barrier_all()
        print(f"PY OK rank {me}")
""")


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "coll_script.py"
    p.write_text(SCRIPT)
    return str(p)


def _core_built(build) -> bool:
    return bool(list((build / "python" / "gpucomm").glob("_core*.so")))


def test_collectives_on_host_pes(run_gpucomm, build, script):
    pytest.importorskip("numpy")
    if not _core_built(build):
        pytest.skip("gpucomm._core not built")
    r = run_gpucomm("run", "-n", "3", "--tag-output", "--", sys.executable, script, "host",
                    env={"GPUCOMM_DEVICE": "host", "GPUCOMM_HEAP_SIZE": "64M",
                         # three team workspaces (world, node, a split team) in the default pool
                         "GPUCOMM_COLL_SCRATCH": "64K"})
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(3):
        assert f"[{rank}] PY OK rank {rank}" in r.stdout


def test_collectives_on_gpu_pes(run_gpucomm, build, script):
    if gpu_count() < 1:
        pytest.skip("needs a GPU")
    if not _core_built(build):
        pytest.skip("gpucomm._core not built")
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.importorskip("cupy")
    # Two PEs sharing GPU 0 (or one GPU each where there are two).
    r = run_gpucomm("run", "-n", "2", "--tag-output", "--", sys.executable, script, "gpu",
                    env={"GPUCOMM_DEVICE": "gpu", "GPUCOMM_HEAP_SIZE": "256M", "GPUCOMM_COLL_SCRATCH": "64K"},
                    timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(2):
        assert f"[{rank}] PY OK rank {rank}" in r.stdout


def test_bench_coll_on_host_pes(run_gpucomm, tmp_path):
    """`gpucomm bench coll`: the nccl-tests columns, a correct result for every row, and JSON."""
    out = tmp_path / "coll.json"
    r = run_gpucomm("bench", "coll", "--host", "-n", "3", "--quick", "-e", "4K", "--ops", "allreduce,allgather,barrier",
                    "-d", "bf16", "--json", str(out), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "algbw" in r.stdout and "busbw" in r.stdout and "ctas" in r.stdout and "wrong" in r.stdout
    import json
    data = json.loads(out.read_text())
    assert data["benchmark"] == "coll" and data["pe_kind"] == "host" and data["pes"] == 3
    ops = {row["op"] for row in data["results"]}
    assert ops == {"allreduce", "allgather", "barrier"}, ops
    for row in data["results"]:
        assert row["wrong"] == 0 and row["time_us"] > 0 and row["ctas"] >= 1, row
    r = run_gpucomm("bench", "coll", "--host", "-n", "1", "--", "--iters", "0")
    assert r.returncode == 1 and "--iters" in r.stderr and "Traceback" not in r.stderr


def test_coll_anchors_report_what_they_cannot_measure(build, tmp_path):
    """The NCCL / torch symmetric memory anchors: without torch or a GPU they say why, as JSON; the
    comparison line picks the smallest size both sides measured."""
    import json
    import subprocess
    out = tmp_path / "anchors.json"
    r = subprocess.run([sys.executable, "-m", "gpucomm.bench.coll_anchors", "--sizes", "8", "--iters", "2",
                        "--samples", "2", "--json", str(out)], capture_output=True, text=True, timeout=240,
                       env={**__import__("os").environ, "PYTHONPATH": str(build / "python")})
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(out.read_text())
    assert data["benchmark"] == "coll-anchors"
    assert data["results"] or data["not_measured"], data
    for row in data["results"]:
        assert row["time_us"] > 0 and row["mode"] in ("eager", "graph"), row
    bad = subprocess.run([sys.executable, "-m", "gpucomm.bench.coll_anchors", "--sizes", "x"],
                         capture_output=True, text=True, env={"PYTHONPATH": str(build / "python"), "PATH": "/usr/bin"})
    assert bad.returncode == 2 and "--sizes" in bad.stderr
    from gpucomm.bench.coll import compare_graph_replay
    # NCCL's allreduce (through torch) is in place: gpucomm's in-place rows are the ones compared,
    # the out-of-place row of the same size (0.1 us) is not.
    ours = {"pes": 2, "iters": 10, "results": [
        {"op": "allreduce", "mode": "graph", "size": s, "placement": p, "time_us": t}
        for s, p, t in ((8, "in", 0.8), (1024, "in", 3.0), (1024, "out", 0.1))]}
    nccl = {"pes": 1, "results": [{"anchor": "nccl_allreduce", "mode": "graph", "bytes": 1024, "time_us": 2.0},
                                  {"anchor": "nccl_allreduce", "mode": "eager", "bytes": 8, "time_us": 0.1}]}
    line = compare_graph_replay(ours, nccl).splitlines()[0]
    assert "allreduce (in place), 1024 B, 10 calls per graph" in line and "MISSED" in line and "1.50" in line, line
    assert "allgather: NCCL not measured" in compare_graph_replay(ours, nccl)
    nccl["results"].append({"anchor": "nccl_allgather", "mode": "graph", "bytes": 64, "time_us": 1.0})
    assert "allgather (out of place): no size measured by both" in compare_graph_replay(ours, nccl)
    assert "allreduce: NCCL not measured" in compare_graph_replay(ours, {"results": []})
    # Rows name where the collectives write; the messaging baselines (same helper) have no placement.
    from gpucomm.bench.coll_anchors import _row
    assert _row("nccl_allreduce", 8, "graph", [1.0, 2.0, 3.0])["placement"] == "in"
    assert _row("nccl_allgather", 8, "graph", [1.0])["time_us"] == 1.0
    assert "placement" not in _row("nccl_sendrecv_rt", 8, "eager", [1.0])


def test_device_anchors_say_what_is_not_available(tmp_path):
    """The in-kernel anchors (NVSHMEM, NCCL's device API): more PEs than GPUs, a library the build
    script could not find, a program not built: each is reported as not available with its reason;
    the comparison puts gpucomm's in-kernel rows beside the anchors'."""
    from gpucomm.bench import coll_device_anchors as dev
    r = dev.run(2, 1, [8], 2, 2, 64, str(tmp_path), None)
    assert all("2 PEs on 1 GPU(s)" in r[p]["not_available"] for p in dev.PROGRAMS), r
    (tmp_path / "nvshmem_coll.unavailable").write_text("not available: NVSHMEM not found (test)\n")
    out = tmp_path / "device.json"
    r = dev.run(1, 1, [8], 2, 2, 64, str(tmp_path), str(out))
    assert r["nvshmem_coll"] == {"not_available": "NVSHMEM not found (test)"}, r
    assert "is not built" in r["nccl_device_coll"]["not_available"], r
    assert __import__("json").loads(out.read_text())["pes"] == 1
    ours = {"results": [{"op": "barrier", "mode": "kernel", "size": 0, "time_us": 1.5},
                        {"op": "barrier", "mode": "session", "size": 0, "time_us": 0.5},
                        {"op": "allreduce", "mode": "kernel", "size": 8, "time_us": 2.5},
                        {"op": "allreduce", "mode": "graph", "size": 8, "time_us": 9.0}]}
    anchors = {"pes": 2, "nvshmem_coll": {"results": [
        {"anchor": "nvshmemx_barrier_all_block", "bytes": 0, "time_us": 3.0},
        {"anchor": "nvshmemx_float_sum_reduce_block", "bytes": 8, "time_us": 4.0}]},
        "nccl_device_coll": {"not_available": "NCCL not found"}}
    lines = dev.compare(ours, anchors).splitlines()
    assert lines[2].split() == ["barrier", "0", "1.500", "0.500", "3.000", "-"], lines
    assert lines[3].split() == ["allreduce", "8", "2.500", "-", "4.000", "-"], lines
    assert lines[-1] == "# NCCL device API: not available: NCCL not found", lines


FAILING_SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np
    import gpucomm
    from gpucomm.collectives import Collectives

    case = sys.argv[1]
    with gpucomm.Runtime() as rt:
        me, n = rt.rank, rt.size
        t0 = time.monotonic()
        try:
            if case == "messenger":
                # Rank 1 leaves a Messenger block with an exception; the others wait for its message.
                with gpucomm.messaging.Messenger(rt) as m:
                    w = m.world()
                    if me == 1:
                        raise ValueError("boom")
                    w.recv(np.zeros(1), 1, 7)
                sys.exit(0)
            with Collectives(rt) as coll:
                if case == "raise":
                    # Rank 1 leaves the block with an exception while the others enter an allreduce.
                    if me == 1:
                        raise ValueError("boom")
                    coll.allreduce(np.ones(4, np.float32))
                else:
                    # alltoallv counts that only rank 1 can see disagree (rank 0 sends it 2, it expects 1).
                    counts = [1] * n
                    if me == 0:
                        counts[1] = 2
                    displs = [sum(counts[:j]) for j in range(n)]
                    try:
                        coll.alltoallv(np.zeros(sum(counts), np.float32), counts, displs, np.zeros(n, np.float32),
                                       [1] * n, list(range(n)))
                    except gpucomm.Error as e:
                        print(f"rank {me} caught after {time.monotonic() - t0:.2f} s: {type(e).__name__}: {e}",
                              flush=True)
                        raise
        except Exception as e:
            print(f"rank {me} left after {time.monotonic() - t0:.2f} s: {type(e).__name__}", flush=True)
            raise
""")


@pytest.mark.parametrize("case", ["raise", "alltoallv", "messenger"])
def test_failure_in_a_collectives_block_ends_the_job_at_once(run_gpucomm, build, tmp_path, case):
    """An exception leaving `with Collectives(...)` or `with Messenger(...)` on one PE, or an alltoallv
    count mismatch that only one PE can see, fails the job at once: the others leave their call
    within seconds naming that PE, instead of waiting for the timeout (set to 60 s here)."""
    pytest.importorskip("numpy")
    if not _core_built(build):
        pytest.skip("gpucomm._core not built")
    p = tmp_path / "failing.py"
    p.write_text(FAILING_SCRIPT)
    r = run_gpucomm("run", "-n", "3", "--tag-output", "--", sys.executable, str(p), case,
                    env={"GPUCOMM_DEVICE": "host", "GPUCOMM_HEAP_SIZE": "64M", "GPUCOMM_TIMEOUT": "60"}, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    culprit = "sends 2 elements to this PE, recv_counts[0] is 1" if case == "alltoallv" else "ValueError: boom"
    assert "rank 1 aborted" in out and culprit in out, out
    import re
    times = [float(t) for t in re.findall(r"rank [02] left after ([0-9.]+) s", out)]
    assert len(times) == 2 and max(times) < 10, out
