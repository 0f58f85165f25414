#!/usr/bin/env python3
"""Counts fences and read-modify-writes in the SASS of an 8-byte endpoint send (docs/MESSAGING.md,
"Endpoints"): the send path to a GPU peer has no fence of any scope (no MEMBAR: the record's words
carry their stamps) and one read-modify-write (the ticket's fetch-add; its generic address also
compiles a shared-memory variant, ATOMS, on the branch that a global address never takes).

Compiles ep_send_kernels.cu to a cubin for sm_90 and counts each kernel's own code (up to its first
out-of-line call target: the failure report, which fences and traps, is not on the path).
Fails when a count differs from the above. Prints 'SKIPPED: <reason>' and exits 0 without nvcc or
cuobjdump (the collectives' SASS check finds them the same way).

usage: check_ep_send_sass.py [--nvcc NVCC] [--include DIR] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "tests" / "collectives" / "sass"))
from check_sass_fences import INSN, cuda_tools  # noqa: E402

KERNELS = ("ep_send_thread", "ep_send_warp")
FENCE = re.compile(r"\bMEMBAR\b")
RMW = re.compile(r"^(?:@!?P\w+\s+)?(?:ATOM|ATOMG|RED|REDG)\.")  # global (or generic) atomics; not ATOMS


def own_code(sass: str) -> dict[str, list[str]]:
    """kernel -> the instructions of its own code (before the first CALL target)."""
    out: dict[str, list[tuple[int, str]]] = {}
    cur = None
    for line in sass.splitlines():
        if "Function :" in line:
            name = line.split("Function :", 1)[1].strip()
            cur = next((k for k in KERNELS if k in name), None)
            if cur:
                out[cur] = []
            continue
        m = INSN.match(line)
        if cur and m:
            out[cur].append((int(m.group(1), 16), m.group(2)))
    own = {}
    for k, insns in out.items():
        targets = [int(t, 16) for _, i in insns for t in re.findall(r"CALL\.REL\S*\s+(0x[0-9a-f]+)", i)]
        end = min(targets) if targets else 1 << 62
        own[k] = [i for a, i in insns if a < end]
    return own


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
    work = a.keep or tempfile.mkdtemp(prefix="gpucomm-sass-")
    os.makedirs(work, exist_ok=True)
    cubin = os.path.join(work, "ep_send_kernels.cubin")
    subprocess.run([nvcc, "-std=c++20", "-O3", "-arch=sm_90", "-cubin", "-I", a.include, "-o", cubin,
                    str(HERE / "ep_send_kernels.cu")], check=True)
    sass = subprocess.run([cuobjdump, "-sass", cubin], check=True, capture_output=True, text=True).stdout
    if a.keep:
        Path(work, "ep_send_kernels.sass").write_text(sass)
    own = own_code(sass)
    bad = []
    print(f"{'kernel':16} {'own insns':>9} {'fences':>6} {'RMWs':>5}")
    for k in KERNELS:
        if not own.get(k):
            bad.append(f"{k}: not found in the SASS")
            continue
        fences = [i for i in own[k] if FENCE.search(i)]
        rmws = [i for i in own[k] if RMW.search(i)]
        print(f"{k:16} {len(own[k]):9} {len(fences):6} {len(rmws):5}")
        if fences:
            bad.append(f"{k}: {len(fences)} fence(s) on the send path: {fences}")
        if len(rmws) != 1:
            bad.append(f"{k}: {len(rmws)} read-modify-writes on the send path (want 1, the ticket): {rmws}")
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
