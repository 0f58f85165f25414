"""``gpucomm bench msg`` without a GPU: the command line (help, bad arguments, exit codes), the
JSON report of the host-memory measurement (8-byte ping-pong and message rate on 2 host PEs), the
baselines of ``--anchors`` (not available without a GPU, and their report from made-up rows)."""
from __future__ import annotations

import json

import pytest

QUICK_HOST = {"GPUCOMM_DEVICE": "host", "GPUCOMM_HEAP_SIZE": "32M", "GPUCOMM_TIMEOUT": "30"}


def test_help(run_gpucomm):
    r = run_gpucomm("bench", "msg", "--help")
    assert r.returncode == 0, r.stderr
    for flag in ("--quick", "--json", "--sections", "--anchors"):
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
    assert set(doc["baselines"]) == {"nccl_send_recv", "mpi_staging"}
    assert all(v["status"].startswith("not measured") and v["results"] == [] for v in doc["baselines"].values())
    assert "NCCL send/recv: not measured (gpucomm bench msg --anchors runs it)" in r.stdout
    rows = {(x["name"], x["level"]): x for x in doc["results"]}
    for key in (("msg_rt", "host"), ("msg_rate", "no_any_source"), ("msg_rate", "mpi")):
        assert key in rows, (key, doc["results"])
        row = rows[key]
        for col in ("section", "bytes", "ctas", "unit", "median", "min", "max", "samples"):
            assert col in row, (key, col)
        assert row["bytes"] == 8 and row["samples"] >= 5 and row["median"] > 0, row
    # The GPU sections are named as skipped on host PEs, not reported as failures.
    assert set(doc["errors"]) == {"floors", "unexpected", "rendezvous", "depth", "steps", "endpoints"}
    assert all(e.startswith("skipped") for e in doc["errors"].values())


def test_host_pes_one_section(run_gpucomm, tmp_path):
    out = tmp_path / "msg.json"
    r = run_gpucomm("bench", "msg", "--quick", "--sections", "floors", "--json", str(out), env=QUICK_HOST)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["results"] == [] and doc["sections"] == ["floors"]


