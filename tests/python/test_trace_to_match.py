"""Queue snapshots exported by the trace toolkit replay in the matching benchmark."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

TRACES = Path(os.environ.get("GPUCOMM_TRACES_DIR", Path(__file__).resolve().parents[3] / "shared" / "traces"))


def test_exported_snapshots_replay_in_the_matching_benchmark(run_gpucomm, tmp_path):
    trace = TRACES / "lulesh-n8"
    if not trace.is_dir():
        pytest.skip(f"no shared traces at {TRACES}")
    snap = tmp_path / "lulesh.qsnap"
    r = run_gpucomm("trace", "analyze", str(trace), "--export-queues", str(snap))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "match.json"
    r = run_gpucomm("bench", "match", "--quick", "--no-gpu", "--no-queue", "--lengths", "2", "--replay", str(snap),
                    "--json", str(out), timeout=300)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    replay = data["replay"]
    assert len(replay) == 8, replay  # one snapshot per rank
    assert all(row["matches_per_s"] > 0 for row in replay)
