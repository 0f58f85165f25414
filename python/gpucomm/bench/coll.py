"""``gpucomm bench coll``: the collectives' host API with nccl-tests conventions.

Launches ``gpucomm-bench-coll`` on N PEs (``gpucomm run -n N``): GPU PEs when GPUs exist (two
sharing the GPU when there is only one), host-memory PEs otherwise or with ``--host``. Prints the
table (size, count, type, redop, root, then out-of-place and in-place time, algbw, busbw, CTAs,
wrong) and writes JSON with ``--json FILE``. Options after ``--`` go to the program unchanged
(see ``gpucomm-bench-coll --help``). With ``--anchors`` (GPU PEs) the same allreduce sizes run
afterwards through NCCL and torch symmetric memory in the same job (gpucomm.bench.coll_anchors),
written beside the JSON as ``FILE-anchors.json`` and compared with gpucomm's graph replay; and
gpucomm's in-kernel barrier and allreduce run beside NVSHMEM's device collectives and NCCL's device
API on the same N PEs (gpucomm.bench.coll_device_anchors), written as ``FILE-device-anchors.json``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gpucomm._tools import find_tool
from gpucomm.bench import coll_device_anchors
from gpucomm.bench.coll_anchors import ANCHOR_PLACEMENT
from gpucomm.launch import LaunchOptions, launch
from gpucomm.launch.gpus import visible_gpu_count


def register(targets) -> None:
    p = targets.add_parser("coll", help="collectives (allreduce, allgather, ...) with nccl-tests conventions",
                           description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("-n", "--np", type=int, default=0, metavar="N",
                   help="number of PEs (default: one per GPU, at least 2)")
    p.add_argument("--host", action="store_true", help="use host-memory PEs even when GPUs exist")
    p.add_argument("--ops", help="operations, comma-separated (default: all but barrier)")
    p.add_argument("-d", "--type", help="data type (default f32)")
    p.add_argument("-o", "--redop", help="reduction (default sum)")
    p.add_argument("-b", "--minbytes", help="smallest size (K, M, G suffixes)")
    p.add_argument("-e", "--maxbytes", help="largest size")
    p.add_argument("-f", "--stepfactor", help="size multiplier")
    p.add_argument("--mode", choices=["eager", "graph", "both"], help="GPU PEs: eager calls, graph replays or both")
    p.add_argument("--algo", help="algorithm (default: the cost model's choice)")
    p.add_argument("--max-ctas", help="bound on the CTAs of a call")
    p.add_argument("--quick", action="store_true", help="fewer sizes, iterations and samples")
    p.add_argument("--force-protocol", action="store_true",
                   help="one PE: run the N-PE protocol with the PE as its own peer (barrier, oneshot, oneshot_ll) "
                        "instead of the one-member short-cut")
    p.add_argument("--barrier-algo", help="algorithm of the in-kernel barrier (default: the cost model's choice)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("--anchors", action="store_true",
                   help="GPU PEs: also run the NCCL and torch symmetric memory anchors (needs torch) and the "
                        "in-kernel anchors (NVSHMEM, NCCL's device API)")
    p.add_argument("--anchors-dir", metavar="DIR",
                   help="the in-kernel anchor programs (bench/coll_anchors/build.sh DIR; default: built from the "
                        "source tree into a cache folder)")
    p.add_argument("extra", nargs="*", help="further options for gpucomm-bench-coll (after --)")
    p.set_defaults(func=run)


def command(args) -> list[str]:
    """The program's command line for the parsed arguments."""
    cmd = [str(find_tool("gpucomm-bench-coll"))]
    for flag in ("ops", "type", "redop", "minbytes", "maxbytes", "stepfactor", "mode", "algo", "max_ctas",
                 "barrier_algo"):
        value = getattr(args, flag)
        if value is not None:
            cmd += ["--" + flag.replace("_", "-"), str(value)]
    if args.quick:
        cmd.append("--quick")
    if getattr(args, "force_protocol", False):
        cmd.append("--force-protocol")
    if getattr(args, "in_kernel", None):
        cmd += ["--in-kernel", ",".join(str(b) for b in args.in_kernel), "--kernel-iters", str(kernel_iters(args))]
    if args.json:
        cmd += ["--json", os.path.abspath(args.json)]
    return cmd + list(args.extra)


def kernel_sizes(args) -> list[int]:
    """Sizes of the in-kernel allreduce (gpucomm's and the anchors')."""
    return [8, 1024] if args.quick else [8, 64, 1024, 16384]


def kernel_iters(args) -> int:
    return 200 if args.quick else 1000


