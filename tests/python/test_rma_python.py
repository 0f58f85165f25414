"""Symmetric arrays and host put/get from Python, on 2 PEs under ``gpucomm run``.

Host-memory PEs (numpy) always run; the GPU variant (torch or cupy) runs where a GPU exists."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from gpus import gpu_count

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import gpucomm

    kind = sys.argv[1]
    with gpucomm.Runtime() as rt:
        assert rt.pe_kind == kind, rt.pe_kind
        me, n = rt.rank, rt.size
        right, left = (me + 1) % n, (me - 1 + n) % n
        a = gpucomm.zeros((4, 8), "int64")
        b = rt.empty(32, np.float32)
        dev = a.__dlpack_device__()
        if kind == "host":
            assert dev[0] == 1, dev  # kDLCPU
            x = np.from_dlpack(a)
            assert x.shape == (4, 8) and x.dtype == np.int64 and not x.any()
            src = np.arange(32, dtype=np.int64).reshape(4, 8) + 1000 * me
            rt.barrier_all()
            rt.put(a, src, right)
            rt.barrier_all()
            assert (x == np.arange(32).reshape(4, 8) + 1000 * left).all(), x
            back = np.zeros((4, 8), dtype=np.int64)
            rt.get(back, a, right)
            assert (back == src).all()
            assert rt.peer_address(a, right) != 0
        else:
            assert dev[0] == 2 and dev[1] == rt.device_id, dev  # kDLCUDA
            try:
                import torch
                x = torch.from_dlpack(a)
                assert x.is_cuda and x.shape == (4, 8) and int(x.abs().sum()) == 0
                src = (torch.arange(32, dtype=torch.int64, device=x.device) + 1000 * me).reshape(4, 8)
                host = lambda t: t.cpu().numpy()
            except ImportError:
                import cupy
                x = cupy.from_dlpack(a)
                src = (cupy.arange(32, dtype=cupy.int64) + 1000 * me).reshape(4, 8)
                host = cupy.asnumpy
            rt.barrier_all()
            rt.put(a, src, right)
            rt.barrier_all()
            assert (host(x) == np.arange(32).reshape(4, 8) + 1000 * left).all()
            back = np.zeros((4, 8), dtype=np.int64)
            rt.get(back, a, right)
            assert (back == host(src)).all()
        try:
            rt.put(a, np.zeros(3, dtype=np.int64), right)
            raise AssertionError("a size mismatch was accepted")
        except ValueError as e:
            assert "differ in size" in str(e)
        try:
            rt.put(np.zeros((4, 8), dtype=np.int64), np.zeros((4, 8), dtype=np.int64), right)
            raise AssertionError("a non-symmetric destination was accepted")
        except ValueError as e:
            assert "not a symmetric array" in str(e)
        rt.barrier_all()
        rt.free(b)
        rt.free(a)
        print(f"PY OK rank {me}")
""")


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "rma_script.py"
    p.write_text(SCRIPT)
    return str(p)


def _core_built(build) -> bool:
    return bool(list((build / "python" / "gpucomm").glob("_core*.so")))


def test_symmetric_arrays_on_host_pes(run_gpucomm, build, script):
    pytest.importorskip("numpy")
    if not _core_built(build):
        pytest.skip("gpucomm._core not built")
    r = run_gpucomm("run", "-n", "2", "--tag-output", "--", sys.executable, script, "host",
                    env={"GPUCOMM_DEVICE": "host", "GPUCOMM_HEAP_SIZE": "16M"})
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(2):
        assert f"[{rank}] PY OK rank {rank}" in r.stdout


def test_symmetric_arrays_on_gpu_pes(run_gpucomm, build, script):
    if gpu_count() < 1:
        pytest.skip("needs a GPU")
    if not _core_built(build):
        pytest.skip("gpucomm._core not built")
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.importorskip("cupy")
    r = run_gpucomm("run", "-n", "2", "--tag-output", "--", sys.executable, script, "gpu",
                    env={"GPUCOMM_DEVICE": "gpu", "GPUCOMM_HEAP_SIZE": "64M"}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(2):
        assert f"[{rank}] PY OK rank {rank}" in r.stdout


def test_nvshmem_comparison_table():
    from gpucomm.bench.rma import compare
    ours = {"results": [
        {"name": "p_pingpong", "level": "thread", "bytes": 4, "ctas": 1, "unit": "us", "median": 1.0},
        {"name": "put_bw", "level": "block", "bytes": 1 << 20, "ctas": 32, "unit": "GB/s", "median": 330.0},
        {"name": "put_bw", "level": "warp", "bytes": 1 << 20, "ctas": 32, "unit": "GB/s", "median": 100.0}]}
    theirs = {"results": [
        {"name": "p_pingpong", "level": "thread", "bytes": 4, "ctas": 1, "unit": "us", "median": 1.25},
        {"name": "put_bw", "level": "block", "bytes": 1 << 20, "ctas": 32, "unit": "GB/s", "median": 300.0}]}
    lines = compare(json.loads(json.dumps(ours)), theirs)
    assert len(lines) == 3  # header + the two shared points
    assert lines[1].split()[-1] == "1.25"  # latency: NVSHMEM / gpucomm
    assert lines[2].split()[-1] == "1.10"  # bandwidth: gpucomm / NVSHMEM
