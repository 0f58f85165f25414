"""Running applications of the suite: one launch of ``gpucomm-apps`` per application (all its models
and sizes in one job), its JSON report read back, tables printed."""
from __future__ import annotations

import json
import os
import sys
import tempfile

from gpucomm._tools import find_tool
from gpucomm.apps.catalog import App, size_text
from gpucomm.launch import LaunchOptions, launch


def run_app(app: App, models: list[str], sizes: list[int], *, pes: int, gpu: bool, warmup: int, iters: int,
            extra: list[str] | None = None) -> tuple[int, dict | None]:
    """Runs `app` on `pes` PEs; returns the job's exit code and the report (None if none was written)."""
    fd, path = tempfile.mkstemp(prefix="gpucomm-apps-", suffix=".json")
    os.close(fd)
    try:
        cmd = [str(find_tool("gpucomm-apps")), "run", app.name, "--models", ",".join(models),
               "--sizes", ",".join(size_text(s) for s in sizes), "--warmup", str(warmup), "--iters", str(iters),
               "--json", path, *(extra or [])]
        env = {"GPUCOMM_DEVICE": "gpu" if gpu else "host"}
        sys.stdout.flush()
        rc = launch(LaunchOptions(nprocs=pes, command=cmd, extra_env=env, gpus="auto" if gpu else "none"))
        report = None
        if os.path.getsize(path) > 0:
            with open(path, encoding="utf-8") as f:
                report = json.load(f)
        return rc, report
    finally:
        os.unlink(path)


def print_runs(report: dict, out=sys.stdout) -> None:
    """One line per (model, size) of a report."""
    print(f"{report['app']} on {report['pes']} {report['pe_kind']} PEs ({report['iters']} timed steps, "
          f"{report['warmup']} warm-up): time per step, the slowest PE's", file=out)
    print(f"{'model':<12} {'size':>6} {'median us':>12} {'min us':>12}  result", file=out)
    for r in report["results"]:
        result = "verified" if r["verified"] else f"WRONG in {r['wrong_steps']} step(s)"
        if r.get("wrong_cells"):
            result += f", {r['wrong_cells']} point(s) of the result"
        if "gups" in r:  # RandomAccess: every PE's updates of a step / the median step time
            result += f"  {r['gups']:.4g} GUPS"
        print(f"{r['model']:<12} {size_text(r['size']):>6} {r['median_us']:>12.2f} {r['min_us']:>12.2f}  {result}",
              file=out)


def print_comparison(report: dict, out=sys.stdout) -> None:
    """A table of medians: one row per size, one column per model, and each model's speed-up over the
    CPU-controlled model where it ran."""
    models = list(dict.fromkeys(r["model"] for r in report["results"]))
    sizes = list(dict.fromkeys(r["size"] for r in report["results"]))
    cell = {(r["model"], r["size"]): r for r in report["results"]}
    print(f"{report['app']} on {report['pes']} {report['pe_kind']} PEs: median us per step "
          f"(x: speed-up over cpu; !: result differs from the CPU reference)", file=out)
    print(f"{'size':>6} " + " ".join(f"{m:>18}" for m in models), file=out)
    for s in sizes:
        base = cell.get(("cpu", s))
        row = []
        for m in models:
            r = cell.get((m, s))
            if r is None:
                row.append(f"{'-':>18}")
                continue
            text = f"{r['median_us']:.2f}"
            if base and r["median_us"] > 0:
                text += f" ({base['median_us'] / r['median_us']:.1f}x)"
            row.append(f"{text + ('' if r['verified'] else ' !'):>18}")
        print(f"{size_text(s):>6} " + " ".join(row), file=out)
