"""``gpucomm apps run random_access``: RandomAccess (HPC Challenge) in every model that exists on
host-memory PEs, across real processes (2 and 3 PEs), against a reference computed here,
independently of the C++ program: the HPCC 64-bit stream and its jump (HPCC_starts) re-implemented
in Python, the whole global table updated serially with numpy. Every PE's final table (written by the
hidden --dump-grid) must equal it word for word, and the report's value (the global table's XOR,
top 53 bits) must equal the reference's. The check itself must catch a wrong result; sizes that are
not powers of two are usage errors that list the valid ones. GPU models run where GPUs exist and skip
with the reason otherwise."""
from __future__ import annotations

import functools
import json
import subprocess

import numpy as np
import pytest

from gpus import gpu_count

HOST_MODELS = ["loadstore", "putget", "sendrecv", "am", "cpu"]
GPU_MODELS = ["loadstore", "putget", "cpu"]
# 256: fewer updates per step than a bucket holds; 64K at 2 and 3 PEs: several full buckets (1024
# updates) to every PE in every step, more than the put/get inbox's 4 slots.
SIZES = [256, 4096, 65536]
WARMUP, ITERS = 1, 4

POLY, PERIOD, MASK = 0x7, 1317624576693539401, (1 << 64) - 1


def step(ran: int) -> int:
    """One element of the HPCC stream to the next: x -> x * 2 in GF(2)[x] modulo x^64 + x^2 + x + 1."""
    return ((ran << 1) & MASK) ^ (POLY if ran >> 63 else 0)


def starts(n: int) -> int:
    """HPCC_starts(n), element n of the stream from 1, by square-and-multiply in GF(2)[x] (no
    reduction modulo the period: the test below checks the period instead)."""
    result, base = 1, 2  # x^0, x^1
    while n:
        if n & 1:
            result = mulmod(result, base)
        base = mulmod(base, base)
        n >>= 1
    return result


