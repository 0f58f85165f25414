"""``gpucomm apps run mmv``: multi-matrix-vector's listing and refusals everywhere; on GPU machines
every model against a reference computed here with numpy, independently of the C++ program (the
last batch's products summed: integers, so equality), and a corrupted product must be caught."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gpus import gpu_count

GPU_MODELS = ["loadstore", "putget", "cpu", "cpu_graph"]
WARMUP, ITERS = 2, 5


def reference_value(kb: int, batch: int) -> float:
    """The sum of batch `batch`'s products, as include/gpucomm/apps/mmv.hpp defines the inputs."""
    vectors = kb * 1024 // 128
    i = np.arange(32)[:, None]
    k = np.arange(32)[None, :]
    m = ((i * 5 + k * 11) % 9 - 4).astype(np.int64)
    v = np.arange(vectors)[:, None]
    x = ((v * 7 + k * 3 + (batch % 8) * 5) % 9 - 4).astype(np.int64)
    return float((x @ m.T).sum())


def test_reference_is_not_trivial():
    assert len({reference_value(60, b) for b in range(1, 9)}) > 1


def test_mmv_is_listed_gpu_only(run_apps, apps_tool):
    r = run_apps("list", "--json")
    assert r.returncode == 0, r.stderr
    (app,) = [a for a in json.loads(r.stdout)["apps"] if a["name"] == "mmv"]
    assert app["done"] and app["default_sizes"] == [60, 960]
    assert sorted(m["model"] for m in app["models"] if m["gpu"] == "done") == sorted(GPU_MODELS)
    assert all(m["host"] == "not-possible" for m in app["models"])


@pytest.mark.parametrize("args, words", [
    (["--host"], "mmv has no model on host-memory PEs"),
    (["--host", "--model", "cpu"], "has no model 'cpu' on host-memory PEs (not-possible"),
    (["--size", "0"], "valid sizes of mmv"),
    (["--size", "17M"], "valid sizes of mmv"),
])
def test_mmv_refusals_are_usage_errors(run_apps, apps_tool, args, words):
    r = run_apps("run", "mmv", *args)
    assert r.returncode == 2 and words in r.stderr, r.stderr


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: multi-matrix-vector runs on GPU PEs only")
@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("model", GPU_MODELS)
def test_mmv_gpu_model_equals_reference(run_apps, apps_tool, tmp_path, model, pes):
    out = tmp_path / "mmv.json"
    r = run_apps("run", "mmv", "-n", str(pes), "--model", model, "--size", "1,7,60", "--warmup", str(WARMUP),
                 "--iters", str(ITERS), "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    (report,) = json.loads(out.read_text())["runs"]
    for res in report["results"]:
        assert res["verified"] and res["value"] == reference_value(res["size"], WARMUP + ITERS), res


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: multi-matrix-vector runs on GPU PEs only")
@pytest.mark.parametrize("model", GPU_MODELS)
def test_mmv_gpu_wrong_result_is_caught(run_apps, apps_tool, tmp_path, model):
    out = tmp_path / "mmv.json"
    r = run_apps("run", "mmv", "-n", "1", "--model", model, "--size", "7", "--warmup", "1", "--iters", "3",
                 "--corrupt-rank", "0", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    assert not res["verified"] and res["wrong_steps"] == 4 and res["wrong_cells"] == 4
