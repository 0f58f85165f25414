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

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "support"))
import compile_report  # noqa: E402

LEVELS = ("Thread", "Warp", "Block")

if __name__ == "__main__":
    sys.exit(compile_report.main(__doc__.splitlines()[0], HERE / "minimal_kernel.cu", "minimal_send_irecv_wait",
                                 [(level.lower(), [f"-DGPUCOMM_TEST_LEVEL={level}"]) for level in LEVELS]))