def run(args) -> int:
    gpus = 0 if args.host else visible_gpu_count()
    n = args.np or max(2, gpus)
    env = {}
    if gpus == 0:
        env["GPUCOMM_DEVICE"] = "host"
        why = "requested with --host" if args.host else "no GPU found"
        print(f"gpucomm bench coll: host-memory PEs ({why}): {n} PEs in shared memory", flush=True)
    else:
        env["GPUCOMM_DEVICE"] = "gpu"
        env["NCCL_NVLS_ENABLE"] = "0"
        note = " (PEs share GPUs: functional, host enqueue times meaningful, bandwidths not)" if n > gpus else ""
        print(f"gpucomm bench coll: {n} GPU PEs on {gpus} GPU(s){note}", flush=True)
    sys.stdout.flush()
    with tempfile.TemporaryDirectory(prefix="gpucomm-bench-coll-") as tmp:
        if args.anchors and gpus:
            if n <= gpus:  # PEs sharing a GPU would time the time slices, not the collectives
                args.in_kernel = kernel_sizes(args)
            if not args.json:  # the comparisons read gpucomm's results
                args.json = os.path.join(tmp, "coll.json")
        rc = launch(LaunchOptions(nprocs=n, command=command(args), extra_env=env, gpus="auto" if gpus else "none"))
        if args.anchors:
            if gpus == 0:
                print("gpucomm bench coll: --anchors needs GPU PEs (skipped)", flush=True)
            else:
                rc = run_anchors(args) or rc
                rc = run_device_anchors(args, n, gpus) or rc
    return rc


def run_device_anchors(args, n: int, gpus: int) -> int:
    """NVSHMEM's device collectives and NCCL's device API on the same N PEs, beside gpucomm's in-kernel
    barrier and allreduce (gpucomm.bench.coll_device_anchors)."""
    root, ext = os.path.splitext(os.path.abspath(args.json))
    out = f"{root}-device-anchors{ext or '.json'}"
    report = coll_device_anchors.run(n, gpus, kernel_sizes(args), kernel_iters(args), 10 if args.quick else 20, 256,
                                     args.anchors_dir, out)
    if os.path.exists(args.json):
        print(coll_device_anchors.compare(json.loads(Path(args.json).read_text()), report), flush=True)
    print(f"gpucomm bench coll: wrote {out}", flush=True)
    return 0


def anchors_path(json_path: str | None) -> str | None:
    if not json_path:
        return None
    root, ext = os.path.splitext(os.path.abspath(json_path))
    return f"{root}-anchors{ext or '.json'}"


def run_anchors(args) -> int:
    """NCCL and torch symmetric memory on the same GPU, in a process of their own (torch stays out of
    this one); then gpucomm's graph replay per allreduce beside NCCL's at the smallest shared size."""
    out = anchors_path(args.json)
    sizes = "8,65536" if args.quick else "8,1024,65536,1048576"
    # The same calls per sample (per graph) as gpucomm's run: a graph launch's fixed cost is spread
    # over them, so a different count would bias the per-call comparison.
    iters = 10 if args.quick else 20
    if args.json and os.path.exists(args.json):
        iters = int(json.loads(Path(args.json).read_text()).get("iters", iters))
    cmd = [sys.executable, "-m", "gpucomm.bench.coll_anchors", "--sizes", sizes, "--iters", str(iters)]
    if args.quick:
        cmd += ["--samples", "10"]
    if out:
        cmd += ["--json", out]
    print("gpucomm bench coll: anchors: " + " ".join(cmd[1:]), flush=True)
    rc = subprocess.run(cmd, env={**os.environ, "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                                  "NVSHMEM_DISABLE_NVLS": "1"}, check=False).returncode
    if rc != 0 or not out or not args.json or not os.path.exists(out) or not os.path.exists(args.json):
        return rc
    print(compare_graph_replay(json.loads(Path(args.json).read_text()), json.loads(Path(out).read_text())), flush=True)
    return 0


def compare_graph_replay(ours: dict, anchors: dict) -> str:
    """Lines: gpucomm's graph replay per call against NCCL's (same operation and placement, the
    smallest size both measured), for allreduce (in place, as torch calls NCCL) and allgather (out of
    place)."""
    lines = []
    for op in ("allreduce", "allgather"):
        nccl_rows = [r for r in anchors.get("results", []) if r.get("anchor") == f"nccl_{op}" and r.get("mode") == "graph"]
        if not nccl_rows:
            lines.append(f"# graph replay vs NCCL, {op}: NCCL not measured")
            continue
        placement = nccl_rows[0].get("placement", ANCHOR_PLACEMENT[f"nccl_{op}"])
        nccl = {r["bytes"]: r["time_us"] for r in nccl_rows}
        mine = {r["size"]: r["time_us"] for r in ours.get("results", [])
                if r.get("op") == op and r.get("mode") == "graph" and r.get("placement", placement) == placement}
        where = "in place" if placement == "in" else "out of place"
        shared = sorted(set(mine) & set(nccl))
        if not shared:
            lines.append(f"# graph replay vs NCCL, {op} ({where}): no size measured by both")
            continue
        b = shared[0]
        verdict = "met" if mine[b] <= nccl[b] else "MISSED"
        lines.append(f"# graph replay per {op} ({where}), {b} B, {ours.get('iters', '?')} calls per graph: "
                     f"gpucomm {mine[b]:.2f} us ({ours.get('pes')} PE(s)) vs NCCL {nccl[b]:.2f} us "
                     f"({anchors.get('pes')} rank(s)); target no slower: {verdict} (ratio {mine[b] / nccl[b]:.2f})")
    return "\n".join(lines)
