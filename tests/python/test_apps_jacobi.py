"""``gpucomm apps run jacobi2d``: Jacobi 2-D in every model that exists on host-memory PEs, across
real processes (2 and 3 PEs), against a reference computed here with numpy, independently of the
C++ program: the last iteration's residual (the report's value) and every PE's final grid (written
by the hidden --dump-grid) must be equal bit for bit. The check itself must catch a wrong result;
bad sizes and models are usage errors that list the valid ones. GPU models run where GPUs exist and
skip with the reason otherwise.

The update is 0.25 * (((up + down) + left) + right) in this order, which numpy's element-wise
operations round exactly as the program does; the residual is a maximum. No tolerance."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gpus import gpu_count

HOST_MODELS = ["loadstore", "putget", "sendrecv", "cpu"]
GPU_MODELS = ["loadstore", "putget", "cpu"]
SIZES = [8, 33, 64]
WARMUP, ITERS = 1, 4


def reference(pes: int, n: int, steps: int) -> tuple[np.ndarray, list[float], np.ndarray]:
    """The grid (interior, pes * n rows of n) after `steps` iterations, every iteration's residual
    and the last iteration's largest change per row, as docs/APPS.md defines Jacobi 2-D."""
    rows = pes * n
    a = np.zeros((rows + 2, n + 2))
    a[0, :] = 1.0  # the hot top edge
    g = np.arange(rows, dtype=np.uint64)[:, None]
    c = np.arange(n, dtype=np.uint64)[None, :]
    a[1:-1, 1:-1] = ((g * 131 + c * 71) % 128).astype(np.float64) / 128.0
    residuals, change = [], np.zeros(rows)
    for _ in range(steps):
        b = a.copy()
        b[1:-1, 1:-1] = 0.25 * (((a[:-2, 1:-1] + a[2:, 1:-1]) + a[1:-1, :-2]) + a[1:-1, 2:])
        change = np.abs(b[1:-1, 1:-1] - a[1:-1, 1:-1]).max(axis=1)
        residuals.append(float(change.max()))
        a = b
    return a[1:-1, 1:-1], residuals, change


def test_reference_is_not_trivial():
    grid, res, _ = reference(2, 8, 5)
    assert len(set(res)) == 5 and all(r > 0 for r in res)
    assert grid[0].max() > grid[-1].max()  # heat flows in from the top edge


def check_run(r, out, dump, model, pes, kind, sizes):
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["command"].startswith("gpucomm apps run jacobi2d")
    (report,) = doc["runs"]
    assert report["app"] == "jacobi2d" and report["pe_kind"] == kind and report["pes"] == pes
    for key in ("date", "commit", "command", "timing"):
        assert report[key], key
    assert "iteration" in report["timing"]
    assert [res["size"] for res in report["results"]] == sizes
    steps = report["warmup"] + report["iters"]
    for res in report["results"]:
        n = res["size"]
        grid, residuals, _ = reference(pes, n, steps)
        assert res["model"] == model
        assert res["verified"] and res["wrong_steps"] == 0 and res["wrong_cells"] == 0, res
        assert res["value"] == res["reference"] == residuals[-1]
        assert len(res["iter_us"]) == report["iters"] and all(t > 0 for t in res["iter_us"])
        for rank in range(pes):
            part = np.fromfile(dump / f"jacobi2d-{model}-{n}-{rank}.f64", dtype=np.float64).reshape(n, n)
            want = grid[rank * n:(rank + 1) * n]
            assert np.array_equal(part, want), (model, n, rank, int((part != want).sum()))
    assert "verified" in r.stdout and model in r.stdout


@pytest.mark.parametrize("pes", [2, 3])
@pytest.mark.parametrize("model", HOST_MODELS)
def test_jacobi_host_model_equals_reference(run_apps, apps_tool, tmp_path, model, pes):
    out, dump = tmp_path / "j.json", tmp_path / "grid"
    dump.mkdir()
    r = run_apps("run", "jacobi2d", "--host", "-n", str(pes), "--model", model,
                 "--size", ",".join(map(str, SIZES)), "--warmup", str(WARMUP), "--iters", str(ITERS),
                 "--json", str(out), "--dump-grid", str(dump))
    check_run(r, out, dump, model, pes, "host", SIZES)


