"""gpucomm.patterns from Python on 1 and 3 host-memory PEs under ``gpucomm run`` (numpy arrays,
strided views), and on a GPU PE where a GPU exists (torch or cupy arrays)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from gpus import gpu_count

SCRIPT = textwrap.dedent("""
    import numpy as np
    import gpucomm

    P = gpucomm.patterns
    with gpucomm.Runtime() as rt:
        me, n = rt.rank, rt.size
        assert "ring" in P.strategies() and "automatic" in P.strategies()
        a = rt.zeros((n, 64), "int32")
        b = rt.zeros((n, 64), "int32")
        x, y = np.from_dlpack(a), np.from_dlpack(b)  # views of the symmetric arrays
        x[:] = np.arange(n * 64, dtype=np.int32).reshape(n, 64) + 1000 * me

        # Prebuilt: broadcast of the last PE's row 0, then all-gather of row `me` in place.
        with P.broadcast(rt, x[0], y[0], root=n - 1).compile(rt) as plan:
            plan.launch()
        assert (y[0] == np.arange(64) + 1000 * (n - 1)).all(), y[0]
        rt.barrier_all()
        pat = P.all_gather(rt, None, x)
        assert pat.kind == "all_gather" and pat.sealed
        with pat.compile(rt, strategy="ring" if n > 1 else "automatic") as plan:
            plan.launch()
        for p in range(n):
            assert (x[p] == np.arange(64) + 64 * p + 1000 * p).all(), (p, x[p])
        rt.barrier_all()

        # A custom pattern with strided views: every other column of a host matrix into a
        # contiguous one, then (after it) into a second one; and a strided block of my right
        # neighbour's b from a host array.
        host = np.arange(16 * 32, dtype=np.float64).reshape(16, 32) + me
        mid, last = np.zeros((16, 16)), np.zeros((16, 16))
        src_rows = np.full((n, 8), 7 + me, dtype=np.int32)
        pat = P.Pattern(rt, "columns")
        t0 = pat.add(mid, host[:, ::2])
        t1 = pat.add(last, mid)
        pat.depends(t1, t0)
        pat.add(y[:, :8], src_rows, dst_pe=(me + 1) % n)
        with pat.compile(rt) as plan:
            plan.launch()
        assert (mid == host[:, ::2]).all() and (last == mid).all()
        assert (y[:, :8] == 7 + (me - 1) % n).all(), y[:, :8]
        rt.barrier_all()

        # The periodic 3-D halo of a symmetric field, over the PE grid.
        u = rt.zeros((6, 7, 8), "float64")
        f = np.from_dlpack(u)
        f[:] = np.random.default_rng(me).random((6, 7, 8))
        inner = f[1:-1, 1:-1, 1:-1].copy()
        rt.barrier_all()
        with P.halo(rt, f, ghost=1, periodic=True).compile(rt) as halo:
            halo.launch()
        assert (f[1:-1, 1:-1, 1:-1] == inner).all()
        if n == 1:
            assert f[0, 0, 0] == f[-2, -2, -2] and f[3, 3, 0] == f[3, 3, -2]
        rt.barrier_all()

        # Errors name the transfer.
        bad = P.Pattern(rt, "bad")
        h = np.zeros(100)
        bad.add(h[:50], h[50:], label="first")
        bad.add(h[25:75], np.ones(50), label="second")
        try:
            bad.compile(rt, local=True)
            raise AssertionError("overlapping destinations were accepted")
        except RuntimeError as e:
            assert "overlapping destinations" in str(e) and "'second'" in str(e), e
        try:
            P.Pattern(rt).compile(rt, strategy="knapsack")
            raise AssertionError("an unknown strategy was accepted")
        except (RuntimeError, ValueError) as e:
            assert "not a strategy" in str(e), e
        rt.barrier_all()
        rt.free(u)
        rt.free(b)
        rt.free(a)
        print(f"PY OK rank {me}")
