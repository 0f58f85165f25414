"""gpucomm.collectives beyond the C++ types and calls, on 2 and 3 host-memory PEs under
``gpucomm run``: int8, uint8, int16, uint16, bool, complex64 and complex128 in every reduction and
movement operation, scan and exscan, reduce_scatterv, and the nonblocking requests. Inputs are
random from a fresh seed (printed on failure; GPUCOMM_TEST_SEED repeats a run); every PE computes
the NumPy reference of every rank's inputs in rank order. Integers and bool must match exactly;
complex and float32 sums and averages (summed by the C++ side in its own order) within 1e-5
(complex64, float32) or 1e-12 (complex128), relative and absolute; what is combined locally in rank order (scan, exscan,
reduce_scatterv, complex products) exactly."""
from __future__ import annotations

import os
import random
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import gpucomm
    from gpucomm.collectives import Collectives

    seed = int(sys.argv[1])
    INTS = ["int8", "uint8", "int16", "uint16"]
    COMPLEX = ["complex64", "complex128"]
    OPS = {"bool": ["sum", "prod", "min", "max", "band", "bor", "bxor"],
           "complex64": ["sum", "prod", "avg"], "complex128": ["sum", "prod", "avg"], "float32": ["avg"]}
    for t in INTS:
        OPS[t] = ["sum", "prod", "min", "max", "band", "bor", "bxor"]
    RTOL = {"complex64": 1e-5, "complex128": 1e-12, "float32": 1e-5}  # and as absolute: sums may cancel


    def data(dtype, r, size, salt):
        rng = np.random.default_rng([seed, r, salt])
        if dtype == "bool":
            return rng.random(size) < 0.5
        if dtype in COMPLEX:
            return (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(dtype)
        if dtype.startswith("float"):
            return rng.standard_normal(size).astype(dtype)
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, size, dtype=dtype)


    def fold(blocks, op):
        acc = blocks[0].copy()
        for b in blocks[1:]:
            acc = {"sum": np.add, "avg": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
                   "band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}[op](acc, b)
        return acc / len(blocks) if op == "avg" else acc


    def same(got, want, what, exact=False):
        assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
        if exact or got.dtype.name not in RTOL:
            assert np.array_equal(got, want), (what, got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=RTOL[got.dtype.name], atol=RTOL[got.dtype.name],
                                       err_msg=what)


    def reductions(coll, me, n, dtype, op, salt):
        exact = op == "prod" and dtype in COMPLEX  # combined in rank order locally
        ins = [data(dtype, r, 3 * n, salt) for r in range(n)]
        want = fold(ins, op)
        what = f"{dtype} {op}"
        same(coll.allreduce(ins[me], np.zeros(3 * n, dtype), op=op), want, "allreduce " + what, exact)
        x = ins[me].copy()
        coll.allreduce(x, op=op)
        same(x, want, "allreduce in place " + what, exact)
        before = np.ones(3 * n, dtype)
        got = coll.reduce(ins[me], before.copy(), op=op, root=n - 1)
        if me == n - 1 or dtype != "float32":  # off the root, the C++ reduce's recv is not defined
            same(got, want if me == n - 1 else before, "reduce " + what, exact)
        rs = coll.reduce_scatter(ins[me], op=op)
        same(rs, want[3 * me:3 * me + 3], "reduce_scatter " + what, exact)
        counts = [int(c) for c in np.random.default_rng([seed, salt]).integers(0, 5, n)]
        vs = [data(dtype, r, sum(counts), salt + 1) for r in range(n)]
        lo = sum(counts[:me])
        same(coll.reduce_scatterv(vs[me], counts, op=op), fold(vs, op)[lo:lo + counts[me]],
             f"reduce_scatterv {counts} " + what, True)
        if op == "avg":
            return
        same(coll.scan(ins[me].copy(), op=op), fold(ins[:me + 1], op), "scan " + what, True)
        sentinel = data(dtype, 99, 3 * n, salt)
        got = coll.exscan(ins[me], sentinel.copy(), op=op)
        same(got, fold(ins[:me], op) if me else sentinel, "exscan " + what, True)


    def movements(coll, me, n, dtype, salt):
        ins = [data(dtype, r, 2 * n, salt) for r in range(n)]
        b = ins[me].copy()
        coll.broadcast(b, root=n - 1)
        same(b, ins[n - 1], "broadcast " + dtype, True)
        same(coll.allgather(ins[me]), np.concatenate(ins), "allgather " + dtype, True)
        want = np.concatenate([ins[j][2 * me:2 * me + 2] for j in range(n)])
        same(coll.alltoall(ins[me]), want, "alltoall " + dtype, True)
        g = coll.gather(ins[me], root=0)
        if me == 0:
            same(g, np.concatenate(ins), "gather " + dtype, True)
        same(coll.scatter(ins[0] if me == 0 else None, np.zeros(2, dtype), root=0), ins[0][2 * me:2 * me + 2],
             "scatter " + dtype, True)
        counts = [j + 1 for j in range(n)]
        same(coll.allgatherv(ins[me][:me + 1], counts), np.concatenate([ins[j][:j + 1] for j in range(n)]),
             "allgatherv " + dtype, True)


    def refused(call, words):
        try:
            call()
        except gpucomm.InvalidArgumentError as e:
            assert all(w in str(e) for w in words), (words, str(e))
            return
        raise AssertionError(f"accepted: expected an error naming {words}")


    def errors(coll, n):
        refused(lambda: coll.allreduce(np.zeros(4, np.int8), op="avg"), ["'op'", "avg", "int8"])
        refused(lambda: coll.reduce_scatterv(np.zeros(n, np.bool_), [1] * n, op="avg"), ["'op'", "avg", "bool"])
        refused(lambda: coll.allreduce(np.zeros(4, np.complex64), op="max"), ["'op'", "max", "complex64"])
        refused(lambda: coll.scan(np.zeros(4, np.complex128), op="min"), ["'op'", "min", "complex128"])
        refused(lambda: coll.scan(np.zeros(4, np.float32), op="avg"), ["'op'", "avg"])
        refused(lambda: coll.reduce_scatterv(np.zeros(5, np.int32), [1] * (n + 1)), ["'counts'", str(n)])
        refused(lambda: coll.reduce_scatterv(np.zeros(5, np.int32), [5] + [1] * (n - 1)), ["'counts'", "adds up"])
        refused(lambda: coll.reduce_scatterv(np.zeros(n, np.int32), [2, -1] + [1] * (n - 2)), ["'counts'", "entry 1"])
        refused(lambda: coll.reduce_scatterv(np.zeros(n, np.int32), [1] * n, np.zeros(2, np.int32)), ["'recv'"])


    def nonblocking(coll, me, n):
        a = data("int8", me, 8, 7)
        b = data("complex128", me, 5, 8)
        r1 = coll.iallreduce(a.copy(), op="sum")
        r2 = coll.iscan(b.copy(), op="prod")
        assert "iallreduce" in repr(r1)
        got2 = r2.wait()
        assert r1.test(), "the earlier request had not finished when the later one had"
        same(r1.wait(), fold([data("int8", r, 8, 7) for r in range(n)], "sum"), "iallreduce", True)
        same(got2, fold([data("complex128", r, 5, 8) for r in range(me + 1)], "prod"), "iscan", True)
        bad = coll.iallreduce(np.zeros(2, np.complex64), op="max")
        after = coll.ireduce_scatterv(np.arange(n, dtype=np.uint8), [1] * n)
        try:
            bad.wait()
            raise AssertionError("max on complex64 was accepted")
        except gpucomm.InvalidArgumentError as e:
            assert "max" in str(e) and "complex64" in str(e), e
        same(after.wait(), np.array([(n * me) % 256], np.uint8), "ireduce_scatterv after an error", True)
        pending = coll.ibroadcast(np.full(3, me, np.int16), root=1)
        coll.barrier()  # a blocking call waits for the requests made before it
        assert pending.test()
        same(pending.wait(), np.full(3, 1, np.int16), "ibroadcast", True)
        try:
            coll.iallreduce(np.zeros(2, np.float32), stream=0)
            raise AssertionError("a stream was accepted by a nonblocking call")
        except gpucomm.InvalidArgumentError as e:
            assert "stream" in str(e), e


    with gpucomm.Runtime() as rt:
        me, n = rt.rank, rt.size
        with Collectives(rt) as coll:
            salt = 0
            for dtype, ops in OPS.items():
                for op in ops:
                    salt += 10
                    reductions(coll, me, n, dtype, op, salt)
            for dtype in INTS + ["bool"] + COMPLEX:
                salt += 10
                movements(coll, me, n, dtype, salt)
            errors(coll, n)
            nonblocking(coll, me, n)
            # Any team: a split team's scan and nonblocking reduce_scatterv, in its own rank order.
            half = rt.split(rt.world, me % 2)
            members = [r for r in range(n) if r % 2 == me % 2]
            mine = members.index(me)
            x = [data("int16", r, 4, 5) for r in members]
            same(coll.scan(x[mine].copy(), op="prod", team=half), fold(x[:mine + 1], "prod"), "scan on a team", True)
            req = coll.ireduce_scatterv(np.concatenate([x[mine]] * len(members))[:len(members) * 2],
                                        [2] * len(members), team=half)
            want = fold([np.concatenate([v] * len(members))[:len(members) * 2] for v in x], "sum")
            same(req.wait(), want[2 * mine:2 * mine + 2], "ireduce_scatterv on a team", True)
        rt.barrier_all()
        print(f"EXTRA OK rank {me}")
""")


def _core_built(build) -> bool:
    return bool(list((build / "python" / "gpucomm").glob("_core*.so")))


@pytest.mark.parametrize("pes", [2, 3])
def test_extra_types_scan_reduce_scatterv_and_requests(run_gpucomm, build, tmp_path, pes):
    pytest.importorskip("numpy")
    if not _core_built(build):
        pytest.skip("gpucomm._core not built")
    seed = int(os.environ.get("GPUCOMM_TEST_SEED") or random.randrange(1 << 31))
    script = tmp_path / "coll_extra.py"
    script.write_text(SCRIPT)
    r = run_gpucomm("run", "-n", str(pes), "--tag-output", "--", sys.executable, str(script), str(seed),
                    env={"GPUCOMM_DEVICE": "host", "GPUCOMM_HEAP_SIZE": "64M", "GPUCOMM_COLL_SCRATCH": "64K",
                         "GPUCOMM_TIMEOUT": "60"}, timeout=300)
    assert r.returncode == 0, f"seed {seed} (GPUCOMM_TEST_SEED={seed} repeats it)\n" + r.stdout + r.stderr
    for rank in range(pes):
        assert f"[{rank}] EXTRA OK rank {rank}" in r.stdout, f"seed {seed}\n" + r.stdout + r.stderr


def test_collectives_example_of_the_docs_runs_on_host_pes(run_gpucomm, build, tmp_path):
    """docs/PYTHON.md's collectives example runs as written, on 1 and 3 PEs."""
    import re
    from pathlib import Path
    pytest.importorskip("numpy")
    if not _core_built(build):
        pytest.skip("gpucomm._core not built")
    text = (Path(__file__).resolve().parents[2] / "docs" / "PYTHON.md").read_text()
    m = re.search(r"<!-- example: collectives_extra -->\s*```python\n(.*?)```", text, re.S)
    assert m, "docs/PYTHON.md has no example 'collectives_extra'"
    script = tmp_path / "collectives_extra.py"
    script.write_text(m.group(1))
    for pes in (1, 3):
        r = run_gpucomm("run", "-n", str(pes), "--", sys.executable, str(script),
                        env={"GPUCOMM_DEVICE": "host", "GPUCOMM_HEAP_SIZE": "16M", "GPUCOMM_TIMEOUT": "60"},
                        timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.count("collectives extra ok") == pes, r.stdout
