"""``gpucomm apps run himeno``: the Himeno benchmark (R. Himeno, RIKEN) in every model on host-memory
PEs (1, 2 and 3 PEs stacked along i, not periodic) against a reference computed here with numpy,
independently of the C++ program. p is fp32 and numpy's element-wise float32 operations round each
step as the program does (no fused multiply-add), so every PE's final p (written by the hidden
``--dump-grid``) must equal numpy's bit for bit; gosa, a sum whose order differs, must agree within
a relative 1e-9 (the program's tolerance). The check must catch a corrupted PE; GPU models run where
GPUs exist."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gpus import gpu_count

HOST_MODELS = ["cpu", "patterns"]
GPU_MODELS = ["cpu", "patterns"]
F = np.float32
A0, A1, A2, A3 = F(1.0), F(1.0), F(1.0), F(1.0 / 6.0)
B0, B1, B2 = F(0.0), F(0.0), F(0.0)
C0, C1, C2 = F(1.0), F(1.0), F(1.0)
BND, WRK1, OMEGA = F(1.0), F(0.0), F(0.8)
GOSA_RTOL = 1e-9


def reference(pes: int, n: int, steps: int) -> tuple[np.ndarray, list[float]]:
    """p after `steps` iterations, [i][j][k] over every PE's planes and the two boundary planes
    (j and k with their boundary points), and every iteration's gosa."""
    ni, w = pes * n, n + 2
    ig = np.arange(ni + 2, dtype=np.int64)
    last = ni + 1
    planes = (ig * ig).astype(F) / F(last * last)  # the original's i*i / (imax-1)^2, in float
    p = np.ascontiguousarray(np.broadcast_to(planes[:, None, None], (ni + 2, w, w))).astype(F)
    gosa = []
    I, J, K = slice(1, -1), slice(1, -1), slice(1, -1)
    up, dn = slice(2, None), slice(None, -2)
    for _ in range(steps):
        c = p[I, J, K]
        s0 = A0 * p[up, J, K] + A1 * p[I, up, K]
        s0 = s0 + A2 * p[I, J, up]
        s0 = s0 + B0 * (((p[up, up, K] - p[up, dn, K]) - p[dn, up, K]) + p[dn, dn, K])
        s0 = s0 + B1 * (((p[I, up, up] - p[I, dn, up]) - p[I, up, dn]) + p[I, dn, dn])
        s0 = s0 + B2 * (((p[up, J, up] - p[dn, J, up]) - p[up, J, dn]) + p[dn, J, dn])
        s0 = s0 + C0 * p[dn, J, K]
        s0 = s0 + C1 * p[I, dn, K]
        s0 = s0 + C2 * p[I, J, dn]
        s0 = s0 + WRK1
        ss = (s0 * A3 - c) * BND
        assert ss.dtype == F
        gosa.append(float(np.sum((ss * ss).astype(np.float64))))
        p[I, J, K] = c + OMEGA * ss
    return p, gosa


def check_run(out, dump, model, pes, steps, sizes):
    (report,) = json.loads(out.read_text())["runs"]
    results = [r for r in report["results"] if r["model"] == model]
    assert sorted(r["size"] for r in results) == sorted(sizes)
    for res in results:
        n = res["size"]
        p, gosa = reference(pes, n, steps)
        assert res["verified"] and res["wrong_steps"] == 0 and res["wrong_cells"] == 0, res
        assert res["value"] == pytest.approx(gosa[-1], rel=GOSA_RTOL, abs=0), (res["value"], gosa[-1])
        assert res["reference"] == pytest.approx(gosa[-1], rel=GOSA_RTOL, abs=0)
        assert res["metrics"]["mflops"] > 0 and res["metrics"]["streamed_gbs"] > 0
        for rank in range(pes):
            part = np.fromfile(dump / f"himeno-{model}-{n}-{rank}.f32", dtype=F).reshape(n, n, n)
            want = p[1 + rank * n:1 + (rank + 1) * n, 1:-1, 1:-1]
            assert np.array_equal(part, want), (model, n, rank, int(np.sum(part != want)))


