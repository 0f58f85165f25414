"""``gpucomm apps run nbody``: N-Body in every model that exists on host-memory PEs, across real
processes (1, 2 and 3 PEs), against a reference computed here with numpy, independently of the C++
program: the report's value (the final checksums summed in rank order) and every PE's final
positions (written by the hidden --dump-grid) must be equal bit for bit. The check itself must
catch a wrong result; bad sizes (out of range, or not a multiple of the number of PEs) and models
are usage errors that list the valid ones. GPU models run where GPUs exist and skip with the
reason otherwise.

The interactions of a body are added by ring stage (PE r holds the block of PE (r - k) mod P in
stage k), then by body index, each operation rounded on its own as numpy's element-wise
operations round them; sqrt and division are correctly rounded. No tolerance."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gpus import gpu_count

HOST_MODELS = ["loadstore", "putget", "sendrecv", "cpu"]
GPU_MODELS = ["loadstore", "putget", "cpu"]
SIZES = [96, 192]
WARMUP, ITERS = 1, 2
DT, EPS2 = 1.0 / 1024, 1.0 / 64


def initial(n: int) -> np.ndarray:
    """Bodies 0..n-1 as docs/APPS.md defines them: x, y, z, mass."""
    g = np.arange(n, dtype=np.uint64)
    b = np.empty((n, 4))
    for c, (a, off) in enumerate(((2654435761, 17), (40503, 29), (97787, 53))):
        b[:, c] = ((g * np.uint64(a) + np.uint64(off)) % np.uint64(8191)).astype(np.float64) / 4096.0 - 1.0
    b[:, 3] = ((g * np.uint64(48271) + np.uint64(7)) % np.uint64(1024) + np.uint64(1)).astype(np.float64) / 1024.0
    return b


def reference(pes: int, n: int, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The positions (n x 3) after `steps` steps on `pes` PEs and each step's checksum per PE
    (steps x pes): the sum over a PE's bodies, in index order, of (x + y) + z."""
    nb = n // pes
    b, vel = initial(n), np.zeros((n, 3))
    checksums = np.zeros((steps, pes))
    for s in range(steps):
        acc = np.zeros((n, 3))
        for r in range(pes):
            xi, yi, zi = (b[r * nb:(r + 1) * nb, c] for c in range(3))
            ax, ay, az = np.zeros(nb), np.zeros(nb), np.zeros(nb)
            for k in range(pes):
                src = (r - k) % pes
                for j in range(src * nb, (src + 1) * nb):
                    dx, dy, dz = b[j, 0] - xi, b[j, 1] - yi, b[j, 2] - zi
                    d2 = ((dx * dx + dy * dy) + dz * dz) + EPS2
                    f = b[j, 3] / (d2 * np.sqrt(d2))
                    ax, ay, az = ax + dx * f, ay + dy * f, az + dz * f
            acc[r * nb:(r + 1) * nb] = np.stack([ax, ay, az], axis=1)
        vel = vel + acc * DT
        b = b.copy()
        b[:, :3] = b[:, :3] + vel * DT
        per_body = (b[:, 0] + b[:, 1]) + b[:, 2]
        for r in range(pes):
            checksums[s, r] = np.cumsum(per_body[r * nb:(r + 1) * nb])[-1]  # sequential, not pairwise
    return b[:, :3], checksums


def value(checksums: np.ndarray, corrupt: int = -1) -> float:
    """The report's value: the last step's checksums summed in rank order (+1 on `corrupt`)."""
    v = 0.0
    for r, c in enumerate(checksums[-1]):
        v = v + (c + 1.0 if r == corrupt else c)
    return float(v)


def test_reference_is_not_trivial():
    pos, checksums = reference(2, 64, 3)
    assert not np.array_equal(pos, initial(64)[:, :3])
    assert len({float(c) for c in checksums[:, 0]}) == 3  # the bodies move every step
    # The same system on 1 PE adds the blocks in another order: the same motion, up to rounding.
    pos1, _ = reference(1, 64, 3)
    assert np.abs(pos1 - pos).max() < 1e-12


def check_run(r, out, dump, model, pes, kind, sizes):
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["command"].startswith("gpucomm apps run nbody")
    (report,) = doc["runs"]
    assert report["app"] == "nbody" and report["pe_kind"] == kind and report["pes"] == pes
    for key in ("date", "commit", "command", "timing"):
        assert report[key], key
    assert "ring" in report["timing"]
    assert [res["size"] for res in report["results"]] == sizes
    steps = report["warmup"] + report["iters"]
    for res in report["results"]:
        n = res["size"]
        pos, checksums = reference(pes, n, steps)
        assert res["model"] == model
        assert res["verified"] and res["wrong_steps"] == 0 and res["wrong_cells"] == 0, res
        assert res["value"] == res["reference"] == value(checksums)
        assert len(res["iter_us"]) == report["iters"] and all(t > 0 for t in res["iter_us"])
        nb = n // pes
        for rank in range(pes):
            part = np.fromfile(dump / f"nbody-{model}-{n}-{rank}.f64", dtype=np.float64).reshape(nb, 3)
            want = pos[rank * nb:(rank + 1) * nb]
            assert np.array_equal(part, want), (model, n, rank, int((part != want).any(axis=1).sum()))
    assert "verified" in r.stdout and model in r.stdout


