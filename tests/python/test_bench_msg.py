"""``gpucomm bench msg`` without a GPU: the command line (help, bad arguments, exit codes) and the
JSON report of the host-memory measurement (8-byte ping-pong and message rate on 2 host PEs)."""
from __future__ import annotations

import json

import pytest

QUICK_HOST = {"GPUCOMM_DEVICE": "host", "GPUCOMM_HEAP_SIZE": "32M", "GPUCOMM_TIMEOUT": "30"}


def test_help(run_gpucomm):
    r = run_gpucomm("bench", "msg", "--help")
    assert r.returncode == 0, r.stderr
    for flag in ("--quick", "--json", "--sections"):
        assert flag in r.stdout


def test_unknown_section_is_a_usage_error(run_gpucomm):
    r = run_gpucomm("bench", "msg", "--sections", "pingpong,nonsense", env=QUICK_HOST)
    assert r.returncode == 2
    assert "nonsense" in r.stderr


def test_unknown_flag_is_a_usage_error(run_gpucomm):
    r = run_gpucomm("bench", "msg", "--no-such-flag")
    assert r.returncode == 2


def test_host_pes_json(run_gpucomm, tmp_path):
    pytest.importorskip("numpy")
    out = tmp_path / "msg.json"
    r = run_gpucomm("bench", "msg", "--quick", "--json", str(out), env=QUICK_HOST, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    for key in ("tool", "commit", "gpu", "pe_kind", "results", "errors", "baselines", "summary", "markdown"):
        assert key in doc, key
    assert doc["tool"] == "gpucomm bench msg" and doc["pe_kind"] == "host" and doc["gpu"] is None
    assert all(v.startswith("not measured") for v in doc["baselines"].values())
    assert "not measured (needs libnccl / MPI on the GPU machine)" in r.stdout
    rows = {(x["name"], x["level"]): x for x in doc["results"]}
    for key in (("msg_rt", "host"), ("msg_rate", "no_any_source"), ("msg_rate", "mpi")):
        assert key in rows, (key, doc["results"])
        row = rows[key]
        for col in ("section", "bytes", "ctas", "unit", "median", "min", "max", "samples"):
            assert col in row, (key, col)
        assert row["bytes"] == 8 and row["samples"] >= 5 and row["median"] > 0, row
    # The GPU sections are named as skipped on host PEs, not reported as failures.
    assert set(doc["errors"]) == {"floors", "unexpected", "rendezvous"}
    assert all(e.startswith("skipped") for e in doc["errors"].values())


def test_host_pes_one_section(run_gpucomm, tmp_path):
    out = tmp_path / "msg.json"
    r = run_gpucomm("bench", "msg", "--quick", "--sections", "floors", "--json", str(out), env=QUICK_HOST)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["results"] == [] and doc["sections"] == ["floors"]