""")


@pytest.mark.parametrize("np_", [1, 3])
def test_patterns_on_host_pes(gpucomm_env, tmp_path, np_):
    script = tmp_path / "patterns_script.py"
    script.write_text(SCRIPT)
    env = dict(gpucomm_env, GPUCOMM_DEVICE="host", GPUCOMM_HEAP_SIZE="16M", GPUCOMM_TIMEOUT="60")
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", str(np_), "--", sys.executable, str(script)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PY OK") == np_, r.stdout + r.stderr


EDGE_SCRIPT = textwrap.dedent("""
    import numpy as np
    import gpucomm

    P = gpucomm.patterns
    with gpucomm.Runtime() as rt:
        a, b = np.arange(16, dtype=np.float64), np.zeros(16)
        pat = P.Pattern(rt, "copy")
        pat.add(b, a)
        plan = pat.compile(rt, local=True)
        for bad, says in ((12345, "not inside the symmetric heap"), (0, "not inside the symmetric heap"),
                          (-1, "not inside the symmetric heap"), (2**70, "not inside the symmetric heap"),
                          ("x", "expected an array"), (np.zeros(3), "the new buffer has 24 bytes")):
            try:
                plan.rebind(a, bad)
                raise AssertionError(f"rebind accepted {bad!r}")
            except gpucomm.InvalidArgumentError as e:
                assert says in str(e) and "'new" in str(e), e
        c = np.arange(16, dtype=np.float64) * 2
        plan.rebind(a, c)  # a real buffer of the same size still moves
        plan.launch()
        plan.synchronize()
        assert (b == c).all(), b
        kept = plan  # outlives the runtime
    try:
        kept.launch()
        raise AssertionError("a plan ran after its Runtime closed")
    except gpucomm.InvalidArgumentError as e:
        assert "Runtime was closed" in str(e), e
    print("PY OK")
""")


def test_plan_edges_on_a_host_pe(gpucomm_env, tmp_path):
    """Bad rebind targets are refused naming the argument; a plan that outlives its Runtime raises
    on use and the process exits cleanly (it crashed at exit, or at the launch after a bad rebind)."""
    script = tmp_path / "edges.py"
    script.write_text(EDGE_SCRIPT)
    env = dict(gpucomm_env, GPUCOMM_DEVICE="host", GPUCOMM_HEAP_SIZE="16M", GPUCOMM_TIMEOUT="60")
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", "1", "--", sys.executable, str(script)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "PY OK" in r.stdout, r.stdout + r.stderr


GPU_SCRIPT = textwrap.dedent("""
    import numpy as np
    import gpucomm

    P = gpucomm.patterns
    with gpucomm.Runtime() as rt:
        assert rt.pe_kind == "gpu", rt.pe_kind
        try:
            import torch
            dev = torch.device("cuda", rt.device_id)
            u = torch.rand((10, 12, 14), dtype=torch.float64, device=dev)
            src = torch.arange(4096, dtype=torch.float32).pin_memory()
            dst = torch.zeros(4096, dtype=torch.float32, device=dev)
            stream = torch.cuda.current_stream(dev)
            host = lambda t: t.cpu().numpy()
        except ImportError:
            import cupy
            cupy.cuda.Device(rt.device_id).use()
            u = cupy.random.random((10, 12, 14))
            src = np.arange(4096, dtype=np.float32)
            dst = cupy.zeros(4096, dtype=cupy.float32)
            stream = cupy.cuda.get_current_stream()
            host = cupy.asnumpy
        inner = host(u)[1:-1, 1:-1, 1:-1].copy()
        with P.halo(rt, u, ghost=1, periodic=True).compile(rt, graph=True) as halo:
            halo.launch(stream)
            halo.synchronize()
        f = host(u)
        assert (f[1:-1, 1:-1, 1:-1] == inner).all() and f[0, 0, 0] == f[-2, -2, -2]
        pat = P.Pattern(rt, "h2d")
        pat.add(dst, src)
        with pat.compile(rt) as plan:
            plan.launch(stream)
            plan.synchronize()
        assert (host(dst) == np.arange(4096)).all()
        print("PY OK")
""")


def test_patterns_on_a_gpu_pe(gpucomm_env, tmp_path):
    if gpu_count() < 1:
        pytest.skip("needs a GPU")
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.importorskip("cupy", reason="needs torch or cupy for device arrays")
    script = tmp_path / "patterns_gpu.py"
    script.write_text(GPU_SCRIPT)
    env = dict(gpucomm_env, GPUCOMM_DEVICE="gpu", GPUCOMM_TIMEOUT="60")
    r = subprocess.run([sys.executable, "-m", "gpucomm", "run", "-n", "1", "--", sys.executable, str(script)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PY OK" in r.stdout, r.stdout + r.stderr
