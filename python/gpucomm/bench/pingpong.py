"""``gpucomm bench pingpong``: one-way latency between every pair of local PEs."""
from __future__ import annotations

import argparse
import os
import sys

from gpucomm._tools import find_tool
from gpucomm.cli import _args
from gpucomm.launch import LaunchOptions, launch
from gpucomm.launch.gpus import visible_gpu_count


def register(sub) -> None:
    p = sub.add_parser("pingpong", help="one-way latency between every pair of local PEs",
                       description="Ping-pong between every pair of local PEs: GPU PEs (one per GPU; two sharing "
                                   "the GPU when there is only one) when GPUs exist, host-memory PEs otherwise.")
    p.add_argument("-n", "--np", type=_at_least_2, default=None, metavar="N",
                   help="number of PEs, at least 2 (default: one per GPU, at least 2)")
    p.add_argument("--host", action="store_true", help="use host-memory PEs even when GPUs exist")
    p.add_argument("--sizes", default="8,1024,65536", help="payload bytes (default: 8,1024,65536)")
    p.add_argument("--quick", action="store_true", help="fewer iterations")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.set_defaults(func=run)


def _at_least_2(text: str) -> int:
    n = _args.positive_int(text)
    if n < 2:
        raise argparse.ArgumentTypeError(f"a ping-pong needs at least 2 PEs, got {n}")
    return n


def run(args) -> int:
    gpus = 0 if args.host else visible_gpu_count()
    n = args.np or max(2, gpus)
    env = {}
    if gpus == 0:
        env["GPUCOMM_DEVICE"] = "host"
        why = "requested with --host" if args.host else "no GPU found"
        print(f"gpucomm bench pingpong: host-memory mode ({why}): {n} PEs in shared memory", flush=True)
    else:
        env["GPUCOMM_DEVICE"] = "gpu"
        note = " (PEs share GPUs: functional check, not a latency)" if n > gpus else ""
        print(f"gpucomm bench pingpong: {n} GPU PEs on {gpus} GPU(s){note}", flush=True)
    cmd = [str(find_tool("gpucomm-bench-pingpong")), "--sizes", args.sizes]
    if args.quick:
        cmd.append("--quick")
    if args.json:
        cmd += ["--json", os.path.abspath(args.json)]
    sys.stdout.flush()
    return launch(LaunchOptions(nprocs=n, command=cmd, extra_env=env, gpus="auto" if gpus else "none"))
