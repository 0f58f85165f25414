"""What a device API costs a caller's build: compiles a small kernel file for sm_90 to a cubin once
per variant (a set of -D flags), and reports each compile's wall time and the kernel's registers
and static shared memory (cuobjdump -res-usage) against the 60 s target for the 2-core CI machine.
A report: it fails only when a compile fails, or with a limit when a compile takes longer.
Used by tests/messaging/compile and tests/collectives/compile.
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "collectives" / "sass"))
from check_sass_fences import cuda_tools  # noqa: E402  (the same tool lookup as the SASS check)

TARGET_S = 60.0


def resources(cuobjdump: str, cubin: Path, kernel: str) -> tuple[int, int]:
    """(registers, static shared bytes) of `kernel` in `cubin`."""
    out = subprocess.run([cuobjdump, "-res-usage", str(cubin)], check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if kernel in line and i + 1 < len(lines):
            reg = re.search(r"REG:(\d+)", lines[i + 1])
            shared = re.search(r"SHARED:(\d+)", lines[i + 1])
            if reg and shared:
                return int(reg.group(1)), int(shared.group(1))
    raise RuntimeError(f"no resource line for {kernel} in:\n" + out)


def main(description: str, source: Path, kernel: str, variants: list[tuple[str, list[str]]]) -> int:
    """Parses the command line (--nvcc, --include, --limit, --json), compiles `source` once per
    variant (name, extra nvcc flags) and prints the table; the exit status of the report."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--nvcc", default=None)
    ap.add_argument("--include", default=str(ROOT / "include"))
    ap.add_argument("--limit", type=float, default=None, help="fail when a compile takes longer (seconds)")
    ap.add_argument("--json", default=None, help="also write the rows as JSON")
    a = ap.parse_args()
    tools = cuda_tools(a.nvcc)
    if not tools:
        return 0
    nvcc, cuobjdump = tools
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in variants:
            cubin = Path(tmp) / f"{name}.cubin"
            t0 = time.monotonic()
            subprocess.run([nvcc, "-std=c++20", "-O3", "--expt-relaxed-constexpr", "-arch=sm_90", "-cubin", *flags,
                            "-I", a.include, "-o", str(cubin), str(source)], check=True)
            seconds = time.monotonic() - t0
            regs, shared = resources(cuobjdump, cubin, kernel)
            rows.append({"variant": name, "compile_s": round(seconds, 2), "registers": regs,
                         "static_shared_bytes": shared})
            print(f"compiled {name} in {seconds:.1f} s", flush=True)
    width = max(len(r["variant"]) for r in rows)
    print(f"{'variant':<{width}}  compile (s)  registers  static shared (B)  target ({TARGET_S:.0f} s)")
    for r in rows:
        verdict = "met" if r["compile_s"] <= TARGET_S else "missed"
        print(f"{r['variant']:<{width}}  {r['compile_s']:>11.1f}  {r['registers']:>9}  {r['static_shared_bytes']:>17}"
              f"  {verdict}")
    if a.json:
        Path(a.json).write_text(json.dumps({"target_s": TARGET_S, "rows": rows}, indent=1) + "\n")
    slow = [r for r in rows if a.limit is not None and r["compile_s"] > a.limit]
    for r in slow:
        print(f"FAILED: {r['variant']} took {r['compile_s']} s to compile, over the {a.limit} s limit")
    return 1 if slow else 0
