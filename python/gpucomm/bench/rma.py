"""``gpucomm bench rma``: the one-sided layer's latency and bandwidth between two GPU PEs.

Launches ``gpucomm-bench-rma`` on 2 PEs (``gpucomm run -n 2``), prints its table, writes its JSON
with ``--json FILE``, and with ``--compare-nvshmem FILE`` (the JSON of
``bench/nvshmem/build_and_run.sh``) prints gpucomm / NVSHMEM ratios for the shared points.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gpucomm._tools import find_tool
from gpucomm.launch.gpus import require_gpus

# Lower is better for latencies, higher for bandwidth and rates.
_LOWER_IS_BETTER = {"us"}


def register(targets) -> None:
    p = targets.add_parser("rma", help="one-sided latency, bandwidth and barrier time between 2 GPU PEs",
                           description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer sizes, iterations and trials")
    p.add_argument("--json", metavar="FILE", help="write the results (schema: bench/rma/results.hpp)")
    p.add_argument("--compare-nvshmem", metavar="FILE", help="NVSHMEM results (bench/nvshmem/build_and_run.sh)")
    p.add_argument("--gpus", default="auto", metavar="LIST", help="GPUs for the 2 PEs (passed to gpucomm run)")
    p.set_defaults(func=run)


def _key(r: dict) -> tuple:
    return (r["name"], r["level"], r["bytes"], r["ctas"])


def compare(ours: dict, theirs: dict) -> list[str]:
    """Lines of a side-by-side table for the points both result files have."""
    index = {_key(r): r for r in theirs.get("results", [])}
    lines = [f"{'benchmark':<22} {'level':<7} {'bytes':>11} {'ctas':>5} {'gpucomm':>10} {'NVSHMEM':>10} {'unit':<6} "
             f"{'ratio':>6}  (ratio > 1: gpucomm better)"]
    for r in ours.get("results", []):
        o = index.get(_key(r))
        if not o or not o["median"] or not r["median"]:
            continue
        better = o["median"] / r["median"] if r["unit"] in _LOWER_IS_BETTER else r["median"] / o["median"]
        lines.append(f"{r['name']:<22} {r['level']:<7} {r['bytes']:>11} {r['ctas']:>5} {r['median']:>10.3f} "
                     f"{o['median']:>10.3f} {r['unit']:<6} {better:>6.2f}")
    if len(lines) == 1:
        lines.append("(no common points)")
    return lines


def run(args) -> int:
    if os.environ.get("GPUCOMM_DEVICE", "gpu") not in ("gpu", "auto", ""):
        raise ValueError(f"the RMA benchmark runs on GPU PEs; GPUCOMM_DEVICE={os.environ['GPUCOMM_DEVICE']} "
                         "asks for another kind (unset it)")
    require_gpus("the RMA benchmark")
    tool = find_tool("gpucomm-bench-rma")
    out = args.json
    tmp = None
    if not out:
        tmp = tempfile.NamedTemporaryFile(prefix="gpucomm-bench-rma-", suffix=".json", delete=False)
        tmp.close()
        out = tmp.name
    env = dict(os.environ)
    env["GPUCOMM_DEVICE"] = "gpu"
    env["NCCL_NVLS_ENABLE"] = "0"
    env["NVSHMEM_DISABLE_NVLS"] = "1"
    cmd = [sys.executable, "-m", "gpucomm", "run", "-n", "2", "--gpus", args.gpus, "--", str(tool), "--json", out]
    if args.quick:
        cmd.append("--quick")
    rc = subprocess.call(cmd, env=env)
    try:
        if rc != 0:
            print(f"gpucomm bench rma: the benchmark failed (exit code {rc})", file=sys.stderr)
            return rc
        if args.compare_nvshmem:
            ours = json.loads(Path(out).read_text())
            theirs = json.loads(Path(args.compare_nvshmem).read_text())
            print()
            print("\n".join(compare(ours, theirs)))
        if args.json:
            print(f"wrote {args.json}")
        return 0
    finally:
        if tmp:
            os.unlink(tmp.name)
