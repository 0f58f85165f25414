"""``gpucomm bench match``: message-matching engines and warp-parallel queues.

Runs the ``gpucomm-bench-match`` tool (which prints its full table as it goes), then prints a
summary: the best rate of each engine at each queue length, and its ratio to the CPU list
matcher on the same workloads. Without a GPU only the CPU list matcher runs, and the summary
says that the GPU engines were skipped.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from gpucomm._tools import find_tool

_ENGINES = ("cpu_list", "mpi", "no_unexpected", "partitioned", "hash")


def register(targets) -> None:
    p = targets.add_parser(
        "match", help="matching rates of the GPU engines vs the CPU list matcher; queue throughput",
        description="Matches per second against queue length (best, average, worst order; several "
                    "multiplicities) for every matching engine and the CPU list matcher; warp-parallel "
                    "queue throughput and latency; optional replay of queue snapshots.")
    p.add_argument("--quick", action="store_true", help="short run (under a minute on a GPU)")
    p.add_argument("--json", metavar="FILE", help="write the raw results as JSON")
    p.add_argument("--replay", metavar="FILE", help="replay queue snapshots (format: docs/MATCHING.md)")
    p.add_argument("--lengths", help="comma-separated queue lengths")
    p.add_argument("--multiplicities", help="comma-separated key multiplicities (0..1)")
    p.add_argument("--engines", help="comma-separated: cpu,mpi,no_unexpected,partitioned,hash")
    p.add_argument("--iters", type=int, help="timed iterations per measurement")
    p.add_argument("--no-queue", action="store_true", help="skip the queue benchmark")
    p.add_argument("--no-gpu", action="store_true", help="CPU list matcher only")
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    p.set_defaults(func=run)


def tool_args(a, json_path: str) -> list[str]:
    args = ["--json", json_path]
    if a.quick:
        args.append("--quick")
    for opt in ("replay", "lengths", "multiplicities", "engines"):
        value = getattr(a, opt)
        if value:
            args += [f"--{opt}", str(value)]
    if a.iters:
        args += ["--iters", str(a.iters)]
    if a.no_queue:
        args.append("--no-queue")
    if a.no_gpu:
        args.append("--no-gpu")
    return args


def summary(result: dict) -> str:
    """The best rate per (engine, length) and its ratio to the CPU list matcher."""
    rows = [r for r in result.get("matching", []) if not r.get("skipped") and r.get("verified")]
    best: dict[tuple[str, int], float] = {}
    for r in rows:
        key = (r["engine"], r["length"])
        best[key] = max(best.get(key, 0.0), r["matches_per_s"])
    engines = [e for e in _ENGINES if any(k[0] == e for k in best)]
    lengths = sorted({k[1] for k in best})
    lines = []
    if result.get("gpu_skipped"):
        lines.append(f"GPU engines skipped: {result.get('gpu_skipped_reason', 'no GPU')}")
    else:
        lines.append(f"device: {result.get('device')}")
    lines.append("best matches/s per queue length (ratio to the CPU list matcher in brackets)")
    lines.append("length  " + "".join(f"{e:>24}" for e in engines))
    for n in lengths:
        cpu = best.get(("cpu_list", n))
        cells = []
        for e in engines:
            v = best.get((e, n))
            if v is None:
                cells.append(f"{'-':>24}")
            elif e != "cpu_list" and cpu:
                cells.append(f"{v:>14.3g} ({v / cpu:>6.1f}x)")
            else:
                cells.append(f"{v:>24.3g}")
        lines.append(f"{n:<8}" + "".join(cells))
    q = result.get("queue", [])
    if q:
        top = max(q, key=lambda r: r["enqueue_elems_per_s"])
        lines.append(f"queue: peak enqueue {top['enqueue_elems_per_s']:.3g} elem/s "
                     f"({top['warps']} warps, {top['queues']} queues), peak dequeue "
                     f"{max(r['dequeue_elems_per_s'] for r in q):.3g} elem/s")
    if result.get("failures"):
        lines.append(f"FAILURES: {result['failures']} (see the table above)")
    return "\n".join(lines)


def run(a) -> int:
    tool = find_tool("gpucomm-bench-match")
    with tempfile.TemporaryDirectory() as tmp:
        path = a.json or os.path.join(tmp, "match.json")
        out = subprocess.DEVNULL if a.quiet else None
        rc = subprocess.call([str(tool), *tool_args(a, path)], stdout=out)
        if not os.path.exists(path):
            print(f"gpucomm bench match: the tool exited with {rc} and wrote no results", file=sys.stderr)
            return rc or 1
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
    print()
    print(summary(result))
    return rc
