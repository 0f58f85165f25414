"""Runs a job in which one PE kills itself and checks that every other PE failed by itself, fast,
with a peer failure that names the dead PE.

usage: check_peer_failure.py NP VICTIM MAX_SECONDS PROGRAM [ARGS...]
"""
from __future__ import annotations

import subprocess
import sys
import time


def main() -> int:
    np, victim, max_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    cmd = [sys.executable, "-m", "gpucomm", "run", "-n", str(np), "--tag-output", "--kill-grace", "60", "--",
           *sys.argv[4:]]
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    out = r.stdout + r.stderr
    print(out)
    if "  SKIPPED " in out:
        return 0
    problems = []
    if r.returncode == 0:
        problems.append("the job succeeded although a PE was killed")
    if elapsed > max_s:
        problems.append(f"the survivors took {elapsed:.1f} s (limit {max_s} s)")
    for rank in range(np):
        if rank == victim:
            continue
        lines = [l for l in out.splitlines() if l.startswith(f"[{rank}] PE EXPECTED FAILURE")]
        if not lines:
            problems.append(f"rank {rank} did not report the failure")
        elif "[peer failure]" not in lines[0] or not any(w in lines[0] for w in (f"PE {victim}", f"rank {victim}")):
            problems.append(f"rank {rank}'s report does not name PE {victim} as a peer failure: {lines[0]}")
        if f"[{rank}] PE OK" not in out:
            problems.append(f"rank {rank} did not finish cleanly after the failure")
    for p in problems:
        print("FAILED:", p)
    print(f"survivors done after {elapsed:.1f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