def mulmod(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a = step(a)
        b >>= 1
    return r


@functools.lru_cache(maxsize=None)
def reference(pes: int, n: int, steps: int) -> tuple[np.ndarray, list[int]]:
    """The global table after `steps` steps and its XOR after every step, as docs/APPS.md defines
    RandomAccess: PE r's update u of step s is stream element (r * steps + s - 1) * n/4 + u + 1; it
    XORs itself into global word ran mod (pes * n)."""
    g, per = pes * n, n // 4
    table = np.arange(g, dtype=np.uint64)
    xors = []
    for s in range(1, steps + 1):
        rans = []
        for r in range(pes):
            ran = starts((r * steps + s - 1) * per)
            for _ in range(per):
                ran = step(ran)
                rans.append(ran)
        vals = np.array(rans, dtype=np.uint64)
        np.bitwise_xor.at(table, (vals % np.uint64(g)).astype(np.int64), vals)
        xors.append(int(np.bitwise_xor.reduce(table)))
    return table, xors


def test_stream_and_jump():
    ran = 1
    for m in range(300):
        assert starts(m) == ran, m
        ran = step(ran)
    assert starts(PERIOD) == 1 and starts(PERIOD + 5) == starts(5)  # HPCC's period, which the program uses
    table, xors = reference(2, 256, 3)
    assert len(set(xors)) == 3 and not np.array_equal(table, np.arange(512, dtype=np.uint64))


def test_program_selftest_checks_its_jump(apps_tool):
    r = subprocess.run([str(apps_tool), "selftest"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "HPCC_starts(m) equals m steps" in r.stdout, r.stdout + r.stderr


def check_run(r, out, dump, model, pes, kind, sizes):
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["command"].startswith("gpucomm apps run random_access")
    (report,) = doc["runs"]
    assert report["app"] == "random_access" and report["pe_kind"] == kind and report["pes"] == pes
    assert "GUPS" in report["timing"]
    assert [res["size"] for res in report["results"]] == sizes
    steps = report["warmup"] + report["iters"]
    for res in report["results"]:
        n = res["size"]
        table, xors = reference(pes, n, steps)
        assert res["model"] == model
        assert res["verified"] and res["wrong_steps"] == 0 and res["wrong_cells"] == 0, res
        assert res["value"] == res["reference"] == float(xors[-1] >> 11)
        assert len(res["iter_us"]) == report["iters"] and all(t > 0 for t in res["iter_us"])
        assert res["gups"] == pytest.approx(pes * (n // 4) / (res["median_us"] * 1e3))
        if dump is None:
            continue
        for rank in range(pes):
            part = np.fromfile(dump / f"random_access-{model}-{n}-{rank}.u64", dtype=np.uint64)
            want = table[rank * n:(rank + 1) * n]
            assert np.array_equal(part, want), (model, n, rank, int((part != want).sum()))
    assert "verified" in r.stdout and "GUPS" in r.stdout and model in r.stdout


@pytest.mark.parametrize("pes", [2, 3])
@pytest.mark.parametrize("model", HOST_MODELS)
def test_random_access_host_model_equals_reference(run_apps, apps_tool, tmp_path, model, pes):
    out, dump = tmp_path / "ra.json", tmp_path / "table"
    dump.mkdir()
    r = run_apps("run", "random_access", "--host", "-n", str(pes), "--model", model,
                 "--size", ",".join(map(str, SIZES)), "--warmup", str(WARMUP), "--iters", str(ITERS),
                 "--json", str(out), "--dump-grid", str(dump))
    check_run(r, out, dump, model, pes, "host", SIZES)


@pytest.mark.parametrize("model", HOST_MODELS)
def test_random_access_wrong_result_is_caught(run_apps, apps_tool, tmp_path, model):
    out = tmp_path / "ra.json"
    r = run_apps("run", "random_access", "--host", "-n", "2", "--model", model, "--size", "1K",
                 "--warmup", "0", "--iters", "3", "--corrupt-rank", "1", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    # PE 1 flips bit 0 of its table's XOR every step (wrong on both PEs) and of its word 0 at the end.
    assert not res["verified"] and res["wrong_steps"] == 3 * 2 and res["wrong_cells"] == 1
    _, xors = reference(2, 1024, 3)
    assert res["reference"] == float(xors[-1] >> 11) and res["value"] == float((xors[-1] ^ 1) >> 11)
    assert "WRONG in 6 step(s), 1 point(s) of the result" in r.stdout, r.stdout


def test_random_access_is_listed_done(run_apps, apps_tool):
    r = run_apps("list", "--json")
    (a,) = [a for a in json.loads(r.stdout)["apps"] if a["name"] == "random_access"]
    assert a["done"] and a["power_of_two"] and a["default_sizes"] == [64 * 1024, 1024 * 1024]
    assert [m["model"] for m in a["models"] if m["host"] == "done"] == HOST_MODELS
    assert [m["model"] for m in a["models"] if m["gpu"] == "done"] == GPU_MODELS
    r = run_apps("list")
    assert "random_access:" in r.stdout
    assert "planned" not in r.stdout.split("random_access:")[1].splitlines()[0]


@pytest.mark.parametrize("args, words", [
    (["--size", "1000"], ["'1000' is not a power of two", "valid sizes of random_access: powers of two",
                          "256 to 8M", "1K,4K,16K,64K,256K,1M,4M"]),
    (["--size", "3K"], ["'3K' is not a power of two", "valid sizes of random_access"]),
    (["--size", "128"], ["'128' is out of range", "valid sizes of random_access"]),
    (["--size", "16M"], ["'16M' is out of range", "valid sizes of random_access"]),
    (["--model", "collective"], ["no model 'collective' on host-memory PEs (not-possible",
                                 "valid models: " + ", ".join(HOST_MODELS)]),
])
def test_random_access_bad_size_or_model_is_a_usage_error(run_apps, apps_tool, args, words):
    r = run_apps("run", "random_access", "--host", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("gpucomm apps run: error: "), r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    assert "PEs in shared memory" not in r.stdout  # refused before anything was launched


def test_random_access_program_refuses_bad_size_by_itself(apps_tool):
    r = subprocess.run([str(apps_tool), "run", "random_access", "--sizes", "3K"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "not a power of two" in r.stderr and "valid sizes of random_access" in r.stderr, \
        r.stderr


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of RandomAccess need one")
@pytest.mark.parametrize("model", GPU_MODELS)
def test_random_access_gpu_model_equals_reference(run_apps, apps_tool, tmp_path, model):
    out, dump = tmp_path / "ra.json", tmp_path / "table"
    dump.mkdir()
    r = run_apps("run", "random_access", "-n", "2", "--model", model, "--size", "256,4K,64K",
                 "--warmup", "2", "--iters", "5", "--json", str(out), "--dump-grid", str(dump))
    check_run(r, out, dump, model, 2, "gpu", [256, 4096, 65536])


@pytest.mark.skipif(gpu_count() == 0, reason="no GPU on this machine: the GPU models of RandomAccess need one")
def test_random_access_gpu_wrong_result_is_caught(run_apps, apps_tool, tmp_path):
    out = tmp_path / "ra.json"
    r = run_apps("run", "random_access", "-n", "2", "--model", "loadstore", "--size", "1K",
                 "--warmup", "0", "--iters", "3", "--corrupt-rank", "0", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads(out.read_text())["runs"][0]["results"]
    assert res["wrong_steps"] == 3 * 2 and res["wrong_cells"] == 1
