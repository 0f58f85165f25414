"""``gpucomm apps``: Global Sum in every model that exists on host-memory PEs, across real processes
(2 and 3 PEs), checked against a reference computed here, independently of the C++ program; the
check itself must catch a wrong result; bad applications, models and sizes are usage errors (exit 2)
that list the valid ones. GPU models run where GPUs exist and skip with the reason otherwise.

The input is integer-valued (|x| <= 100), so the sums are exact in double precision: results are
compared for equality, no tolerance."""
from __future__ import annotations

import importlib.util
import json

import pytest

from gpus import gpu_count


def have_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None

HOST_MODELS = ["loadstore", "putget", "sendrecv", "collective", "cpu"]
GPU_MODELS = ["loadstore", "putget", "collective", "cpu"]
SIZES = {"128": 128, "1000": 1000, "3K": 3072}


def reference(pes: int, n: int) -> int:
    """The global sum of every PE's input, as docs/APPS.md defines it."""
    return sum(((i * 2654435761 + r * 97) % 201) - 100 for r in range(pes) for i in range(n))


@pytest.mark.parametrize("pes", [2, 3])
@pytest.mark.parametrize("model", HOST_MODELS)
def test_global_sum_host_model_equals_reference(run_apps, apps_tool, tmp_path, model, pes):
    out = tmp_path / "gs.json"
    r = run_apps("run", "global_sum", "--host", "-n", str(pes), "--model", model,
                 "--size", ",".join(SIZES), "--warmup", "1", "--iters", "4", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["command"].startswith("gpucomm apps run global_sum")
    (report,) = doc["runs"]
    assert report["pe_kind"] == "host" and report["pes"] == pes
    for key in ("date", "commit", "command", "timing"):
        assert report[key], key
    assert [res["size"] for res in report["results"]] == list(SIZES.values())
    for res in report["results"]:
        assert res["model"] == model
        assert res["verified"] and res["wrong_steps"] == 0
        assert res["value"] == res["reference"] == reference(pes, res["size"])
        assert len(res["iter_us"]) == 4 and all(t > 0 for t in res["iter_us"])
        assert min(res["iter_us"]) <= res["median_us"] <= max(res["iter_us"])
    assert "verified" in r.stdout and model in r.stdout


@pytest.mark.parametrize("model", HOST_MODELS)
def test_a_wrong_result_is_caught(run_apps, apps_tool, tmp_path, model):
    out = tmp_path / "gs.json"
    r = run_apps("run", "global_sum", "--host", "-n", "2", "--model", model, "--size", "128",
                 "--warmup", "0", "--iters", "2", "--corrupt-rank", "1", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    assert not res["verified"] and res["wrong_steps"] == 2 * 2  # every step, on both PEs
    assert res["value"] == reference(2, 128) + 1
    assert "WRONG" in r.stdout + r.stderr


def test_list_shows_models_and_planned_apps(run_apps, apps_tool):
    r = run_apps("list")
    assert r.returncode == 0, r.stderr
    assert "global_sum" in r.stdout
    assert "jacobi2d:" in r.stdout  # done: tests/python/test_apps_jacobi.py
    assert "mmv:" in r.stdout  # done: tests/python/test_apps_mmv.py
    assert "aliev_panfilov:" in r.stdout  # done: tests/python/test_apps_aliev_panfilov.py
    assert "nbody:" in r.stdout  # done: tests/python/test_apps_nbody.py
    assert "random_access:" in r.stdout  # done: tests/python/test_apps_random_access.py
    assert "himeno:" in r.stdout  # done: tests/python/test_apps_himeno.py
    assert "planned, not done" not in r.stdout  # every application of the suite is written
    r = run_apps("list", "--json")
    (gs,) = [a for a in json.loads(r.stdout)["apps"] if a["name"] == "global_sum"]
    assert [m["model"] for m in gs["models"] if m["host"] == "done"] == HOST_MODELS
    assert [m["model"] for m in gs["models"] if m["gpu"] == "done"] == GPU_MODELS
    assert {m["model"]: m["host"] for m in gs["models"]}["proxy"] == "not-possible"


@pytest.mark.parametrize("args, words", [
    (["--model", "nonsense"], ["unknown model 'nonsense'", "valid models on host-memory PEs: " + ", ".join(HOST_MODELS)]),
    (["--model", "proxy"], ["no model 'proxy' on host-memory PEs (not-possible", "valid models"]),
    (["--model", "putget,am"], ["no model 'am'", "planned"]),
    (["--size", "0"], ["'0' is out of range", "valid sizes of global_sum", "sweep"]),
    (["--size", "12Q"], ["'12Q' is not a size", "valid sizes"]),
    (["--size", "128,17M"], ["'17M' is out of range", "16M"]),
])
def test_bad_model_or_size_is_a_usage_error(run_apps, apps_tool, args, words):
    r = run_apps("run", "global_sum", "--host", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("gpucomm apps run: error: "), r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    assert "PEs in shared memory" not in r.stdout  # refused before anything was launched


@pytest.mark.parametrize("app, words", [("nosuch", "unknown application 'nosuch'")])
def test_bad_or_planned_app_is_a_usage_error(run_apps, apps_tool, app, words):
    r = run_apps("run", app, "--host")
    assert r.returncode == 2 and words in r.stderr and "valid applications: global_sum" in r.stderr, r.stderr


def test_program_refuses_bad_arguments_by_itself(apps_tool):
    import subprocess
    r = subprocess.run([str(apps_tool), "run", "global_sum", "--sizes", "1x"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "--sizes" in r.stderr and "valid sizes of global_sum" in r.stderr, r.stderr


def test_compare_quick_on_host_pes(run_apps, apps_tool, tmp_path):
    out_dir = tmp_path / "out"
    r = run_apps("compare", "--quick", "--host", "--out", str(out_dir), timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "speed-up over cpu" in r.stdout and "not done yet" not in r.stdout  # no planned application left
    assert "mmv: no model on host-memory PEs, skipped" in r.stdout  # an application of GPU PEs only
    out = out_dir / "compare.json"
    assert f"results: {out}" in r.stdout  # says where the JSON and the plots are
    reports = {report["app"]: report for report in json.loads(out.read_text())["runs"]}
    if have_matplotlib():
        for app in reports:
            png = out_dir / f"{app}-time.png"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and str(png) in r.stdout
    else:
        assert "plots: none (matplotlib is not installed" in r.stdout
    for res in (res for report in reports.values() for res in report["results"]):
        w = res["window"]  # the run's wall-clock window and CPU time, for energy measurements
        assert 0 < w["start_unix_ns"] < w["end_unix_ns"] and w["cpu_core_s"] > 0
    assert sorted(reports) == ["aliev_panfilov", "global_sum", "himeno", "jacobi2d", "nbody",
                               "random_access"]  # every finished one
    report = reports["global_sum"]
    assert sorted({res["model"] for res in report["results"]}) == sorted(HOST_MODELS)
    assert {res["size"] for res in report["results"]} == {128, 256 * 1024}
    report = reports["jacobi2d"]
    assert sorted({res["model"] for res in report["results"]}) == ["cpu", "loadstore", "putget", "sendrecv"]
    assert {res["size"] for res in report["results"]} == {256, 1024}
    report = reports["nbody"]
    assert sorted({res["model"] for res in report["results"]}) == ["cpu", "loadstore", "putget", "sendrecv"]
    assert {res["size"] for res in report["results"]} == {4096, 15360}
    assert (report["warmup"], report["iters"]) == (1, 2)  # N-Body's own quick steps
    report = reports["random_access"]
    assert sorted({res["model"] for res in report["results"]}) == ["am", "cpu", "loadstore", "putget", "sendrecv"]
    assert {res["size"] for res in report["results"]} == {64 * 1024, 1024 * 1024}
    assert all(res["gups"] > 0 for res in report["results"])
    assert all(res["verified"] for report in reports.values() for res in report["results"])
    assert "[10/10] global_sum" in r.stderr and "[8/8] jacobi2d" in r.stderr and "[8/8] nbody" in r.stderr
    assert "[10/10] random_access" in r.stderr


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of Global Sum need one")
@pytest.mark.parametrize("model", GPU_MODELS)
def test_global_sum_gpu_model_equals_reference(run_apps, apps_tool, tmp_path, model):
    out = tmp_path / "gs.json"
    pes = max(2, gpu_count())
    r = run_apps("run", "global_sum", "-n", str(pes), "--model", model, "--size", "128,1000,256K",
                 "--warmup", "2", "--iters", "5", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    (report,) = json.loads(out.read_text())["runs"]
    assert report["pe_kind"] == "gpu"
    for res in report["results"]:
        assert res["verified"] and res["value"] == reference(pes, res["size"])


def test_help_and_missing_command(run_gpucomm):
    for args in (["apps", "--help"], ["apps", "list", "--help"], ["apps", "run", "--help"], ["apps", "compare", "--help"],
                 ["apps", "energy", "--help"]):
        r = run_gpucomm(*args)
        assert r.returncode == 0 and "usage: gpucomm apps" in r.stdout, (args, r.stderr)
    assert "--model" in run_gpucomm("apps", "run", "--help").stdout
    r = run_gpucomm("apps")
    assert r.returncode == 2 and "list" in r.stdout and "compare" in r.stdout
