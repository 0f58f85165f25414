"""``gpucomm trace``: the shared traces against their README ground truth, CLI behaviour, plots,
queue snapshots and the DNN model."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACES = ["lulesh-n8", "minife-n4", "naive-alltoall-n4"]


def traces_dir() -> Path | None:
    if os.environ.get("GPUCOMM_TRACES_DIR"):
        return Path(os.environ["GPUCOMM_TRACES_DIR"])
    for p in [REPO, *REPO.parents]:
        if (p.parent / "shared" / "traces").is_dir():
            return p.parent / "shared" / "traces"
    return None


def have_tool() -> bool:
    try:
        from gpucomm._tools import find_tool
        find_tool("gpucomm-trace")
        return True
    except FileNotFoundError:
        return False


needs_tool = pytest.mark.skipif(not have_tool(), reason="gpucomm-trace not built (cmake --build --preset ci)")


def trace_path(name: str) -> Path:
    d = traces_dir()
    if d is None or not (d / name).is_dir():
        pytest.skip(f"shared trace {name} not found (set GPUCOMM_TRACES_DIR)")
    return d / name


def gpucomm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "gpucomm", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    if check and proc.returncode != 0:
        raise AssertionError(f"gpucomm {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def counts(text: str) -> dict:
    return {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", text)}


def ints(text: str) -> list:
    return [int(x) for x in text.split(",") if x.strip()]


def parse_readme(path: Path) -> dict:
    text = path.read_text()
    m = re.search(r"Whole trace: (\d+) ranks, (\d+) p2p sends, (\d+) p2p recvs, send bytes min/median/max/total = "
                  r"([\d.]+) / ([\d.]+) / ([\d.]+) / (\d+), (\d+) communicating \(src,dst\) pairs, pair count check: (\w+), "
                  r"pair bytes check: (\w+).*?MPI_ANY_SOURCE recvs: (\d+) \(unresolved (\d+)\)", text)
    assert m, "README has no whole-trace line"
    out = {"ranks": int(m[1]), "sends": int(m[2]), "recvs": int(m[3]),
           "send_bytes": tuple(map(float, m.group(4, 5, 6, 7))), "pairs": int(m[8]),
           "pair_count_check": m[9] == "ok", "pair_bytes_check": m[10] == "ok",
           "any_source": int(m[11]), "any_source_unresolved": int(m[12]),
           "collectives": counts(re.search(r"Collectives \(all ranks\): ([^\n]*)", text)[1]),
           "rows": {}, "details": {}}
    for r in re.finditer(r"^\| (\d+) \| (\d+) \| (\d+) \| (\d+) \| ([\d.]+) / ([\d.]+) / ([\d.]+) \| ([\d.]+) / ([\d.]+) / "
                         r"([\d.]+) \| ([^|]*) \| (\d+) \|$", text, re.M):
        out["rows"][int(r[1])] = {
            "sends": int(r[2]), "recvs": int(r[3]), "peers": int(r[4]),
            "send": tuple(map(float, r.group(5, 6, 7))), "recv": tuple(map(float, r.group(8, 9, 10))),
            "collectives": counts(r[11]), "max_out": int(r[12])}
    for r in re.finditer(r"- rank (\d+): sends ([^;]*); recvs ([^;]*); send peers \[([^\]]*)\]; recv peers \[([^\]]*)\]; "
                         r"tags \[([^\]]*)\](?:; ANY_SOURCE recvs (\d+) \(unresolved (\d+)\))?", text):
        out["details"][int(r[1])] = {
            "send_functions": counts(r[2]), "recv_functions": counts(r[3]),
            "send_peers": ints(r[4]), "recv_peers": ints(r[5]), "tags": ints(r[6]),
            "any_source": int(r[7]) if r[7] else 0, "unresolved": int(r[8]) if r[8] else 0}
    return out


def mmm(s: dict) -> tuple:
    return (s["min"], s["median"], s["max"])


@needs_tool
@pytest.mark.parametrize("name", TRACES)
def test_shared_trace_matches_readme(name, tmp_path):
    path = trace_path(name)
    truth = parse_readme(path / "README.md")
    out = tmp_path / "report.json"
    gpucomm("trace", "analyze", str(path), "--json", str(out))
    rep = json.loads(out.read_text())
    run = rep["run"]["p2p"]
    assert rep["trace"]["ranks"] == truth["ranks"]
    assert (run["sends"], run["recvs"]) == (truth["sends"], truth["recvs"])
    assert (*mmm(run["send_bytes"]), run["send_bytes"]["total"]) == truth["send_bytes"]
    assert run["pairs"] == truth["pairs"]
    assert run["pair_count_check"] == truth["pair_count_check"]
    assert run["pair_bytes_check"] == truth["pair_bytes_check"]
    assert (run["any_source_recvs"], run["any_source_unresolved"]) == (truth["any_source"], truth["any_source_unresolved"])
    assert rep["run"]["collectives"]["by_function"] == truth["collectives"]
    assert len(truth["rows"]) == truth["ranks"] == len(truth["details"])
    for r in rep["ranks"]:
        row, det, p = truth["rows"][r["rank"]], truth["details"][r["rank"]], r["p2p"]
        assert (p["sends"], p["recvs"], p["distinct_peers"]) == (row["sends"], row["recvs"], row["peers"])
        assert mmm(p["send_bytes"]) == row["send"]
        assert mmm(p["recv_bytes"]) == row["recv"]
        assert r["collectives"]["by_function"] == row["collectives"]
        assert p["max_outstanding_recv_requests"] == row["max_out"]
        assert p["send_functions"] == det["send_functions"]
        assert p["recv_functions"] == det["recv_functions"]
        assert (p["send_peers"], p["recv_peers"], p["tags"]) == (det["send_peers"], det["recv_peers"], det["tags"])
        assert (p["any_source_recvs"], p["any_source_unresolved"]) == (det["any_source"], det["unresolved"])
    assert rep["warnings"] == []
    # Replay sanity: every message is matched exactly once and nothing is left queued.
    q = rep["run"]["queues"]
    assert q["expected"] + q["unexpected"] == truth["sends"]
    assert q["left_umq"] == q["left_prq"] == 0


@needs_tool
def test_text_report_plots_and_snapshots(tmp_path):
    path = trace_path("lulesh-n8")
    snap = tmp_path / "q.bin"
    proc = gpucomm("trace", "analyze", str(path), "--plots", str(tmp_path / "plots"), "--export-queues", str(snap),
                   "--snapshots", "0")
    assert "Point-to-point" in proc.stdout and "Matching-queue replay" in proc.stdout
    assert "sends 5456" in proc.stdout
    pngs = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert pngs == ["lulesh-n8-queues.png", "lulesh-n8-rate.png", "lulesh-n8-sizes.png"]
    assert all((tmp_path / "plots" / p).stat().st_size > 1000 for p in pngs)
    from gpucomm.trace import snapshot
    snaps = snapshot.read(str(snap))
    assert len(snaps) == 8  # one per rank
    assert all(len(s.umq) + len(s.prq) > 0 for s in snaps)
    for s in snaps:
        for e in s.umq:
            assert e.source != snapshot.ANY and e.tag in (1024, 2048, 3072)
    copy = tmp_path / "copy.bin"
    snapshot.write(str(copy), snaps)
    assert copy.read_bytes() == snap.read_bytes()


@needs_tool
def test_rank_filter_and_json_stdout():
    path = trace_path("minife-n4")
    proc = gpucomm("trace", "analyze", str(path), "--json", "-", "--rank", "2")
    rep = json.loads(proc.stdout)
    assert [r["rank"] for r in rep["ranks"]] == [2]
    assert rep["run"]["p2p"]["sends"] == 660


@needs_tool
def test_errors_name_the_argument_or_file(tmp_path):
    proc = gpucomm("trace", "analyze", str(tmp_path / "nope"), check=False)
    assert proc.returncode != 0 and "argument PATH" in proc.stderr
    path = trace_path("naive-alltoall-n4")
    proc = gpucomm("trace", "analyze", str(path), "--rank", "9", check=False)
    assert proc.returncode != 0 and "--rank" in proc.stderr
    proc = gpucomm("trace", "analyze", str(path), "--rank", "x", check=False)
    assert proc.returncode == 2 and "--rank" in proc.stderr
    bad = tmp_path / "bad"
    shutil.copytree(path, bad)
    victim = sorted(bad.glob("*-0002.bin"))[0]
    victim.chmod(0o644)
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    proc = gpucomm("trace", "analyze", str(bad), check=False)
    assert proc.returncode == 1
    assert victim.name in proc.stderr and "byte offset" in proc.stderr, proc.stderr
    victim.unlink()
    proc = gpucomm("trace", "analyze", str(bad), check=False)
    assert proc.returncode == 1 and "rank file missing" in proc.stderr and victim.name in proc.stderr


def test_help_everywhere():
    for args in (["trace", "--help"], ["trace", "analyze", "--help"], ["trace", "dnn-model", "--help"]):
        proc = gpucomm(*args)
        assert "usage:" in proc.stdout


def test_dnn_model_reproduces_table_4_3():
    proc = gpucomm("trace", "dnn-model", "--json", "-")
    res = json.loads(proc.stdout)
    seed = res["table_4_3"]
    for k, row in enumerate(res["speedups"]):
        # The table prints rounded inputs, so its speedups are reproduced to within 0.015.
        assert abs(row["speedup_without"] - seed["speedup_without_communication"][k]) < 0.015
        assert abs(row["speedup_with"] - seed["speedup_with_communication"][k]) < 0.015
        assert abs(row["ratio"] - seed["computation_over_communication"][k]) < 0.03
    eff = res["efficiency"]
    # Legible entries of seed Table 4.6 (percent, rounded).
    assert round(100 * eff["AlexNet"]["data-fc-16"]) == 45
    assert round(100 * eff["AlexNet"]["data-ring-16"]) == 5
    assert round(100 * eff["ResNet-152"]["data-fc-16"]) == 97
    assert round(100 * eff["GoogLeNet"]["model-fc-64"]) == 42
    # Model parallelism over a fully connected network does not depend on the GPU count.
    assert eff["VGG-16"]["model-fc-16"] == pytest.approx(eff["VGG-16"]["model-fc-256"])


def test_dnn_model_rejects_mismatched_lists():
    proc = gpucomm("trace", "dnn-model", "--gpus", "2,4", "--computation-ms", "1", check=False)
    assert proc.returncode != 0 and "--computation-ms" in proc.stderr