def test_gpu_report_from_rows(build):
    """The GPU report and its targets from made-up rows (the formatting a GPU run goes through)."""
    from gpucomm.bench import msg

    rows = []
    for lv, (flag, ps, rt, un) in {"thread": (1.0, 1.5, 1.6, 3.5), "warp": (1.1, 1.6, 1.7, 3.0),
                                   "block": (1.5, 2.0, 2.1, 4.0)}.items():
        for name, v in (("flag_rt", flag), ("put_signal_rt", ps), ("msg_rt", rt), ("msg_rt_unexpected", un)):
            rows.append({"name": name, "level": lv, "bytes": 8, "ctas": 2, "median": v})
    for mb in (1, 4, 16):
        for name, v in (("rndv_us", 12.0 * mb), ("put_us", 11.0 * mb), ("rndv_overhead_us", 1.0 * mb)):
            rows.append({"name": name, "level": "block", "bytes": mb << 20, "ctas": 1, "median": v})
    for mode, base in (("no_any_source", 50.0), ("mpi", 25.0)):
        for n in (8, 32, 128):
            rows.append({"name": "msg_rate", "level": mode, "bytes": 8, "ctas": n, "median": base + n / 8})
            rows.append({"name": "msg_rate_with_posting", "level": mode, "bytes": 8, "ctas": n, "median": base / 2})
    res = {"pe_kind": "gpu", "gpu": "H100", "results": rows, "errors": {"rate": "exit code 1: timeout"}}
    for mode in ("no_any_source", "mpi"):
        for d, v in ((1024, 40.0), (4096, 10.0)):
            rows.append({"name": "msg_rate_depth", "level": mode, "bytes": 8, "ctas": d, "median": v})
    res["results"] = rows
    ts = {t["target"]: t for t in msg.targets(res)}
    assert ts["8 B round trip, receives pre-posted (thread) <= 2.5x the flag round trip"]["met"] is True
    assert ts["8 B round trip, receives pre-posted (block) <= 3.0x the flag round trip"]["met"] is True
    assert ts["unexpected path (thread) <= 1.3x pre-posted"]["met"] is False
    assert ts["rendezvous overhead at 16 MB <= 5 us"]["met"] is False
    assert ts["rendezvous overhead at 4 MB <= 5 us"]["met"] is True
    assert ts["8 B rate into one warp, no_any_source, 8 sending warps >= 20 M/s"]["met"] is True
    assert ts["8 B rate into one warp, mpi, 8 sending warps >= 20 M/s"]["met"] is True
    assert ts["8 B rate into one warp, mpi, counting the posting of the receives >= 15 M/s (worst of 8/32/128)"][
        "met"] is False
    assert ts["rate at depth 4096 (mpi) >= 20 M/s"]["met"] is False
    assert ts["rate at depth 4096 (mpi) >= 2/3 of the rate at 768 (32 sending warps)"]["met"] is False
    text = "\n".join(msg.table(res) + msg.target_lines(msg.targets(res)))
    assert "MISSED" in text and "section rate: exit code 1" in text
    assert msg.endpoint_lines(res) == []  # no endpoints section measured: nothing printed beside
    # The endpoints' numbers beside the targets (the targets themselves stay the communicator's).
    for lv, (rt, un) in {"thread": (2.2, 2.5), "warp": (4.0, 4.1), "block": (3.0, 5.0)}.items():
        rows.append({"name": "ep_rt", "level": lv, "bytes": 8, "ctas": 2, "median": rt})
        rows.append({"name": "ep_rt_unexpected", "level": lv, "bytes": 8, "ctas": 2, "median": un})
    for mode in ("no_any_source", "mpi"):
        for n in (8, 32, 128):
            rows.append({"name": "ep_rate", "level": mode, "bytes": 8, "ctas": n, "median": 30.0})
            rows.append({"name": "ep_rate_with_posting", "level": mode, "bytes": 8, "ctas": n, "median": 20.0})
        rows.append({"name": "ep_rate_depth", "level": mode, "bytes": 8, "ctas": 4096, "median": 12.0})
    assert {t["target"]: t["value"] for t in msg.targets(res)} == {t["target"]: t["value"] for t in ts.values()}
    beside = "\n".join(msg.endpoint_lines(res))
    assert "endpoints 8 B round trip (thread) <= 2.5x flag: 2.20 vs 2.50 us -> within" in beside
    assert "endpoints 8 B round trip (warp) <= 3.0x flag: 4.00 vs 3.30 us -> beyond" in beside
    assert "endpoints unexpected path (block) <= 1.3x pre-posted: 5.00 vs 3.90 us -> beyond" in beside
    assert "endpoints rate at depth 4096, mpi >= 20 M/s: 12.00 vs 20.00 Mmsg/s -> beyond" in beside
    table = "\n".join(msg.table(res))
    assert "endpoints, receives pre-posted" in table and "the same rate through endpoints" in table


def test_anchors_without_gpu_are_not_available(run_gpucomm, tmp_path):
    out = tmp_path / "msg.json"
    r = run_gpucomm("bench", "msg", "--quick", "--anchors", "--sections", "floors", "--json", str(out), env=QUICK_HOST)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    for name in ("nccl_send_recv", "mpi_staging"):
        assert doc["baselines"][name]["status"].startswith("not available: "), doc["baselines"]
    assert "Open MPI, host staging: not available" in r.stdout, r.stdout


def test_baselines_beside_gpucomm(build):
    """The side-by-side lines from made-up rows: gpucomm's 1-PE numbers, NCCL and MPI at 1 and 2 ranks."""
    from gpucomm.bench import msg

    rows = [{"name": "msg_rt", "level": "block", "bytes": 8, "ctas": 2, "median": 46.0}]
    rows += [{"name": "rndv_us", "level": "block", "bytes": b, "ctas": 1, "median": b / 1e4} for b in msg.LARGE]
    res = {"pe_kind": "gpu", "gpu": "H100", "results": rows, "errors": {}}

    def base(prefix, ranks):
        out = []
        for n in ranks:
            out.append({"name": prefix + "_rt", "ranks": n, "bytes": 8, "median": 10.0 * n})
            out += [{"name": prefix + "_us", "ranks": n, "bytes": b, "median": b / 1e5} for b in msg.LARGE]
        return out

    baselines = {"nccl_send_recv": msg.baseline(base("nccl_sendrecv", [1, 2]), []),
                 "mpi_staging": msg.baseline([], ["2 rank(s): exit code 1: boom"])}
    text = "\n".join(msg.baseline_lines(res, baselines))
    assert "gpucomm send/recv, block level, a PE to itself" in text and "46.00" in text
    assert "NCCL send/recv, a GPU to itself" in text and "NCCL send/recv, 2 GPUs" in text and "20.00" in text
    assert "Open MPI, host staging: not available: 2 rank(s): exit code 1: boom" in text