@pytest.mark.parametrize("model", HOST_MODELS)
def test_jacobi_wrong_result_is_caught(run_apps, apps_tool, tmp_path, model):
    out = tmp_path / "j.json"
    r = run_apps("run", "jacobi2d", "--host", "-n", "2", "--model", model, "--size", "16",
                 "--warmup", "0", "--iters", "3", "--corrupt-rank", "1", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    # PE 1 adds 1 to its residual every iteration (wrong on both PEs) and to one point of its grid.
    assert not res["verified"] and res["wrong_steps"] == 3 * 2 and res["wrong_cells"] == 1
    _, residuals, change = reference(2, 16, 3)
    assert res["value"] == max(residuals[-1], float(change[16:].max()) + 1) and res["reference"] == residuals[-1]
    assert "WRONG in 6 step(s), 1 point(s) of the result" in r.stdout, r.stdout
    assert "wrong_cells" in r.stdout + r.stderr


def test_jacobi_is_listed_done(run_apps, apps_tool):
    r = run_apps("list", "--json")
    (j,) = [a for a in json.loads(r.stdout)["apps"] if a["name"] == "jacobi2d"]
    assert j["done"] and j["default_sizes"] == [256, 1024] and j["sweep"][-1] == 2048
    assert [m["model"] for m in j["models"] if m["host"] == "done"] == HOST_MODELS
    assert [m["model"] for m in j["models"] if m["gpu"] == "done"] == GPU_MODELS
    r = run_apps("list")
    assert "jacobi2d:" in r.stdout and "planned" not in r.stdout.split("jacobi2d:")[1].splitlines()[0]


@pytest.mark.parametrize("args, words", [
    (["--model", "collective"], ["no model 'collective' on host-memory PEs (not-possible", "point to point",
                                 "valid models: " + ", ".join(HOST_MODELS)]),
    (["--model", "bogus"], ["unknown model 'bogus'", "valid models on host-memory PEs: " + ", ".join(HOST_MODELS)]),
    (["--size", "3"], ["'3' is out of range", "valid sizes of jacobi2d", "4 to 2K", "64,128,256,512,1K,2K"]),
    (["--size", "4K"], ["'4K' is out of range", "valid sizes of jacobi2d"]),
    (["--size", "1x"], ["'1x' is not a size", "valid sizes of jacobi2d"]),
])
def test_jacobi_bad_model_or_size_is_a_usage_error(run_apps, apps_tool, args, words):
    r = run_apps("run", "jacobi2d", "--host", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("gpucomm apps run: error: "), r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    assert "PEs in shared memory" not in r.stdout  # refused before anything was launched


def test_jacobi_program_refuses_bad_size_by_itself(apps_tool):
    import subprocess
    r = subprocess.run([str(apps_tool), "run", "jacobi2d", "--sizes", "3K"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "--sizes" in r.stderr and "valid sizes of jacobi2d" in r.stderr, r.stderr


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of Jacobi 2-D need one")
@pytest.mark.parametrize("model", GPU_MODELS)
def test_jacobi_gpu_model_equals_reference(run_apps, apps_tool, tmp_path, model):
    out, dump = tmp_path / "j.json", tmp_path / "grid"
    dump.mkdir()
    r = run_apps("run", "jacobi2d", "-n", "2", "--model", model, "--size", "8,33,256",
                 "--warmup", "2", "--iters", "5", "--json", str(out), "--dump-grid", str(dump))
    check_run(r, out, dump, model, 2, "gpu", [8, 33, 256])


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of Jacobi 2-D need one")
def test_jacobi_gpu_wrong_result_is_caught(run_apps, apps_tool, tmp_path):
    out = tmp_path / "j.json"
    r = run_apps("run", "jacobi2d", "-n", "2", "--model", "putget", "--size", "16",
                 "--warmup", "0", "--iters", "3", "--corrupt-rank", "0", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    assert res["wrong_steps"] == 3 * 2 and res["wrong_cells"] == 1