@pytest.mark.parametrize("pes", [1, 2, 3])
@pytest.mark.parametrize("model", HOST_MODELS)
def test_nbody_host_model_equals_reference(run_apps, apps_tool, tmp_path, model, pes):
    out, dump = tmp_path / "nb.json", tmp_path / "bodies"
    dump.mkdir()
    r = run_apps("run", "nbody", "--host", "-n", str(pes), "--model", model,
                 "--size", ",".join(map(str, SIZES)), "--warmup", str(WARMUP), "--iters", str(ITERS),
                 "--json", str(out), "--dump-grid", str(dump))
    check_run(r, out, dump, model, pes, "host", SIZES)


@pytest.mark.parametrize("model", HOST_MODELS)
def test_nbody_wrong_result_is_caught(run_apps, apps_tool, tmp_path, model):
    out = tmp_path / "nb.json"
    r = run_apps("run", "nbody", "--host", "-n", "2", "--model", model, "--size", "64",
                 "--warmup", "0", "--iters", "3", "--corrupt-rank", "1", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    # PE 1 adds 1 to its checksum every step and to the x of its first body at the end.
    assert not res["verified"] and res["wrong_steps"] == 3 and res["wrong_cells"] == 1
    _, checksums = reference(2, 64, 3)
    assert res["value"] == value(checksums, corrupt=1) and res["reference"] == value(checksums)
    assert "WRONG in 3 step(s), 1 point(s) of the result" in r.stdout, r.stdout


def test_nbody_is_listed_done(run_apps, apps_tool):
    r = run_apps("list", "--json")
    (a,) = [a for a in json.loads(r.stdout)["apps"] if a["name"] == "nbody"]
    assert a["done"] and a["default_sizes"] == [4096, 15360] and a["sweep"] == [1024, 4096, 15360, 32768, 131072]
    assert (a["warmup"], a["iters"], a["quick_warmup"], a["quick_iters"]) == (1, 5, 1, 2)  # O(n^2) steps
    assert [m["model"] for m in a["models"] if m["host"] == "done"] == HOST_MODELS
    assert [m["model"] for m in a["models"] if m["gpu"] == "done"] == GPU_MODELS
    for m in a["models"]:  # a model that cannot exist says why
        for kind in ("host", "gpu"):
            assert m[kind] != "not-possible" or m[f"{kind}_note"], m
    r = run_apps("list")
    assert "nbody:" in r.stdout and "planned" not in r.stdout.split("nbody:")[1].splitlines()[0]


@pytest.mark.parametrize("args, words", [
    (["--model", "patterns"], ["no model 'patterns' on host-memory PEs (not-possible", "stencils",
                               "valid models: " + ", ".join(HOST_MODELS)]),
    (["--model", "bogus"], ["unknown model 'bogus'", "valid models on host-memory PEs: " + ", ".join(HOST_MODELS)]),
    (["--size", "32"], ["'32' is out of range", "valid sizes of nbody", "64 to 256K", "1K,4K,15K,32K,128K"]),
    (["--size", "512K"], ["'512K' is out of range", "valid sizes of nbody"]),
    (["--size", "4Q"], ["'4Q' is not a size", "valid sizes of nbody"]),
])
def test_nbody_bad_model_or_size_is_a_usage_error(run_apps, apps_tool, args, words):
    r = run_apps("run", "nbody", "--host", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("gpucomm apps run: error: "), r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    assert "PEs in shared memory" not in r.stdout  # refused before anything was launched


def test_nbody_size_that_does_not_split_is_a_usage_error(run_apps, apps_tool):
    r = run_apps("run", "nbody", "--host", "-n", "3", "--model", "putget", "--size", "96,100")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "--sizes" in r.stderr and "100 bodies do not split into 3 equal blocks" in r.stderr, r.stderr
    assert "[1/" not in r.stderr  # refused before any model ran


def test_nbody_program_refuses_bad_size_by_itself(apps_tool):
    import subprocess
    r = subprocess.run([str(apps_tool), "run", "nbody", "--sizes", "1M"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--sizes" in r.stderr and "valid sizes of nbody" in r.stderr, r.stderr


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of N-Body need one")
@pytest.mark.parametrize("model", GPU_MODELS)
def test_nbody_gpu_model_equals_reference(run_apps, apps_tool, tmp_path, model):
    out, dump = tmp_path / "nb.json", tmp_path / "bodies"
    dump.mkdir()
    r = run_apps("run", "nbody", "-n", "2", "--model", model, "--size", "96,600,4K",
                 "--warmup", "1", "--iters", "2", "--json", str(out), "--dump-grid", str(dump))
    check_run(r, out, dump, model, 2, "gpu", [96, 600, 4096])


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of N-Body need one")
@pytest.mark.parametrize("model", GPU_MODELS)
def test_nbody_gpu_model_on_one_pe_passes_to_itself(run_apps, apps_tool, tmp_path, model):
    out, dump = tmp_path / "nb.json", tmp_path / "bodies"
    dump.mkdir()
    r = run_apps("run", "nbody", "-n", "1", "--model", model, "--size", "600",
                 "--warmup", "1", "--iters", "2", "--json", str(out), "--dump-grid", str(dump))
    check_run(r, out, dump, model, 1, "gpu", [600])


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of N-Body need one")
def test_nbody_gpu_wrong_result_is_caught(run_apps, apps_tool, tmp_path):
    out = tmp_path / "nb.json"
    r = run_apps("run", "nbody", "-n", "2", "--model", "putget", "--size", "64",
                 "--warmup", "0", "--iters", "3", "--corrupt-rank", "0", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    assert res["wrong_steps"] == 3 and res["wrong_cells"] == 1
