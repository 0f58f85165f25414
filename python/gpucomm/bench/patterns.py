"""``gpucomm bench patterns``: the pattern layer against hand-written CUDA calls on one GPU PE.

Runs ``gpucomm-bench-patterns`` on one GPU PE: the host time of a plan's launch against a loop of
cudaMemcpyAsync on the same stream structure (eager and CUDA graph), the bandwidth of H2D, D2H and
D2D plans against cudaMemcpyAsync, the fused pack-and-put kernel against cudaMemcpy2DAsync and
cudaMemcpy3DAsync on the x-faces of 3-D arrays, and the MCL thesis's tables 5.3-5.7 as ratios.
Prints the results with the issue's targets beside them; ``--json FILE`` writes everything.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gpucomm._tools import find_tool

SECTIONS = ("overhead", "bandwidth", "faces", "mcl")


def register(targets) -> None:
    p = targets.add_parser("patterns", help="plans vs hand-written cudaMemcpy*Async: overhead, bandwidth, faces",
                           description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer sizes and trials")
    p.add_argument("--json", metavar="FILE", help="write the results and the summary")
    p.add_argument("--only", metavar="LIST", help=f"only these sections (comma-separated: {', '.join(SECTIONS)})")
    p.add_argument("--gpu", default="0", metavar="N", help="the GPU to run on (passed to gpucomm run --gpus)")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.only:
        unknown = set(args.only.split(",")) - set(SECTIONS)
        if unknown:
            print(f"gpucomm bench patterns: --only: unknown section(s) {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
    try:
        tool = find_tool("gpucomm-bench-patterns")
    except FileNotFoundError as e:
        print(f"gpucomm bench patterns: {e}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="gpucomm-bench-patterns-") as tmp:
        out = Path(tmp) / "patterns.json"
        cmd = [sys.executable, "-m", "gpucomm", "run", "-n", "1", "--gpus", args.gpu, "--", str(tool), "--json", str(out)]
        if args.quick:
            cmd.append("--quick")
        if args.only:
            cmd += ["--only", args.only]
        env = {**os.environ, "GPUCOMM_DEVICE": "gpu"}
        rc = subprocess.call(cmd, env=env)  # the tool prints its progress and summary
        if rc != 0 or not out.exists():
            print(f"gpucomm bench patterns: gpucomm-bench-patterns failed (exit code {rc})", file=sys.stderr)
            return rc or 1
        res = json.loads(out.read_text())
    if args.json:
        # `markdown` is what scripts/record_results.py copies into bench/RESULTS.md.
        res["markdown"] = "```text\n" + "\n".join(res.get("summary", [])) + "\n```"
        Path(args.json).write_text(json.dumps(res, indent=1))
        print(f"wrote {args.json}")
    return 0
