#!/usr/bin/env python3
"""Counts the system-scope fences in the SASS of the collectives' LL entry points.

Compiles fence_kernels.cu to a cubin for sm_90 (nvcc), disassembles it (cuobjdump, with nvdisasm
beside it) and counts, per kernel, the MEMBAR.*.SYS instructions of the kernel's own code (what the
call inlines at its call site: the straight path and its inlined failure paths; out-of-line
functions such as the dispatch and the failure report are after the first call target and not
counted), and those inside the kernel's loops (a backward branch's range: the peer loops and the
polls). A release store at system scope compiles to MEMBAR.SYS + store, so it is counted too.
Fails when a count exceeds its documented limit (docs/COLLECTIVES.md, "Fences in SASS").

usage: check_sass_fences.py [--nvcc NVCC] [--include DIR] [--keep DIR]
Prints 'SKIPPED: <reason>' and exits 0 when nvcc or cuobjdump is not available.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

# kernel: (limit on the kernel's own MEMBAR.*.SYS, limit inside its loops). The barrier: the
# lane's release fence (fence.acq_rel.sys, teams of two or more members) and the one-member
# short-cut's quiet fence, on exclusive paths, so one per call; the LL allreduce: none (the data
# words carry the epoch). The proxy quiet and the failure reports are out of line; no fence in a
# peer loop or a poll. A session's barrier carries one more exclusive path: its own lane barrier
# beside the per-call barrier it falls back to (a call the lane does not serve), still one fence
# per call.
LIMITS = {
    "barrier_block": (2, 0),
    "barrier_warp": (2, 0),
    "allreduce_ll_block": (0, 0),
    "allreduce_ll_warp": (0, 0),
    "session_barrier_block": (3, 0),
    "session_barrier_warp": (3, 0),
    "session_allreduce_ll_block": (0, 0),
    "session_allreduce_ll_warp": (0, 0),
}

INSN = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def find_tool(name: str, explicit: str | None = None) -> str | None:
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    cands = [f"/usr/local/cuda/bin/{name}"]
    sites = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], site.getusersitepackages()}
    sites.update(site.getsitepackages())
    for site_dir in sorted(sites):
        cands += glob.glob(os.path.join(site_dir, "nvidia", "*", "bin", name))
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    return None


def cuda_tools(nvcc_arg: str | None) -> tuple[str, str] | None:
    """(nvcc, cuobjdump), or None after printing 'SKIPPED: <reason>' when one is missing."""
    nvcc, cuobjdump = find_tool("nvcc", nvcc_arg), find_tool("cuobjdump")
    if not nvcc:
        print("SKIPPED: nvcc not found (install the CUDA toolkit)")
        return None
    if not cuobjdump:
        print("SKIPPED: cuobjdump not found (scripts/setup.sh installs nvidia-cuda-cuobjdump from PyPI)")
        return None
    return nvcc, cuobjdump


def functions(sass: str) -> dict[str, list[tuple[int, str]]]:
    """kernel name (demangled tail) -> [(address, instruction)]."""
    out: dict[str, list[tuple[int, str]]] = {}
    cur = None
    for line in sass.splitlines():
        if "Function :" in line:
            mangled = line.split("Function :", 1)[1].strip()
            cur = next((k for k in LIMITS if re.search(rf"\d{k}E", mangled)), None)
            if cur:
                out[cur] = []
            continue
        m = INSN.match(line)
        if cur and m:
            out[cur].append((int(m.group(1), 16), m.group(2)))
    return out


def count(insns: list[tuple[int, str]]) -> tuple[int, int, int]:
    """(fences in the kernel's own code, fences inside its loops, instructions of its own code)."""
    targets = [int(t, 16) for _, i in insns for t in re.findall(r"CALL\.REL\S*\s+(0x[0-9a-f]+)", i)]
    end = min(targets) if targets else 1 << 62
    own = [(a, i) for a, i in insns if a < end]
    fence = [a for a, i in own if re.search(r"\bMEMBAR\.\w+\.SYS\b|\bMEMBAR\.SYS\b", i)]
    loops = []
    for k, (a, i) in enumerate(own):
        m = re.search(r"\bBRA\b(?:\.\w+)*\s+(?:\w+,\s*)?(0x[0-9a-f]+)", i)
        # The way back from a divergent warp's stub (BRA.DIV ... WARPSYNC.COLLECTIVE, ENDCOLLECTIVE,
        # BRA back) re-enters straight code: not a loop.
        stub = any("COLLECTIVE" in x for _, x in own[max(0, k - 4):k])
        if m and int(m.group(1), 16) <= a and not stub:
            loops.append((int(m.group(1), 16), a))
    in_loops = sum(1 for f in fence if any(lo <= f <= hi for lo, hi in loops))
    return len(fence), in_loops, len(own)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nvcc", default=None)
    ap.add_argument("--include", default=str(ROOT / "include"))
    ap.add_argument("--keep", default=None, help="keep the cubin and the SASS in this folder")
    a = ap.parse_args()
    tools = cuda_tools(a.nvcc)
    if not tools:
        return 0
    nvcc, cuobjdump = tools
    env = dict(os.environ)
    nvdisasm = find_tool("nvdisasm")
    if nvdisasm:
        env["PATH"] = os.path.dirname(nvdisasm) + os.pathsep + env.get("PATH", "")
    work = a.keep or tempfile.mkdtemp(prefix="gpucomm-sass-")
    os.makedirs(work, exist_ok=True)
    cubin = os.path.join(work, "fence_kernels.cubin")
    subprocess.run([nvcc, "-std=c++20", "-O3", "--expt-relaxed-constexpr", "-arch=sm_90", "-cubin", "-I", a.include,
                    "-o", cubin, str(HERE / "fence_kernels.cu")], check=True)
    sass = subprocess.run([cuobjdump, "-sass", cubin], check=True, capture_output=True, text=True, env=env).stdout
    if a.keep:
        Path(work, "fence_kernels.sass").write_text(sass)
    fns = functions(sass)
    bad = []
    print(f"{'kernel':28} {'own insns':>9} {'MEMBAR.SYS':>10} {'limit':>5} {'in loops':>8} {'limit':>5}")
    for k, (lim_all, lim_loop) in LIMITS.items():
        if k not in fns or not fns[k]:
            bad.append(f"{k}: not found in the SASS")
            continue
        n, in_loops, own = count(fns[k])
        print(f"{k:28} {own:9} {n:10} {lim_all:5} {in_loops:8} {lim_loop:5}")
        if n > lim_all:
            bad.append(f"{k}: {n} system-scope fences in its own code, the limit is {lim_all}")
        if in_loops > lim_loop:
            bad.append(f"{k}: {in_loops} system-scope fences inside loops, the limit is {lim_loop}")
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
