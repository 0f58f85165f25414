#!/usr/bin/env python3
"""What device messaging costs a caller's build, per cooperation level: compiles minimal_kernel.cu
(a kernel that calls irecv, send and wait) for sm_90 to a cubin, once per level, and reports the
wall time of the compile and the kernel's registers and static shared memory (cuobjdump -res-usage),
and each compile time against the 60 s target for the 2-core CI machine (docs/MESSAGING.md,
"Compile time and registers"). A report: it fails only when a compile fails, or with --limit when a
compile takes longer than that.

usage: report_compile.py [--nvcc NVCC] [--include DIR] [--limit SECONDS] [--json FILE]
Prints 'SKIPPED: <reason>' and exits 0 when nvcc or cuobjdump is not available.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "tests" / "collectives" / "sass"))
from check_sass_fences import find_tool  # noqa: E402  (the same tool lookup as the SASS check)

LEVELS = ("Thread", "Warp", "Block")


def resources(cuobjdump: str, cubin: Path) -> tuple[int, int]:
    """(registers, static shared bytes) of the minimal kernel."""
    out = subprocess.run([cuobjdump, "-res-usage", str(cubin)], check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if "minimal_send_irecv_wait" in line and i + 1 < len(lines):
            reg = re.search(r"REG:(\d+)", lines[i + 1])
            shared = re.search(r"SHARED:(\d+)", lines[i + 1])
            if reg and shared:
                return int(reg.group(1)), int(shared.group(1))
    raise RuntimeError("no resource line for minimal_send_irecv_wait in:\n" + out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvcc", default=None)
    ap.add_argument("--include", default=str(ROOT / "include"))
    ap.add_argument("--limit", type=float, default=None, help="fail when a compile takes longer (seconds)")
    ap.add_argument("--json", default=None, help="also write the rows as JSON")
    a = ap.parse_args()
    nvcc, cuobjdump = find_tool("nvcc", a.nvcc), find_tool("cuobjdump")
    if not nvcc:
        print("SKIPPED: nvcc not found (install the CUDA toolkit)")
        return 0
    if not cuobjdump:
        print("SKIPPED: cuobjdump not found (scripts/setup.sh installs nvidia-cuda-cuobjdump from PyPI)")
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for level in LEVELS:
            cubin = Path(tmp) / f"{level}.cubin"
            t0 = time.monotonic()
            subprocess.run([nvcc, "-std=c++20", "-O3", "--expt-relaxed-constexpr", "-arch=sm_90", "-cubin",
                            f"-DGPUCOMM_TEST_LEVEL={level}", "-I", a.include, "-o", str(cubin),
                            str(HERE / "minimal_kernel.cu")], check=True)
            seconds = time.monotonic() - t0
            regs, shared = resources(cuobjdump, cubin)
            rows.append({"level": level.lower(), "compile_s": round(seconds, 2), "registers": regs,
                         "static_shared_bytes": shared})
    target = 60.0
    print("level    compile (s)  registers  static shared (B)  target (60 s)")
    for r in rows:
        verdict = "met" if r["compile_s"] <= target else "missed"
        print(f"{r['level']:<8} {r['compile_s']:>11.1f}  {r['registers']:>9}  {r['static_shared_bytes']:>17}  {verdict}")
    if a.json:
        Path(a.json).write_text(json.dumps({"target_s": target, "rows": rows}, indent=1) + "\n")
    slow = [r for r in rows if a.limit is not None and r["compile_s"] > a.limit]
    for r in slow:
        print(f"FAILED: the {r['level']}-level kernel took {r['compile_s']} s to compile, over the {a.limit} s limit")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
