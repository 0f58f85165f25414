"""Regression tests of the trace toolkit on hand-made traces (handmade_traces.py): request
bookkeeping of ANY_SOURCE receives, file-set checks, unreadable input and output arguments, and
the message-size histogram."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import handmade_traces as ht
from test_trace import needs_tool


def analyze(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpucomm", "trace", "analyze", *map(str, args)], capture_output=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def report(path: Path) -> dict:
    proc = analyze(path, "--json", "-")
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def no_traceback(proc: subprocess.CompletedProcess) -> str:
    err = proc.stderr.decode("utf-8")  # the message itself is valid UTF-8
    assert "Traceback" not in err and "codec can't decode" not in err, err
    return err


@needs_tool
def test_freed_any_source_receive_counts_as_unresolved(tmp_path):
    r0 = [ht.init(), ht.send(10, 1), ht.finalize(100)]
    r1 = [ht.init(), ht.irecv(5, -1, 7), ht.call("MPI_Request_free", 6, 7, "MPI_Request request=[7]"), ht.finalize(100)]
    rep = report(ht.write_run(tmp_path / "t", [r0, r1]))
    p2p = rep["run"]["p2p"]
    assert (p2p["any_source_recvs"], p2p["any_source_unresolved"]) == (1, 1)
    rank1 = rep["ranks"][1]["p2p"]
    assert rank1["recv_peers"] == [] and rank1["any_source_unresolved"] == 1


@needs_tool
def test_cancelled_any_source_receive_adds_no_peer(tmp_path):
    r0 = [ht.init(), ht.finalize(100)]
    r1 = [ht.init(), ht.irecv(5, -1, 8), ht.call("MPI_Cancel", 6, 7, "MPI_Request request=[8]"),
          ht.wait(8, 8, source=-1, cancelled=1, tag=-1, nbytes=0), ht.finalize(100)]
    rep = report(ht.write_run(tmp_path / "t", [r0, r1]))
    rank1 = rep["ranks"][1]["p2p"]
    assert rank1["recv_peers"] == [] and rank1["distinct_peers"] == 0, rank1
    assert rank1["any_source_unresolved"] == 1
    # A resolved ANY_SOURCE receive still counts its sender.
    r1 = [ht.init(), ht.irecv(5, -1, 9), ht.wait(20, 9, source=0), ht.finalize(100)]
    rep = report(ht.write_run(tmp_path / "u", [[ht.init(), ht.send(10, 1), ht.finalize(100)], r1]))
    assert rep["ranks"][1]["p2p"]["recv_peers"] == [0] and rep["run"]["p2p"]["any_source_unresolved"] == 0


@needs_tool
def test_histogram_shows_the_empty_bins_of_a_gap(tmp_path):
    rep = report(ht.ping(tmp_path / "t", sizes=(2, 1024)))
    bins = rep["run"]["p2p"]["send_elements_log2"]
    assert [b[0] for b in bins] == [2 ** k for k in range(1, 11)], bins  # [2,4) ... [1024,2048)
    assert [b[2] for b in bins] == [1] + [0] * 8 + [1]


@needs_tool
def test_unreadable_inputs_name_the_file(tmp_path):
    meta = tmp_path / "m" / "x.meta"
    meta.parent.mkdir()
    meta.write_bytes(bytes(range(256)) * 4)
    proc = analyze(meta.parent)
    assert proc.returncode == 1
    assert str(meta) in no_traceback(proc) and "not a DUMPI .meta file" in proc.stderr.decode()

    d = ht.ping(tmp_path / "t")
    f = d / "run-0001.txt"
    f.write_bytes(b"MPI_\xff\xfeSend entering at walltime 1.000000000, cputime 0.000000000 seconds in thread 0.\n"
                  + f.read_bytes())
    proc = analyze(d)
    err = no_traceback(proc)
    assert proc.returncode == 1 and str(f) in err and "\\xff\\xfe" in err, err


@needs_tool
def test_file_sets_are_checked(tmp_path):
    # A rank number no run has: an error, not an abort.
    big = ht.write_run(tmp_path / "big", [[ht.init(), ht.finalize(10)]])
    (big / "run-0000.txt").rename(big / "x-99999999999.txt")
    for path in (big, big / "x-99999999999.txt"):
        proc = analyze(path)
        assert proc.returncode == 1 and "out of range" in no_traceback(proc), proc.stderr

    # Two runs' text traces in one folder are not merged.
    two = ht.ping(tmp_path / "two", prefix="a")
    ht.ping(two, prefix="b")
    proc = analyze(two)
    err = no_traceback(proc)
    assert proc.returncode == 1 and "text traces of 2 runs" in err and "a-*" in err and "b-*" in err, err

    # Any .txt is not a trace.
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping list\nmilk\n")
    proc = analyze(notes)
    assert proc.returncode == 1 and "not a dumpi2ascii text trace" in no_traceback(proc)


@needs_tool
def test_non_ascii_paths_come_out_unchanged(tmp_path):
    d = ht.ping(tmp_path / "tracé-ü")
    proc = analyze(d, "--json", tmp_path / "rapport-é.json")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "tracé-ü" in proc.stdout.decode("utf-8")
    rep = json.loads((tmp_path / "rapport-é.json").read_text(encoding="utf-8"))
    assert rep["trace"]["input"] == str(d) and "tracé-ü" in json.dumps(rep, ensure_ascii=False)


@needs_tool
def test_output_arguments_are_checked_before_the_analysis(tmp_path):
    d = ht.ping(tmp_path / "t")
    afile = tmp_path / "a-file"
    afile.write_text("x")
    for args, text in (((("--json", tmp_path)), "is a directory"),
                       ((("--json", afile / "r.json")), "is not a directory"),
                       ((("--json", tmp_path / "no" / "r.json")), "does not exist"),
                       ((("--plots", afile)), "exists and is not a directory"),
                       ((("--export-queues", tmp_path)), "is a directory")):
        proc = analyze(d, *args)
        err = no_traceback(proc)
        assert proc.returncode == 2 and text in err and "usage:" in err, (args, err)
    if Path("/dev/full").exists():
        proc = analyze(d, "--json", "/dev/full")
        err = no_traceback(proc)
        assert proc.returncode == 1 and "No space left" in err and "--json" in err, err


def test_plots_without_matplotlib_name_the_extra(tmp_path, monkeypatch, capsys):
    from gpucomm.cli import main
    from gpucomm.trace import plots
    monkeypatch.setattr(plots, "have_matplotlib", lambda: False)
    rc = main(["trace", "analyze", str(tmp_path), "--plots", str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert rc == 1 and "pip install 'gpucomm[plots]'" in err, err
