#!/usr/bin/env python3
"""What the in-kernel collectives cost a caller's build: compiles minimal_kernel.cu for sm_90 to a
cubin once per variant (one barrier, or one f32 allreduce, at warp, block and grid level; a block's
session with both; six call sites in one kernel) and reports each compile's wall time and the
kernel's registers and static shared memory against the 60 s target for the 2-core CI machine
(docs/COLLECTIVES.md, "Compile time and registers"). A report: it fails only when a compile fails,
or with --limit when a compile takes longer than that.

usage: report_compile.py [--quick] [--nvcc NVCC] [--include DIR] [--limit SECONDS] [--json FILE]
--quick: only the block-level barrier, the block-level allreduce and the session (what CTest runs).
Prints 'SKIPPED: <reason>' and exits 0 when nvcc or cuobjdump is not available.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "support"))
import compile_report  # noqa: E402

LEVELS = {"warp": "gpucomm::coop::Warp", "block": "gpucomm::coop::Block", "grid": "gpucomm::coll::Grid"}
VARIANTS = ([(f"barrier-{name}", ["-DGPUCOMM_TEST_CALL=1", f"-DGPUCOMM_TEST_LEVEL={t}"]) for name, t in LEVELS.items()]
            + [(f"allreduce-{name}", ["-DGPUCOMM_TEST_CALL=2", f"-DGPUCOMM_TEST_LEVEL={t}"])
               for name, t in LEVELS.items()]
            + [("session-block (barrier + allreduce)", ["-DGPUCOMM_TEST_CALL=3"]),
               ("six call sites (both ops, 3 levels)", ["-DGPUCOMM_TEST_CALL=4"])])

QUICK = ("barrier-block", "allreduce-block", "session-block (barrier + allreduce)")

if __name__ == "__main__":
    if "--quick" in sys.argv:
        sys.argv.remove("--quick")
        VARIANTS = [v for v in VARIANTS if v[0] in QUICK]
    sys.exit(compile_report.main(__doc__.splitlines()[0], HERE / "minimal_kernel.cu", "minimal_collective", VARIANTS))
