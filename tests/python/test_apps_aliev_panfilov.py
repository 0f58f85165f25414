"""``gpucomm apps run aliev_panfilov``: Aliev-Panfilov 3-D in every model on host-memory PEs (1, 2
and 3 PEs: a PE alone exchanges its ghost planes with itself) against a reference computed here
with numpy, independently of the C++ program: the report's value is the sum of rank 0's final E,
and numpy's element-wise operations round each step as the program does (no fused multiply-add),
so the comparison is an equality. The check must catch a corrupted point; GPU models run where
GPUs exist."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gpus import gpu_count

HOST_MODELS = ["cpu", "patterns"]
GPU_MODELS = ["cpu", "patterns"]
A, B, KK, M1, M2, EPS, DT, ALPHA = 0.1, 0.1, 8.0, 0.07, 0.3, 0.01, 0.02, 0.1


def reference_e(pes: int, n: int, steps: int) -> np.ndarray:
    """E after `steps` steps, [z][y][x] over every PE's planes (z periodic, x and y mirrored)."""
    nz = pes * n
    k = np.arange(1, nz + 1, dtype=np.int64)[:, None, None]
    j = np.arange(1, n + 1, dtype=np.int64)[None, :, None]
    i = np.arange(1, n + 1, dtype=np.int64)[None, None, :]
    e = np.where((i * 3 + j + k * 2) % 11 < 3, 1.0, 0.0)
    r = np.where((i + j * 2 + k) % 7 < 2, 0.5, 0.0) * np.ones_like(e)
    for _ in range(steps):
        p = np.pad(e, ((1, 1), (0, 0), (0, 0)), mode="wrap")
        p = np.pad(p, ((0, 0), (1, 1), (1, 1)), mode="reflect")
        c = p[1:-1, 1:-1, 1:-1]
        lap = (p[1:-1, 1:-1, :-2] + p[1:-1, 1:-1, 2:]) - 6.0 * c
        lap = (((lap + p[1:-1, :-2, 1:-1]) + p[1:-1, 2:, 1:-1]) + p[:-2, 1:-1, 1:-1]) + p[2:, 1:-1, 1:-1]
        e = c + ALPHA * lap
        e = e - DT * ((((KK * e) * (e - A)) * (e - 1.0)) + e * r)
        gate = EPS + (M1 * r) / (e + M2)
        drive = (0.0 - r) - (KK * e) * ((e - B) - 1.0)
        r = r + (DT * gate) * drive
    return e


def rank0_sum(pes: int, n: int, steps: int) -> float:
    e = reference_e(pes, n, steps)[:n]
    s = 0.0
    for v in e.reshape(-1):  # the program's order: z, y, x, one addition at a time
        s += float(v)
    return s


def test_reference_is_not_trivial():
    e0, e5 = reference_e(2, 6, 0), reference_e(2, 6, 5)
    assert not np.array_equal(e0, e5) and 0 < float(e5.max()) < 2
    assert not np.array_equal(e5[:6], e5[6:])  # the z neighbours matter


@pytest.mark.parametrize("pes", [1, 2, 3])
@pytest.mark.parametrize("model", HOST_MODELS)
def test_aliev_panfilov_host_model_equals_reference(run_apps, apps_tool, tmp_path, model, pes):
    out = tmp_path / "ap.json"
    r = run_apps("run", "aliev_panfilov", "--host", "-n", str(pes), "--model", model, "--size", "5,8",
                 "--warmup", "1", "--iters", "3", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    (report,) = json.loads(out.read_text())["runs"]
    for res in report["results"]:
        assert res["verified"] and res["value"] == rank0_sum(pes, res["size"], 4), res


@pytest.mark.parametrize("model", HOST_MODELS)
def test_aliev_panfilov_wrong_result_is_caught(run_apps, apps_tool, tmp_path, model):
    out = tmp_path / "ap.json"
    r = run_apps("run", "aliev_panfilov", "--host", "-n", "2", "--model", model, "--size", "6", "--warmup", "1",
                 "--iters", "2", "--corrupt-rank", "1", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    assert not res["verified"] and res["wrong_cells"] == 1


@pytest.mark.parametrize("args, words", [
    (["--host", "--model", "loadstore"], "has no model 'loadstore' on host-memory PEs (planned"),
    (["--host", "--size", "3"], "valid sizes of aliev_panfilov"),
    (["--host", "--size", "1K"], "valid sizes of aliev_panfilov"),
])
def test_aliev_panfilov_bad_model_or_size_is_a_usage_error(run_apps, apps_tool, args, words):
    r = run_apps("run", "aliev_panfilov", *args)
    assert r.returncode == 2 and words in r.stderr, r.stderr


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of Aliev-Panfilov need one")
@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("model", GPU_MODELS)
def test_aliev_panfilov_gpu_model_equals_reference(run_apps, apps_tool, tmp_path, model, pes):
    out = tmp_path / "ap.json"
    r = run_apps("run", "aliev_panfilov", "-n", str(pes), "--model", model, "--size", "5,33", "--warmup", "1",
                 "--iters", "3", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    (report,) = json.loads(out.read_text())["runs"]
    for res in report["results"]:
        assert res["verified"] and res["value"] == rank0_sum(pes, res["size"], 4), res
        assert 0 < res["metrics"]["roofline_fraction"] and res["metrics"]["copy_gbs"] > 0


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of Aliev-Panfilov need one")
def test_aliev_panfilov_gpu_wrong_result_is_caught(run_apps, apps_tool, tmp_path):
    out = tmp_path / "ap.json"
    r = run_apps("run", "aliev_panfilov", "-n", "1", "--model", "patterns", "--size", "6", "--warmup", "1",
                 "--iters", "2", "--corrupt-rank", "0", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    assert not res["verified"] and res["wrong_cells"] == 1
