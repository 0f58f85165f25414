"""Runs a ``gpucomm run`` job that must end failed, and checks how it failed.

    expect_failed_job.py --np N [--first RANK] [--within SECONDS] -- gpucomm run ... -- PROGRAM ...

For tests where one PE fails on purpose (a kernel that traps on a mismatch or a timeout) and the job
must end because of it. Passes (exit 0) when:

- the job's exit status is not 0 (the launcher saw the job fail);
- every PE printed its ``PE OK`` line (its own checks of what it observed passed) and no line says
  ``CHECK failed``;
- ``gpucomm run`` named the PE that failed first (RANK when given);
- the first line of the output about the failure is a PE's "aborting the job" (a PE reports its own
  failure before the others hear of it), and the PE named first printed one (when two PEs fail at
  once, either may be named);
- the job ended within SECONDS (default 60) of its start.

With ``--survivors-may-stall``, a PE other than the one named failing first may instead end stopped by
the launcher after its grace (no ``PE OK`` line), once the launcher said it would stop the rest: for
PEs time-sharing one GPU, where a kernel beside one that faulted (the failing PE's trap) may stop
being scheduled, so that neither the job's failure nor its own timeout can end it (seen on H200
machines; docs/COLLECTIVES.md, "Errors").

Output lines need ``--tag-output`` (``[rank] ``). A job whose output says ``[  SKIPPED ]`` passes
through (CTest's skip expression sees it).
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time

FAILURE_WORDS = re.compile(r"aborting the job|the job failed|failed elsewhere|failed first")


def check(lines: list[str], rc: int, np: int, first: int | None, elapsed: float, within: float,
          survivors_may_stall: bool = False) -> list[str]:
    """The problems of a finished job (empty: it failed as it should)."""
    problems = []
    if rc == 0:
        problems.append("the job ended with status 0; it should have failed")
    named = next((int(m.group(1)) for line in lines if (m := re.search(r"gpucomm run: rank (\d+) ", line))), None)
    stopping = any(re.search(r"gpucomm run: .* get [0-9.]+ s to exit before they are stopped", line) for line in lines)
    for r in range(np):
        if any(re.match(rf"\[{r}\] .*PE OK", line) for line in lines):
            continue
        if survivors_may_stall and named is not None and r != named and stopping:
            continue  # stopped by the launcher after its grace: allowed for this job
        problems.append(f"rank {r} printed no 'PE OK' line")
    problems += [f"a check failed: {line}" for line in lines if "CHECK failed" in line]
    if named is None:
        problems.append("gpucomm run named no PE as failing first")
    elif first is not None and named != first:
        problems.append(f"gpucomm run named rank {named} as failing first, expected rank {first}")
    if named is not None:
        about = [line for line in lines if re.match(r"\[\d+\] ", line) and FAILURE_WORDS.search(line)]
        if not about or "aborting the job" not in about[0]:
            problems.append(f"the first line about the failure is no PE's 'aborting the job': "
                            f"{about[0] if about else '(none)'}")
        if not any(line.startswith(f"[{named}] ") and "aborting the job" in line for line in about):
            problems.append(f"rank {named}, named as failing first, printed no 'aborting the job' line")
    if elapsed > within:
        problems.append(f"the job took {elapsed:.1f} s to end, more than {within:g} s")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--np", type=int, required=True, help="PEs of the job")
    p.add_argument("--first", type=int, default=None, help="the rank that must be named as failing first")
    p.add_argument("--within", type=float, default=60.0, help="seconds the job may take")
    p.add_argument("--survivors-may-stall", action="store_true",
                   help="PEs other than the one failing first may end stopped by the launcher (see above)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- the launcher's command line")
    a = p.parse_args(argv)
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        p.error("no command after --")
    start = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    elapsed = time.monotonic() - start
    sys.stdout.write(r.stdout)
    if "[  SKIPPED ]" in r.stdout:
        return 0
    problems = check(r.stdout.splitlines(), r.returncode, a.np, a.first, elapsed, a.within, a.survivors_may_stall)
    for what in problems:
        print(f"expect_failed_job: {what}")
    print(f"expect_failed_job: {'passed' if not problems else 'FAILED'} (status {r.returncode}, {elapsed:.1f} s)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
