"""Runs ``gpucomm-trace analyze`` and returns its JSON report."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gpucomm._tools import find_tool

PROGRESS_MIN_BYTES = 16 << 20


def trace_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    if path.suffix == ".meta":
        return trace_bytes(path.parent)
    return path.stat().st_size


def run_analyzer(path: str, rank: int | None = None, export_queues: str | None = None,
                 snapshots: int | None = None, progress: bool | None = None) -> dict:
    """Analyses the trace at ``path`` (a DUMPI directory, .meta file or dumpi2ascii text).

    Raises FileNotFoundError when the path or the tool is missing and RuntimeError with the
    analyser's message when the trace is malformed. With ``progress`` (default: standard error
    is a terminal and the trace exceeds 16 MB) the analyser draws a progress bar on stderr.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"argument PATH: {path} does not exist")
    if progress is None:
        progress = sys.stderr.isatty() and trace_bytes(p) > PROGRESS_MIN_BYTES
    cmd = [str(find_tool("gpucomm-trace")), "analyze", str(p), "--progress" if progress else "--no-progress"]
    if rank is not None:
        cmd += ["--rank", str(rank)]
    if export_queues:
        cmd += ["--export-queues", str(export_queues)]
    if snapshots is not None:
        cmd += ["--snapshots", str(snapshots)]
    # With a progress bar stderr goes straight to the terminal; otherwise it is captured so that
    # the analyser's message becomes this command's error.
    # Bytes that are not UTF-8 (from a file name or a damaged trace) come out escaped, never as a
    # decoding error that would hide the message.
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None if progress else subprocess.PIPE,
                          encoding="utf-8", errors="backslashreplace")
    if proc.returncode != 0:
        lines = (proc.stderr or "").strip().splitlines()
        detail = next((ln for ln in lines if "error:" in ln), lines[-1] if lines else "analysis failed (see above)")
        raise RuntimeError(detail.replace("gpucomm-trace: error: ", ""))
    try:
        return json.loads(proc.stdout)
    except ValueError as exc:
        raise RuntimeError(f"{path}: the analyser's report is not valid JSON ({exc})") from None