def test_reference_is_not_trivial():
    p0, _ = reference(2, 6, 0)
    p4, gosa = reference(2, 6, 4)
    assert not np.array_equal(p0, p4) and len(gosa) == 4 and all(g > 0 for g in gosa)
    assert len(set(gosa)) == 4  # gosa moves from iteration to iteration
    # p varies along j and k (the fixed boundaries pull it), not only along i, also on the planes
    # next to the interface between the two PEs (global planes 6 and 7).
    assert not np.array_equal(p4[6, 1:-1, 1], p4[6, 1:-1, 3]) and not np.array_equal(p4[6], p0[6])
    assert np.array_equal(p4[0], p0[0]) and np.array_equal(p4[-1], p0[-1])  # the boundary planes stay


@pytest.mark.parametrize("pes", [1, 2, 3])
@pytest.mark.parametrize("model", HOST_MODELS)
def test_himeno_host_model_equals_reference(run_apps, apps_tool, tmp_path, model, pes):
    out, dump = tmp_path / "h.json", tmp_path / "grid"
    dump.mkdir()
    r = run_apps("run", "himeno", "--host", "-n", str(pes), "--model", model, "--size", "4,7", "--warmup", "1",
                 "--iters", "3", "--json", str(out), "--dump-grid", str(dump))
    assert r.returncode == 0, r.stdout + r.stderr
    check_run(out, dump, model, pes, 4, [4, 7])


@pytest.mark.parametrize("model", HOST_MODELS)
def test_himeno_wrong_result_is_caught(run_apps, apps_tool, tmp_path, model):
    out = tmp_path / "h.json"
    r = run_apps("run", "himeno", "--host", "-n", "2", "--model", model, "--size", "6", "--warmup", "1",
                 "--iters", "2", "--corrupt-rank", "1", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    # PE 1 adds 1 to its gosa every iteration (both PEs see the wrong sum) and to one point of p.
    assert not res["verified"] and res["wrong_steps"] == 2 * 3 and res["wrong_cells"] == 1, res


def test_himeno_is_listed_done(run_apps, apps_tool):
    r = run_apps("list", "--json")
    assert r.returncode == 0, r.stderr
    (h,) = [a for a in json.loads(r.stdout)["apps"] if a["name"] == "himeno"]
    assert h["done"]
    assert sorted(m["model"] for m in h["models"] if m["host"] == "done") == HOST_MODELS
    assert sorted(m["model"] for m in h["models"] if m["gpu"] == "done") == GPU_MODELS


@pytest.mark.parametrize("args, words", [
    (["--host", "--model", "loadstore"], "has no model 'loadstore' on host-memory PEs (planned"),
    (["--host", "--model", "proxy"], "has no model 'proxy' on host-memory PEs (not-possible"),
    (["--host", "--size", "3"], "valid sizes of himeno"),
    (["--host", "--size", "1K"], "valid sizes of himeno"),
])
def test_himeno_bad_model_or_size_is_a_usage_error(run_apps, apps_tool, args, words):
    r = run_apps("run", "himeno", *args)
    assert r.returncode == 2 and words in r.stderr, r.stderr


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of Himeno need one")
@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("model", GPU_MODELS)
def test_himeno_gpu_model_equals_reference(run_apps, apps_tool, tmp_path, model, pes):
    # 5: one partial block in k and j and a partial chunk of planes; 33 and 40: several blocks,
    # chunks of 8 planes with a remainder.
    out, dump = tmp_path / "h.json", tmp_path / "grid"
    dump.mkdir()
    r = run_apps("run", "himeno", "-n", str(pes), "--model", model, "--size", "5,33,40", "--warmup", "1",
                 "--iters", "3", "--json", str(out), "--dump-grid", str(dump))
    assert r.returncode == 0, r.stdout + r.stderr
    check_run(out, dump, model, pes, 4, [5, 33, 40])


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of Himeno need one")
@pytest.mark.parametrize("model", GPU_MODELS)
def test_himeno_gpu_wrong_result_is_caught(run_apps, apps_tool, tmp_path, model):
    out = tmp_path / "h.json"
    r = run_apps("run", "himeno", "-n", "1", "--model", model, "--size", "6", "--warmup", "1", "--iters", "2",
                 "--corrupt-rank", "0", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    assert not res["verified"] and res["wrong_steps"] == 3 and res["wrong_cells"] == 1, res
